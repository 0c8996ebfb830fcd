import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

forEachDatabase((kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('serves health and an empty category list', async () => {
    expect((await t.rest('GET', '/healthz', { key: null })).body).toEqual({ status: 'ok' });
    const r = await t.rest('GET', '/api/mc-dm-categories/');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ categories: [], pagination: { page: 1, per_page: 20, total: 0, last_page: 1 } });
  });
});
