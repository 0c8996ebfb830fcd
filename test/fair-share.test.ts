// Fair shares of the execution slots (src/http/fair-share.ts): the scheduler on its own (limit, turn order between
// clients, a wait cut by the deadline, releases), then through the service with MAX_CONCURRENT_OPERATIONS=1: a
// client with a backlog of 30 operations does not delay another client's one by more than a turn or two, on both
// faces (the embedded database runs them one at a time, a turn each: the same fairness); every outcome (success, refusal, error) gives its slot back; a wait past the deadline answers 503
// operation_timeout; /metrics shows what runs and waits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FairShare } from '../src/http/fair-share.js';
import { deadline } from '../src/http/limits.js';
import { ApiError } from '../src/errors.js';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('FairShare', () => {
  it('runs up to the limit at once, then queues', async () => {
    const share = new FairShare(2);
    const a = await share.acquire('a');
    await share.acquire('a');
    let third = false;
    const p = share.acquire('a').then((r) => { third = true; return r; });
    await tick();
    expect([share.inFlight, share.queued, third]).toEqual([2, 1, false]);
    a();
    await p;
    expect([share.inFlight, share.queued, third]).toEqual([2, 0, true]);
  });

  it('hands freed slots to waiting clients in turn, not in arrival order', async () => {
    const share = new FairShare(1);
    const first = await share.acquire('busy');
    const order: string[] = [];
    const wait = (client: string, label: string) => share.acquire(client).then((release) => { order.push(label); release(); });
    const all = [wait('busy', 'busy1'), wait('busy', 'busy2'), wait('busy', 'busy3'), wait('other', 'other1'), wait('third', 'third1'), wait('other', 'other2')];
    first();
    await Promise.all(all);
    expect(order).toEqual(['busy1', 'other1', 'third1', 'busy2', 'other2', 'busy3']);
    expect([share.inFlight, share.queued]).toEqual([0, 0]);
  });

  it('a release called twice frees one slot', async () => {
    const share = new FairShare(1);
    const r = await share.acquire('a');
    const waiting = [share.acquire('b'), share.acquire('c')];
    r();
    r();
    await tick();
    expect([share.inFlight, share.queued]).toEqual([1, 1]);
    (await waiting[0]!)();
    (await waiting[1]!)();
    expect([share.inFlight, share.queued]).toEqual([0, 0]);
  });

  it('a wait cut by the deadline rejects with operation_timeout and leaves the queue', async () => {
    const share = new FairShare(1);
    const held = await share.acquire('a');
    const limit = deadline(30);
    const err = await share.acquire('b', limit.signal).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('operation_timeout');
    expect(share.queued).toBe(0);
    held();
    expect(share.inFlight).toBe(0);
    // An already aborted signal refuses at once.
    const gone = new AbortController();
    gone.abort(new Error('client went away'));
    await expect(share.acquire('c', gone.signal)).rejects.toThrow('client went away');
  });

  it('serial: every operation waits, and one is admitted per turn of the event loop, in turn order', async () => {
    const share = new FairShare(8, { serial: true });
    const order: string[] = [];
    let synchronous = true;
    let turns = 0;
    const countTurns = () => { turns++; if (share.queued > 0 || share.inFlight > 0) setImmediate(countTurns); };
    setImmediate(countTurns);
    const seen: number[] = [];
    const run = (client: string, label: string) => share.acquire(client).then((release) => {
      expect(synchronous).toBe(false);
      expect(share.inFlight).toBe(1);
      seen.push(turns);
      order.push(label);
      release();
    });
    // Arrivals of one pass of the event loop: the busy client's three first, then two others.
    const all = [run('busy', 'busy1'), run('busy', 'busy2'), run('busy', 'busy3'), run('other', 'other1'), run('third', 'third1')];
    synchronous = false;
    expect(share.queued).toBe(5);
    await Promise.all(all);
    expect(order).toEqual(['busy1', 'other1', 'third1', 'busy2', 'busy3']);
    expect(new Set(seen).size).toBe(5); // each in a turn of its own
    expect([share.inFlight, share.queued]).toEqual([0, 0]);
  });

  it('serial: an operation waiting for real I/O lets the next turns admit others, up to the limit', async () => {
    const share = new FairShare(2, { serial: true });
    const stalled = await share.acquire('a');
    const second = await share.acquire('b');
    let third = false;
    const p = share.acquire('c').then((r) => { third = true; return r; });
    await new Promise((r) => setTimeout(r, 20));
    expect([share.inFlight, share.queued, third]).toEqual([2, 1, false]);
    stalled();
    (await p)();
    second();
    expect([share.inFlight, share.queued]).toEqual([0, 0]);
  });

  it('limit 0 lets everything run', async () => {
    const share = new FairShare(0);
    const releases = await Promise.all(Array.from({ length: 100 }, () => share.acquire('a')));
    expect(share.queued).toBe(0);
    releases.forEach((r) => r());
  });
});

