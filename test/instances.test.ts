// Several instances on one PostgreSQL database behave as one: a key revoked or a permission withdrawn through one
// instance is enforced by the others within a second (LISTEN/NOTIFY, not the cache's time to live, which is set to
// five minutes here), a lost notification connection recovers by itself, files stored through one instance stream
// from another, and flood control holds across them. Skipped without a PostgreSQL server (TEST_DATABASE_URL).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';

/** Polls until `check` holds, returning how long it took; fails after `limitMs`. */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await check()) return performance.now() - t0;
    if (performance.now() - t0 > limitMs) throw new Error(`not within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(!process.env.TEST_DATABASE_URL)('three instances on one PostgreSQL database', () => {
  let a: TestApp; let b: TestApp; let c: TestApp;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-instances-'));

  beforeAll(async () => {
    const settings = { cacheSeconds: 300, commentFloodSeconds: 30, dataDir };
    a = await startTestApp('postgres', settings);
    const url = a.app.db.url!;
    b = await startTestApp('postgres', settings, { url });
    c = await startTestApp('postgres', settings, { url });
  });
  afterAll(async () => {
    await c?.close();
    await b?.close();
    await a?.close(); // drops the database
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const categoriesStatus = async (t: TestApp, key: string) => (await t.rest('GET', '/api/mc-dm-categories/', { key })).status;

  it('a key revoked on A is refused by B and C within a second', async () => {
    const made = await a.gqlOk(`mutation { createApiKey(input: { type: GUEST, scopes: ["mc_dm_category:read"] }) { key apiKey { apiKeyId } } }`);
    const key = made.createApiKey.key;
    expect(await categoriesStatus(b, key)).toBe(200); // now cached on B and C for five minutes
    expect(await categoriesStatus(c, key)).toBe(200);
    await a.gqlOk(`mutation($id: Int!) { revokeApiKey(input: { apiKeyId: $id }) { apiKey { isActive } } }`, { id: made.createApiKey.apiKey.apiKeyId });
    const ms = await Promise.all([b, c].map((t) => within(1000, async () => (await t.rest('GET', '/api/mc-dm-categories/', { key })).body.errors?.[0]?.code === 'api_key_inactive')));
    expect(Math.max(...ms)).toBeLessThan(1000);
  });

  it('a permission withdrawn on A is enforced on C within a second', async () => {
    const user = await a.user('coherent');
    const id = (await a.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Coherent' } })).body.category.category_id;
    expect((await c.rest('GET', `/api/mc-dm-categories/${id}/`, { key: user.key })).status).toBe(200);
    await a.gqlOk(`mutation($c: Int!) { setCategoryPermission(input: { categoryId: $c, group: "registered", permission: "view", value: DENY }) { ok } }`, { c: id });
    const ms = await within(1000, async () => (await c.rest('GET', `/api/mc-dm-categories/${id}/`, { key: user.key })).status === 403);
    expect(ms).toBeLessThan(1000);
  });

  it('recovers from a lost notification connection and stays coherent', async () => {
    const admin = new pg.Client({ connectionString: a.app.db.url! });
    await admin.connect();
    try {
      const killed = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`);
      expect(killed.rowCount).toBe(3);
      // Each instance reconnects and listens again.
      await within(5000, async () => (await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`)).rows[0].n === 3);
    } finally {
      await admin.end();
    }
    const made = await b.gqlOk(`mutation { createApiKey(input: { type: GUEST, scopes: ["mc_dm_category:read"] }) { key apiKey { apiKeyId } } }`);
    expect(await categoriesStatus(a, made.createApiKey.key)).toBe(200);
    await b.gqlOk(`mutation($id: Int!) { revokeApiKey(input: { apiKeyId: $id }) { apiKey { isActive } } }`, { id: made.createApiKey.apiKey.apiKeyId });
    expect(await within(1000, async () => (await categoriesStatus(a, made.createApiKey.key)) === 401)).toBeLessThan(1000);
  });

  it('a file uploaded through A streams from B; flood control holds across instances', async () => {
    const user = await a.user('uploader');
    const cat = (await a.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Shared files' } })).body.category.category_id;
    const d = (await b.rest('POST', '/api/mc-dm-downloads/', { key: user.key, form: { category_id: cat, title: 'Across' } })).body.download;
    const form = new FormData();
    form.append('version_id', String(d.current_version_id));
    form.append('file', new Blob([new TextEncoder().encode('written by A')]), 'a.txt');
    const created = (await (await fetch(`${a.url}/api/mc-dm-files/`, { method: 'POST', headers: { 'Forum-Api-Key': user.key }, body: form })).json()) as any;
    const res = await fetch(`${b.url}/api/mc-dm-files/${created.file.file_id}/data/`, { headers: { 'Forum-Api-Key': user.key } });
    expect(await res.text()).toBe('written by A');

    const posts = await Promise.all([a, b, c, a, b, c].map((t, i) => t.rest('POST', '/api/mc-dm-comments/', { key: user.key, form: { download_id: d.download_id, message: `race ${i}` } })));
    expect(posts.filter((p) => p.status === 200)).toHaveLength(1);
    expect(posts.filter((p) => p.status === 429)).toHaveLength(5);
  });
});
