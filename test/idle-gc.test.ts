// Memory back after work (src/http/idle-gc.ts): a full collection once the server has served requests and gone
// quiet, never while a request is in flight, once per busy spell; and the service counts them on /metrics.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { collectWhenIdle, idleCollections } from '../src/http/idle-gc.js';
import { createLogger } from '../src/log.js';
import { startTestApp, SUPER_KEY } from './helpers/app.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('collectWhenIdle', () => {
  let server: http.Server;
  let stop = () => {};
  afterEach(async () => {
    stop();
    await new Promise((r) => server.close(r));
  });

  async function serve(handler: http.RequestListener): Promise<string> {
    server = http.createServer(handler);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    stop = collectWhenIdle(server, { idleMs: 200, growthBytes: 0 }, createLogger('silent'));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it('collects once after a busy spell goes quiet, and not again until there is work', async () => {
    const url = await serve((_req, res) => res.end('ok'));
    const before = idleCollections.count;
    await sleep(500);
    expect(idleCollections.count).toBe(before); // no work yet: nothing to give back
    for (let i = 0; i < 5; i++) await (await fetch(url)).text();
    await sleep(600);
    expect(idleCollections.count).toBe(before + 1);
    await sleep(600);
    expect(idleCollections.count).toBe(before + 1);
    await (await fetch(url)).text();
    await sleep(600);
    expect(idleCollections.count).toBe(before + 2);
  });

  it('waits while a request is in flight', async () => {
    let finish = () => {};
    const url = await serve((_req, res) => { finish = () => res.end('late'); });
    const before = idleCollections.count;
    const pending = fetch(url).then((r) => r.text());
    await sleep(700);
    expect(idleCollections.count).toBe(before);
    finish();
    expect(await pending).toBe('late');
    await sleep(600);
    expect(idleCollections.count).toBe(before + 1);
  });
});

describe('the service', () => {
  it('reports its idle collections on /metrics', async () => {
    const t = await startTestApp('pglite', { idleGcSeconds: 1 });
    try {
      const text = await (await fetch(`${t.url}/metrics`, { headers: { 'Forum-Api-Key': SUPER_KEY } })).text();
      expect(text).toMatch(/^dcs_idle_collections_total \d+$/m);
    } finally {
      await t.close();
    }
  });
});
