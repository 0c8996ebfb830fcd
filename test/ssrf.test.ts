// The SSRF guard: one test per special-purpose range (IPv4 and IPv6), embedded IPv4 forms, messages that name the
// rule and not the address, every redirect hop checked like the first, body deadlines, and failed probes that are
// rate-limited per key and leave no row unless asked to.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IPV4_SPECIAL, IPV6_SPECIAL, refusalFor } from '../src/files/external/address-policy.js';
import { directUrl } from '../src/files/external/direct-url.js';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

/** An address inside each range (not its first address, so the prefix length is what matches). */
const INSIDE: Record<string, string> = {
  '0.0.0.0/8': '0.1.2.3',
  '10.0.0.0/8': '10.20.30.40',
  '100.64.0.0/10': '100.127.255.1',
  '127.0.0.0/8': '127.8.9.10',
  '169.254.0.0/16': '169.254.169.254',
  '172.16.0.0/12': '172.31.0.1',
  '192.0.0.0/24': '192.0.0.170',
  '192.0.2.0/24': '192.0.2.55',
  '192.88.99.0/24': '192.88.99.1',
  '192.168.0.0/16': '192.168.1.1',
  '198.18.0.0/15': '198.19.255.255',
  '198.51.100.0/24': '198.51.100.7',
  '203.0.113.0/24': '203.0.113.9',
  '224.0.0.0/4': '239.255.255.250',
  '255.255.255.255/32': '255.255.255.255',
  '240.0.0.0/4': '250.1.1.1',
  '::/128': '::',
  '::1/128': '::1',
  '::ffff:0:0/96': '::ffff:10.0.0.1',
  '::/96': '::a01:203',
  '64:ff9b::/96': '64:ff9b::8.8.8.8',
  '64:ff9b:1::/48': '64:ff9b:1:2::1',
  '100::/64': '100::beef',
  '2001:db8::/32': '2001:db8:1::1',
  '2001::/23': '2001:1ff::1',
  '2002::/16': '2002:c000:204::1',
  '3fff::/20': '3fff:fff::1',
  '5f00::/16': '5f00:1::1',
  'fc00::/7': 'fd12:3456::1',
  'fe80::/10': 'fe80::1',
  'fec0::/10': 'fec0::1',
  'ff00::/8': 'ff02::1',
};

describe('special-purpose address ranges', () => {
  for (const r of [...IPV4_SPECIAL, ...IPV6_SPECIAL]) {
    it(`refuses ${r.cidr} (${r.name})`, () => {
      const ip = INSIDE[r.cidr];
      expect(ip, `a sample address for ${r.cidr}`).toBeDefined();
      const why = refusalFor(ip!);
      expect(why).not.toBeNull();
      // the message names the rule (for IPv4-mapped addresses: the rule of the embedded IPv4 address)
      expect(why).toContain(r.cidr === '::ffff:0:0/96' ? '10.0.0.0/8' : r.cidr);
    });
  }

  it('judges embedded IPv4 addresses by their IPv4 rule, and refuses NAT64 and IPv4-compatible forms whatever they embed', () => {
    expect(refusalFor('::ffff:127.0.0.1')).toBe('an IPv4-mapped form of a loopback address (127.0.0.0/8)');
    expect(refusalFor('::ffff:7f00:1')).toContain('127.0.0.0/8');
    expect(refusalFor('::ffff:8.8.8.8')).toBeNull(); // a dual-stack socket's name for a public IPv4 peer
    expect(refusalFor('64:ff9b::10.0.0.1')).toContain('embedding a private-use address (10.0.0.0/8)');
    expect(refusalFor('64:ff9b::8.8.8.8')).toContain('NAT64');
    expect(refusalFor('::808:808')).toContain('IPv4-compatible'); // ::8.8.8.8 as a resolver or URL parser writes it
    expect(refusalFor('[::1]')).toContain('loopback');
    expect(refusalFor('fe80::1%eth0')).toContain('link-local');
  });

  it('lets ordinary global unicast addresses through, just outside the ranges', () => {
    for (const ip of [
      '8.8.8.8',
      '1.1.1.1',
      '9.255.255.255',
      '11.0.0.0',
      '100.63.255.255',
      '100.128.0.0',
      '172.15.255.255',
      '172.32.0.0',
      '192.167.255.255',
      '198.17.255.255',
      '198.20.0.0',
      '223.255.255.255',
      '2606:4700:4700::1111',
      '2a00:1450:4001::1',
      '2003::1',
      '2001:200::1',
    ]) {
      expect(refusalFor(ip), ip).toBeNull();
    }
  });

  it('refuses what is not an address, and ranges ipaddr.js knows beyond the table', () => {
    expect(refusalFor('not-an-ip')).toBe('not an IP address');
    expect(refusalFor('192.31.196.1')).toContain('special-purpose'); // AS112, known to ipaddr.js
  });
});

