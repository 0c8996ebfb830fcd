// Contract §9, "Database outage": while the database cannot be reached, requests answer 503 service_unavailable with
// Retry-After on both faces, never 500; /readyz answers 503 and names no host, port or credential; the service
// recovers by itself when the database returns. The outage is made by a TCP proxy between the service and the
// PostgreSQL server, taken down (every connection through it closed, new ones refused) and brought back.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPostgres, startTestApp, type TestApp } from './helpers/app.js';
import { TcpProxy } from './helpers/proxy.js';

describe.skipIf(!process.env.TEST_DATABASE_URL)('PostgreSQL server unreachable, then back', () => {
  let t: TestApp;
  let fresh: Awaited<ReturnType<typeof freshPostgres>>;
  let proxy: TcpProxy;
  let user: { key: string };
  let downloadId: number;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-outage-'));
  const server = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://127.0.0.1:5432/test');

  beforeAll(async () => {
    fresh = await freshPostgres();
    proxy = new TcpProxy(server.hostname, Number(server.port || 5432));
    const url = new URL(fresh.url);
    url.port = String(await proxy.start());
    t = await startTestApp('postgres', { dataDir, commentFloodSeconds: 0 }, { url: url.toString() });
    user = await t.user('reader');
    const category = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Outage' } })).body.category
      .category_id;
    const made = await t.rest('POST', '/api/mc-dm-downloads/', {
      key: user.key,
      form: { category_id: category, title: 'Outage' },
    });
    downloadId = made.body.download.download_id;
  });
  afterAll(async () => {
    await proxy?.start().catch(() => {}); // so that close() can roll back and end its connections
    await t?.close();
    await proxy?.stop();
    await fresh?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const requests = (key: string) => ({
    graphqlRead: () =>
      t.gql('query($d: Int!) { comments(downloadId: $d, perPage: 5) { nodes { commentId } } }', { d: downloadId }, key),
    graphqlWrite: () =>
      t.gql(
        'mutation($d: Int!) { createComment(input: { downloadId: $d, message: "during the outage" }) { comment { commentId } } }',
        { d: downloadId },
        key,
      ),
    restRead: () => t.rest('GET', `/api/mc-dm-downloads/${downloadId}/`, { key }),
    restWrite: () =>
      t.rest('POST', '/api/mc-dm-comments/', { key, form: { download_id: downloadId, message: 'during the outage' } }),
  });

  async function graphqlWithStatus(key: string, accept: string) {
    const res = await fetch(new URL('/graphql', t.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept, 'Forum-Api-Key': key },
      body: JSON.stringify({ query: '{ download(downloadId: 1) { title } }' }),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as any };
  }

  it('answers 503 service_unavailable with Retry-After on both faces, /readyz 503 naming nothing, and recovers', async () => {
    // A known key (cached) and an unknown one (looked up in the database) both meet the outage.
    const stranger = 'dm_not_a_key_0000000000000000000000000000000';
    for (const r of Object.values(requests(user.key)))
      expect([(await r()).status, ((await r()) as { errors?: unknown }).errors]).toEqual([200, undefined]);
    expect((await fetch(new URL('/readyz', t.url))).status).toBe(200);

    await proxy.stop();
    try {
      for (const key of [user.key, stranger]) {
        const r = requests(key);
        for (const answer of [await r.graphqlRead(), await r.graphqlWrite()]) {
          expect(answer.status).toBe(503);
          expect(answer.codes).toEqual(['service_unavailable']);
          expect(answer.errors![0].extensions.params).toEqual({ retry_after: 5 });
        }
        for (const answer of [await r.restRead(), await r.restWrite()]) {
          expect(answer.status).toBe(503);
          expect(answer.body.errors.map((e: { code: string }) => e.code)).toEqual(['service_unavailable']);
          expect(answer.headers.get('retry-after')).toBe('5');
        }
      }
      for (const accept of ['application/json', 'application/graphql-response+json']) {
        const g = await graphqlWithStatus(user.key, accept);
        expect(g.status).toBe(503);
        expect(g.retryAfter).toBe('5');
        expect(g.body.data).toBeUndefined();
      }
      const ready = await fetch(new URL('/readyz', t.url));
      expect(ready.status).toBe(503);
      expect(ready.headers.get('retry-after')).toBe('5');
      expect(ready.headers.get('content-type')).toBe('application/json; charset=utf-8');
      const text = await ready.text();
      for (const secret of [
        '127.0.0.1',
        'localhost',
        String(proxy.port),
        '5432',
        'postgres://',
        'postgres@',
        server.hostname,
        fresh.url,
      ]) {
        expect(text).not.toContain(secret);
      }
      expect(JSON.parse(text).status).toBe('unavailable');
    } finally {
      await proxy.start();
    }

    // A server that does not answer at all (a partition): connections time out, and the answer is the same 503.
    await proxy.stop();
    await proxy.start({ silent: true });
    try {
      const started = Date.now();
      const [gql, ready] = await Promise.all([
        requests('dm_another_unknown_key_000000000000000000000').graphqlRead(),
        fetch(new URL('/readyz', t.url)),
      ]);
      expect([gql.status, gql.codes]).toEqual([503, ['service_unavailable']]);
      expect(ready.status).toBe(503);
      expect(Date.now() - started).toBeLessThan(8000);
    } finally {
      await proxy.stop();
      await proxy.start();
    }

    // No restart: the next requests find the database again.
    const r = requests(user.key);
    for (const answer of [await r.graphqlRead(), await r.graphqlWrite()])
      expect([answer.status, answer.errors]).toEqual([200, undefined]);
    for (const answer of [await r.restRead(), await r.restWrite()]) expect(answer.status).toBe(200);
    expect((await fetch(new URL('/readyz', t.url))).status).toBe(200);
  });
});
