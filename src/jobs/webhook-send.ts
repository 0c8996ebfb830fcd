// One delivery attempt: a signed POST (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature, made by
// the `standardwebhooks` package) to a webhook's URL, under the SSRF rules of external URLs (the socket's lookup
// refuses special-purpose addresses unless EXTERNAL_URL_ALLOW_PRIVATE=1, so DNS cannot send it elsewhere later).
// Redirects are not followed (a 3xx is a failed attempt); the whole attempt is cut after `timeoutMs`; at most
// LIMITS.webhookMaxResponseBytes of the answer are read, and a longer answer is cut and counted failed.
import http from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';
import { LIMITS } from '../config.js';
import { safeLookup } from '../files/external/index.js';

const { Webhook } = createRequire(import.meta.url)('standardwebhooks') as typeof import('standardwebhooks');

export interface Attempt {
  /** The receiver's HTTP status; null when no answer came. */
  status: number | null;
  durationMs: number;
  /** Why the attempt failed; null when it succeeded (a 2xx, its answer read within the limit). */
  error: string | null;
}

export interface SignedMessage {
  /** The webhook-id: the same on every attempt of one event to one webhook. */
  id: string;
  timestamp: Date;
  body: string;
}

/** The headers of a signed message. */
export function signedHeaders(secret: string, m: SignedMessage): Record<string, string> {
  return {
    'webhook-id': m.id,
    'webhook-timestamp': String(Math.floor(m.timestamp.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(m.id, m.timestamp, m.body),
  };
}

export function send(
  url: string,
  secret: string,
  m: SignedMessage,
  opts: { timeoutMs: number; allowPrivate: boolean; maxResponseBytes?: number },
): Promise<Attempt> {
  const started = performance.now();
  const limit = opts.maxResponseBytes ?? LIMITS.webhookMaxResponseBytes;
  return new Promise<Attempt>((resolve) => {
    let done = false;
    let status: number | null = null;
    const finish = (error: string | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve({ status, durationMs: Math.round(performance.now() - started), error });
    };
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      resolve({ status: null, durationMs: 0, error: 'the URL cannot be parsed' });
      return;
    }
    const client = target.protocol === 'https:' ? https : http;
    const req = client.request(target, {
      method: 'POST',
      lookup: safeLookup(opts.allowPrivate),
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(m.body),
        'user-agent': 'downloads-catalogue-webhooks/1',
        ...signedHeaders(secret, m),
      },
    });
    const timer = setTimeout(() => finish(`no complete answer within ${opts.timeoutMs / 1000} s`), opts.timeoutMs);
    req.on('error', (err: Error & { code?: string }) =>
      finish(err.code === 'EFORBIDDEN' ? err.message : `the receiver could not be reached: ${err.message}`),
    );
    req.on('response', (res) => {
      status = res.statusCode ?? null;
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > limit) finish(`the answer is larger than ${limit} bytes`);
      });
      res.on('error', (err) => finish(`the answer broke off: ${err.message}`));
      res.on('end', () => {
        if (status !== null && status >= 200 && status < 300) return finish(null);
        if (status !== null && status >= 300 && status < 400) return finish(`redirects are not followed (${status})`);
        finish(`the receiver answered ${status}`);
      });
    });
    req.end(m.body);
  });
}