describe('redirects and deadlines (direct-url)', () => {
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const port = (server.address() as AddressInfo).port;
      if (req.url === '/to-credentials') {
        res.writeHead(302, { location: `http://user:secret@127.0.0.1:${port}/ok` });
        return res.end();
      }
      if (req.url === '/to-file') {
        res.writeHead(302, { location: 'file:///etc/passwd' });
        return res.end();
      }
      if (req.url === '/to-loopback-name') {
        res.writeHead(302, { location: `http://localhost:${port}/ok` });
        return res.end();
      }
      if (req.url === '/to-metadata') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
        return res.end();
      }
      if (req.url === '/drip') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.write('x');
        const t = setInterval(() => res.write('x'), 300); // never idle long, never done
        res.on('close', () => clearInterval(t));
        return;
      }
      if (req.url === '/stall') {
        res.writeHead(200);
        res.write('x');
        return;
      } // then nothing
      res.writeHead(200);
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  const fetchAll = async (url: string, opts: Partial<Parameters<typeof directUrl.fetch>[1]> = {}) => {
    const got = await directUrl.fetch(new URL(url), { allowPrivate: true, timeoutMs: 2000, maxRedirects: 5, ...opts });
    const chunks: Buffer[] = [];
    for await (const c of got.body) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString();
  };

  it('applies the first hop rules to every redirect: credentials and scheme', async () => {
    await expect(fetchAll(`${base}/to-credentials`)).rejects.toMatchObject({
      kind: 'forbidden',
      message: expect.stringContaining('credentials'),
    });
    await expect(fetchAll(`${base}/to-file`)).rejects.toMatchObject({
      kind: 'forbidden',
      message: expect.stringContaining('file:'),
    });
    expect(await fetchAll(`${base}/ok`)).toBe('ok');
  });

  it('applies the address rules to every redirect (a name resolving to loopback, a metadata address)', async () => {
    // the first hop is allowed to be private here only because the test server is on loopback: fetch it with
    // allowPrivate, then check the redirect targets with the guard on
    for (const path of ['/to-loopback-name', '/to-metadata']) {
      const location = await new Promise<string>((resolve) =>
        http.get(`${base}${path}`, (res) => {
          res.resume();
          resolve(res.headers.location!);
        }),
      );
      const err = await fetchAll(location, { allowPrivate: false }).catch((e) => e);
      expect(err.kind, path).toBe('forbidden');
      expect(err.message).not.toMatch(/127\.0\.0\.1|::1/); // the rule, not the address
    }
    const named = await fetchAll(`http://localhost:${new URL(base).port}/ok`, { allowPrivate: false }).catch((e) => e);
    expect(named.message).toBe('localhost resolves to a loopback address (127.0.0.0/8).');
  });

  it('ends a body that stalls (idle deadline) and one that drips forever (total deadline)', async () => {
    const t0 = Date.now();
    await expect(fetchAll(`${base}/stall`, { idleMs: 500 })).rejects.toMatchObject({
      kind: 'unreachable',
      message: expect.stringContaining('sent nothing'),
    });
    await expect(fetchAll(`${base}/drip`, { idleMs: 1000, deadlineMs: 1500 })).rejects.toMatchObject({
      kind: 'unreachable',
      message: expect.stringContaining('within 1.5 s'),
    });
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});

