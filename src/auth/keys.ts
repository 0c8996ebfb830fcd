// API keys: random, shown once, stored as a SHA-256 hash (the keys carry 256 bits of entropy,
// so a fast hash is enough and lets a lookup use the unique index).
import crypto from 'node:crypto';

export function generateKey(): string {
  return `dm_${crypto.randomBytes(32).toString('base64url')}`;
}

export function hashKey(key: string): string {
  return crypto.createHash('sha256').update(key).digest('hex');
}