forEachDatabase((kind) => {
  describe('MAX_CONCURRENT_OPERATIONS=1 through the service', () => {
    let t: TestApp;
    let busy: Record<string, string>;
    let otherKey: string;
    beforeAll(async () => {
      t = await startTestApp(kind, { maxConcurrentOperations: 1 });
      const { categoryId } = (await t.gqlOk('mutation { createCategory(input: { title: "Fair" }) { category { categoryId } } }')).createCategory.category;
      const user = await t.user('busy');
      for (let i = 0; i < 40; i++) {
        await t.gqlOk('mutation($i: CreateDownloadInput!) { createDownload(input: $i) { download { downloadId } } }',
          { i: { categoryId, title: `Fair ${i}`, description: 'x'.repeat(200) } }, user.key);
      }
      busy = { 'Forum-Api-Key': user.key };
      otherKey = await t.key('SUPER', ['mc_dm_category:read', 'mc_dm_download:read']);
    }, 120_000);
    afterAll(() => t?.close());

    const heavyRest = () => fetch(`${t.url}/api/mc-dm-downloads/?per_page=40&with=full`, { headers: busy });
    const heavyGql = () => fetch(`${t.url}/graphql`, {
      method: 'POST', headers: { ...busy, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ downloads(perPage: 40) { nodes { downloadId title category { title } currentVersion { versionString } } } }' }),
    });

    /**
     * Fires 30 operations from the busy client, then one from another client once at least 20 wait; returns how
     * many of the 30 finished while that one was in flight (in arrival order it would be every one still waiting).
     */
    async function finishedBefore(heavy: () => Promise<Response>, light: () => Promise<Response>): Promise<number> {
      let done = 0;
      const backlog = Array.from({ length: 30 }, () => heavy().then(async (r) => { expect(r.status).toBe(200); await r.arrayBuffer(); done++; }));
      for (let i = 0; i < 500 && (await operations()).queued < 20; i++) await new Promise((r) => setTimeout(r, 5));
      const sent = done;
      const res = await light();
      const before = done - sent;
      expect(res.status).toBe(200);
      await Promise.all(backlog);
      return before;
    }

    async function operations(): Promise<{ running: number; queued: number }> {
      const text = await (await fetch(`${t.url}/metrics`, { headers: { 'Forum-Api-Key': SUPER_KEY } })).text();
      const read = (state: string) => Number(new RegExp(`^dcs_operations\\{state="${state}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
      return { running: read('running'), queued: read('queued') };
    }

    it('REST: another client is served after a turn or two, not after the 20 or more queued before it', async () => {
      const before = await finishedBefore(heavyRest, () => fetch(`${t.url}/api/mc-dm-categories/`, { headers: { 'Forum-Api-Key': otherKey } }));
      expect(before).toBeLessThanOrEqual(3);
    });

    it('GraphQL: the same', async () => {
      const before = await finishedBefore(heavyGql, () => fetch(`${t.url}/graphql`, {
        method: 'POST', headers: { 'Forum-Api-Key': otherKey, 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ viewer { userId } }' }),
      }));
      expect(before).toBeLessThanOrEqual(3);
    });

    it('every outcome gives its slot back', async () => {
      // Refusals, missing rows, bad input and errors inside execution on both faces, then successes: with one slot,
      // a single slot kept by any of them would make what follows wait until the deadline (503).
      t.config.graphql.timeoutMs = 3000;
      try {
        for (let i = 0; i < 3; i++) {
          expect((await t.rest('GET', '/api/mc-dm-downloads/999999/')).status).toBe(404);
          expect((await t.rest('GET', '/api/mc-dm-downloads/', { query: { per_page: 'x' } })).status).toBe(400);
          expect((await t.rest('DELETE', '/api/mc-dm-categories/999999/')).status).toBe(404);
          expect((await t.gql('{ download(downloadId: 999999) { title } }')).codes).toContain('mc_dm_api_error.download_not_found');
          expect((await t.gql('mutation { deleteComment(input: { commentId: 999999 }) { deletedId } }')).codes.length).toBe(1);
        }
        expect((await t.rest('GET', '/api/mc-dm-categories/')).status).toBe(200);
        expect((await t.gql('{ viewer { userId } }')).status).toBe(200);
        expect(await operations()).toEqual({ running: 0, queued: 0 });
      } finally {
        t.config.graphql.timeoutMs = 30_000;
      }
    });

    it('an operation still waiting at the deadline answers 503 operation_timeout, on both faces', async () => {
      t.config.graphql.timeoutMs = 40;
      try {
        const statuses = await Promise.all([
          ...Array.from({ length: 20 }, () => heavyRest().then(async (r) => `${r.status} ${((await r.json()) as any).errors?.[0]?.code ?? ''}`.trim())),
          ...Array.from({ length: 20 }, () => heavyGql().then(async (r) => `${r.status} ${((await r.json()) as any).errors?.[0]?.extensions?.code ?? ''}`.trim())),
        ]);
        for (const s of statuses) expect(['200', '503 operation_timeout']).toContain(s);
        expect(statuses.filter((s) => s.startsWith('503')).length).toBeGreaterThan(0);
      } finally {
        t.config.graphql.timeoutMs = 30_000;
      }
      expect(await operations()).toEqual({ running: 0, queued: 0 });
      expect((await t.rest('GET', '/api/mc-dm-categories/')).status).toBe(200);
    });
  });
});