forEachDatabase((kind) => {
  let t: TestApp;
  let owner: { key: string; userId: number };
  let versionId: number;
  beforeAll(async () => {
    t = await startTestApp(kind, { externalUrlAllowPrivate: true, failedProbesPerMinute: 3 });
    owner = await t.user('prober');
    const c = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'c' } })).body.category.category_id;
    await t.rest('PUT', `/api/mc-dm-categories/${c}/`, { form: { allow_multi_file: 1, max_files_per_version: 50 } });
    versionId = (
      await t.rest('POST', '/api/mc-dm-downloads/', { key: owner.key, form: { category_id: c, title: 'd' } })
    ).body.download.current_version_id;
  });
  afterAll(() => t?.close());

  it('a refusal names the rule, never what an internal name resolves to (both faces)', async () => {
    const strict = await startTestApp(kind);
    try {
      const u = await strict.user('u');
      const c = (await strict.rest('POST', '/api/mc-dm-categories/', { form: { title: 'c' } })).body.category
        .category_id;
      const v = (
        await strict.rest('POST', '/api/mc-dm-downloads/', { key: u.key, form: { category_id: c, title: 'd' } })
      ).body.download.current_version_id;
      const r = await strict.rest('POST', '/api/mc-dm-files/', {
        key: u.key,
        form: { version_id: v, external_url: 'http://localhost:9/x.zip' },
      });
      expect(r.status).toBe(422);
      expect(r.body.errors[0].code).toBe('mc_dm_api_error.external_url_forbidden');
      expect(r.body.errors[0].message).toContain('localhost resolves to a loopback address (127.0.0.0/8)');
      expect(JSON.stringify(r.body)).not.toContain('127.0.0.1');
      const g = await strict.gql(
        `mutation { createFile(input: { versionId: ${v}, externalUrl: "http://[::ffff:a00:1]/x" }) { file { fileId } } }`,
        {},
        u.key,
      );
      expect(g.codes).toEqual(['mc_dm_api_error.external_url_forbidden']);
      expect(g.errors![0].message).toContain('private-use address (10.0.0.0/8)');
      expect(await strict.prisma.file.count()).toBe(0);
    } finally {
      await strict.close();
    }
  });

  it('failed probes keep no row unless asked (keep_failed / keepFailed), and are rate-limited per key with 429 + Retry-After', async () => {
    const dead = 'http://127.0.0.1:9/nothing.zip'; // the discard port: connection refused
    const r1 = await t.rest('POST', '/api/mc-dm-files/', {
      key: owner.key,
      form: { version_id: versionId, external_url: dead },
    });
    expect(r1.status).toBe(422);
    expect(r1.body.errors[0].code).toBe('mc_dm_api_error.external_url_unreachable');
    expect(await t.prisma.file.count({ where: { versionId } })).toBe(0);
    const g = await t.gql(
      `mutation($u: String!) { createFile(input: { versionId: ${versionId}, externalUrl: $u, keepFailed: true }) { file { fileId } } }`,
      { u: dead },
      owner.key,
    );
    expect(g.codes).toEqual(['mc_dm_api_error.external_url_unreachable']);
    expect(await t.prisma.file.findMany({ where: { versionId } })).toMatchObject([
      { validationStatus: 'failed', externalUrl: dead },
    ]);
    const r3 = await t.rest('POST', '/api/mc-dm-files/', {
      key: owner.key,
      form: { version_id: versionId, external_url: dead, keep_failed: 1 },
    });
    expect(r3.status).toBe(422);
    expect(await t.prisma.file.count({ where: { versionId } })).toBe(2);
    // the fourth within the minute is refused before any request is made
    const r4 = await t.rest('POST', '/api/mc-dm-files/', {
      key: owner.key,
      form: { version_id: versionId, external_url: dead, keep_failed: 1 },
    });
    expect(r4.status).toBe(429);
    expect(r4.body.errors[0]).toMatchObject({
      code: 'mc_dm_api_error.rate_limited',
      params: { retry_after: expect.any(Number) },
    });
    expect(Number(r4.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await t.prisma.file.count({ where: { versionId } })).toBe(2);
    const g4 = await t.gql(
      `mutation($u: String!) { createFile(input: { versionId: ${versionId}, externalUrl: $u }) { file { fileId } } }`,
      { u: dead },
      owner.key,
    );
    expect(g4.status).toBe(200); // executed: the code is in the error
    expect(g4.codes).toEqual(['mc_dm_api_error.rate_limited']);
    // link-only files make no request and are not limited; another key is not affected
    const link = await t.rest('POST', '/api/mc-dm-files/', {
      key: owner.key,
      form: { version_id: versionId, external_url: dead, link_only: 1 },
    });
    expect(link.status).toBe(200);
    const other = await t.rest('POST', '/api/mc-dm-files/', { form: { version_id: versionId, external_url: dead } });
    expect(other.status).toBe(422);
  });
});
