// `direct-url`: fetches a plain http/https URL, with SSRF protection. Every hop (the first and each redirect, at
// most maxRedirects) passes the same rules: http or https, no credentials, and an address outside every
// special-purpose range (address-policy.ts) unless allowed. The address is checked inside the socket's own lookup,
// so the connection goes to the address that was checked (no DNS rebinding window). Deadlines: timeoutMs to
// connect and receive each hop's headers, idleMs between body bytes, deadlineMs for the whole fetch.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import {
  ExternalUrlError,
  filenameFromUrl,
  parseExternalUrl,
  type ExternalAdapter,
  type FetchOptions,
  type Fetched,
} from './adapter.js';
import { refusalFor } from './address-policy.js';

/** Kept for callers that only need a yes/no. */
export const isPrivateAddress = (ip: string): boolean => refusalFor(ip) !== null;

/** A socket lookup that refuses special-purpose addresses (unless allowed): the connection goes where was checked. */
export function safeLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 4);
      const list = addresses as dns.LookupAddress[];
      if (!allowPrivate) {
        for (const a of list) {
          const why = refusalFor(a.address);
          // The rule, not the address: an internal name's address is nobody's business.
          if (why)
            return callback(Object.assign(new Error(`${hostname} resolves to ${why}.`), { code: 'EFORBIDDEN' }), '', 4);
        }
      }
      if ((options as { all?: boolean }).all)
        return (callback as (err: null, addresses: dns.LookupAddress[]) => void)(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

function filenameFrom(res: http.IncomingMessage, url: URL): string {
  const cd = res.headers['content-disposition'] ?? '';
  const star = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(cd);
  const plain = /filename\s*=\s*"?([^";]+)"?/i.exec(cd);
  let name = plain ? plain[1]! : '';
  if (star) {
    try {
      name = decodeURIComponent(star[1]!);
    } catch {
      /* a malformed encoding: keep the plain name */
    }
  }
  return name.replace(/[\\/\0]/g, '_').trim() || filenameFromUrl(url);
}

/** The first-hop rules, applied to every hop: scheme, credentials, and an address literal's range. */
export function checkHop(url: URL, allowPrivate: boolean, redirected: boolean): void {
  try {
    parseExternalUrl(url.toString());
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!allowPrivate && net.isIP(host)) {
      const why = refusalFor(host);
      if (why) throw new ExternalUrlError('forbidden', `${url.hostname} is ${why}.`);
    }
  } catch (err) {
    if (!(err instanceof ExternalUrlError) || !redirected) throw err;
    throw new ExternalUrlError('forbidden', `A redirect leads to a URL that cannot be used: ${err.message}`);
  }
}

function request(url: URL, opts: FetchOptions, track: (r: http.ClientRequest) => void): Promise<http.IncomingMessage> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.get(url, {
      lookup: safeLookup(opts.allowPrivate),
      headers: { 'user-agent': 'downloads-catalogue/1 (+direct-url)' },
    });
    track(req);
    const timer = setTimeout(
      () =>
        req.destroy(
          new ExternalUrlError('unreachable', `No answer from ${url.host} within ${opts.timeoutMs / 1000} s.`),
        ),
      opts.timeoutMs,
    );
    req.once('response', (res) => {
      clearTimeout(timer);
      resolve(res);
    });
    req.once('error', (err: Error & { code?: string }) => {
      clearTimeout(timer);
      if (err instanceof ExternalUrlError) return reject(err);
      if (err.code === 'EFORBIDDEN') return reject(new ExternalUrlError('forbidden', err.message));
      reject(new ExternalUrlError('unreachable', `${url.host} could not be reached: ${err.message}`));
    });
  });
}

export const directUrl: ExternalAdapter = {
  id: 'direct-url',
  accepts: (url) => url.protocol === 'http:' || url.protocol === 'https:',
  async fetch(start: URL, opts: FetchOptions): Promise<Fetched> {
    let current: http.ClientRequest | http.IncomingMessage | null = null;
    let expired: ExternalUrlError | null = null;
    const deadline = opts.deadlineMs
      ? setTimeout(() => {
          expired = new ExternalUrlError(
            'unreachable',
            `The URL did not deliver its content within ${opts.deadlineMs! / 1000} s.`,
          );
          current?.destroy(expired);
        }, opts.deadlineMs)
      : null;
    const done = () => {
      if (deadline) clearTimeout(deadline);
    };
    try {
      let url = start;
      for (let hop = 0; ; hop++) {
        checkHop(url, opts.allowPrivate, hop > 0);
        const res = await request(url, opts, (r) => {
          current = r;
        });
        if (expired) {
          res.destroy();
          throw expired;
        }
        current = res;
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400 && res.headers.location) {
          res.resume();
          if (hop >= opts.maxRedirects)
            throw new ExternalUrlError('unreachable', `More than ${opts.maxRedirects} redirects.`);
          let next: URL;
          try {
            next = new URL(res.headers.location, url);
          } catch {
            throw new ExternalUrlError('unreachable', `${url.host} redirected to a malformed location.`);
          }
          url = next;
          continue;
        }
        if (status < 200 || status >= 300) {
          res.resume();
          throw new ExternalUrlError('unreachable', `${url.host} answered HTTP ${status}.`);
        }
        const idleMs = opts.idleMs ?? opts.timeoutMs;
        const host = url.host;
        res.setTimeout(idleMs, () =>
          res.destroy(new ExternalUrlError('unreachable', `${host} sent nothing for ${idleMs / 1000} s.`)),
        );
        res.once('close', done);
        return { body: res, filename: filenameFrom(res, url), finalUrl: url.toString() };
      }
    } catch (err) {
      done();
      throw err;
    }
  },
};
