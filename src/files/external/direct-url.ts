// `direct-url`: fetches a plain http/https URL, with SSRF protection. Every hop (redirects included, at most
// maxRedirects) is resolved through a lookup that refuses loopback, private, link-local and reserved addresses
// unless allowed, and the connection goes to the address that was checked (no DNS rebinding window).
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import { ExternalUrlError, filenameFromUrl, type ExternalAdapter, type FetchOptions, type Fetched } from './index.js';

const blocked = new net.BlockList();
for (const [addr, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(addr, prefix, 'ipv4');
for (const [addr, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['2001:db8::', 32], ['64:ff9b::', 96], ['100::', 64],
] as const) blocked.addSubnet(addr, prefix, 'ipv6');

export function isPrivateAddress(ip: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return blocked.check(mapped[1]!, 'ipv4');
  return blocked.check(ip, net.isIPv6(ip) ? 'ipv6' : 'ipv4');
}

function safeLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 4);
      const list = addresses as dns.LookupAddress[];
      const bad = list.find((a) => isPrivateAddress(a.address));
      if (bad && !allowPrivate) {
        return callback(Object.assign(new Error(`${hostname} resolves to ${bad.address}, a private or reserved address.`), { code: 'EFORBIDDEN' }), '', 4);
      }
      if ((options as { all?: boolean }).all) return (callback as any)(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

function filenameFrom(res: http.IncomingMessage, url: URL): string {
  const cd = res.headers['content-disposition'] ?? '';
  const star = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(cd);
  const plain = /filename\s*=\s*"?([^";]+)"?/i.exec(cd);
  const name = star ? decodeURIComponent(star[1]!) : plain ? plain[1]! : '';
  return name.replace(/[\\/\0]/g, '_').trim() || filenameFromUrl(url);
}

function request(url: URL, opts: FetchOptions): Promise<http.IncomingMessage> {
  if (net.isIP(url.hostname.replace(/^\[|\]$/g, '')) && isPrivateAddress(url.hostname.replace(/^\[|\]$/g, '')) && !opts.allowPrivate) {
    return Promise.reject(new ExternalUrlError('forbidden', `${url.hostname} is a private or reserved address.`));
  }
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.get(url, { lookup: safeLookup(opts.allowPrivate), headers: { 'user-agent': 'downloads-catalogue/1 (+direct-url)' } });
    const timer = setTimeout(() => req.destroy(new ExternalUrlError('unreachable', `No answer from ${url.host} within ${opts.timeoutMs / 1000} s.`)), opts.timeoutMs);
    req.once('response', (res) => { clearTimeout(timer); resolve(res); });
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
    let url = start;
    for (let hop = 0; ; hop++) {
      const res = await request(url, opts);
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.resume();
        if (hop >= opts.maxRedirects) throw new ExternalUrlError('unreachable', `More than ${opts.maxRedirects} redirects.`);
        const next = new URL(res.headers.location, url);
        if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new ExternalUrlError('forbidden', `A redirect leads to ${next.protocol}, which is not http or https.`);
        url = next;
        continue;
      }
      if (status < 200 || status >= 300) {
        res.resume();
        throw new ExternalUrlError('unreachable', `${url.host} answered HTTP ${status}.`);
      }
      return { body: res, filename: filenameFrom(res, url), finalUrl: url.toString() };
    }
  },
};
