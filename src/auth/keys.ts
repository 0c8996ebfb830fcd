// API keys: random, shown once, stored as a SHA-256 hash (the keys carry 256 bits of entropy,
// so a fast hash is enough and lets a lookup use the unique index).
import crypto from 'node:crypto';

export function generateKey(): string {
  return `dm_${crypto.randomBytes(32).toString('base64url')}`;
}

const recent = new Map<string, string>();

/**
 * The key's SHA-256, remembered for the keys seen lately: every request hashes its key (twice: the visitor, the rate
 * limit), and a hash each was a noticeable part of a cheap request's CPU. The keys are in this process's memory
 * anyway while their requests run; the map is bounded and dropped whole when full.
 */
export function hashKey(key: string): string {
  let hash = recent.get(key);
  if (hash === undefined) {
    hash = crypto.createHash('sha256').update(key).digest('hex');
    if (recent.size >= 1024) recent.clear();
    recent.set(key, hash);
  }
  return hash;
}
