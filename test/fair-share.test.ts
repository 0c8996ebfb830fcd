// Fair shares of the execution slots (src/http/fair-share.ts): the scheduler on its own (limit, turn order between
// clients, a wait cut by the deadline, releases), then through the service with MAX_CONCURRENT_OPERATIONS=1: a
// client with a backlog of 30 operations does not delay another client's one by more than a turn or two, on both
// faces and both databases (the backlog is made certain by holding the database, and the order read from the
// scheduler's admissions); every outcome (success, refusal, error) gives its slot back; a wait past the deadline
// answers 503 operation_timeout; /metrics shows what runs and waits.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BURST_MS, FairShare, resultCharge } from '../src/http/fair-share.js';
import { RESPONSE_BUDGET, ResponseBudget } from '../src/graphql/response-size.js';
import { deadline } from '../src/graphql/limits.js';
import { ApiError } from '../src/errors.js';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('FairShare', () => {
  it('runs up to the limit at once, then queues', async () => {
    const share = new FairShare(2);
    const a = await share.acquire('a');
    await share.acquire('a');
    let third = false;
    const p = share.acquire('a').then((r) => {
      third = true;
      return r;
    });
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
    const wait = (client: string, label: string) =>
      share.acquire(client).then((release) => {
        order.push(label);
        release();
      });
    const all = [
      wait('busy', 'busy1'),
      wait('busy', 'busy2'),
      wait('busy', 'busy3'),
      wait('other', 'other1'),
      wait('third', 'third1'),
      wait('other', 'other2'),
    ];
    first();
    await Promise.all(all);
    expect(order).toEqual(['busy1', 'other1', 'third1', 'busy2', 'other2', 'busy3']);
    expect([share.inFlight, share.queued]).toEqual([0, 0]);
  });

  it('weighs turns by execution time: a client charged 40 ms waits while a light one catches up', async () => {
    const share = new FairShare(1);
    const heavy = await share.acquire('heavy');
    const order: string[] = [];
    const wait = (client: string, label: string) =>
      share.acquire(client).then((release) => {
        order.push(label);
        release();
      });
    const all = [
      wait('heavy', 'heavy1'),
      wait('heavy', 'heavy2'),
      wait('light', 'light1'),
      wait('light', 'light2'),
      wait('light', 'light3'),
    ];
    await new Promise((r) => setTimeout(r, 40));
    heavy();
    await Promise.all(all);
    // Counted turns would have been heavy1, light1, heavy2, light2, light3.
    expect(order).toEqual(['light1', 'light2', 'light3', 'heavy1', 'heavy2']);
  });

  it('a client more than BURST_MS ahead waits while another runs, even with slots free; alone it never waits', async () => {
    const share = new FairShare(8);
    const light = await share.acquire('light');
    const heavy = await share.acquire('heavy');
    await new Promise((r) => setTimeout(r, BURST_MS + 50));
    heavy(); // heavy is charged ~150 ms; light, still running, has paid nothing yet
    let again = false;
    const next = share.acquire('heavy').then((release) => {
      again = true;
      return release;
    });
    await tick();
    expect([again, share.inFlight, share.queued]).toEqual([false, 1, 1]);
    light(); // light pays ~150 ms: the clock moves up to heavy's charge
    (await next)();
    expect(again).toBe(true);
    // Alone, however far ahead, a client is the clock.
    const alone = new FairShare(8);
    const r = await alone.acquire('solo');
    await new Promise((res) => setTimeout(res, BURST_MS + 50));
    r();
    let soon = false;
    const p = alone.acquire('solo').then((release) => {
      soon = true;
      release();
    });
    await tick();
    expect(soon).toBe(true);
    await p;
  });

  it('the bytes of a result add to the charge of its client (resultCharge: 64 KB a millisecond)', async () => {
    expect(
      resultCharge({
        [RESPONSE_BUDGET]: Object.assign(new ResponseBudget(1 << 30, () => {}), { used: 16 * 64 * 1024 }),
      }),
    ).toBe(16);
    expect(resultCharge({})).toBe(0);
    const share = new FairShare(1);
    const big = await share.acquire('big');
    const order: string[] = [];
    const wait = (client: string, label: string) =>
      share.acquire(client).then((release) => {
        order.push(label);
        release();
      });
    const all = [wait('big', 'big1'), wait('small', 'small1'), wait('small', 'small2')];
    big(BURST_MS + 20); // no time spent, but a large result
    await Promise.all(all);
    expect(order).toEqual(['small1', 'small2', 'big1']);
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
    const countTurns = () => {
      turns++;
      if (share.queued > 0 || share.inFlight > 0) setImmediate(countTurns);
    };
    setImmediate(countTurns);
    const seen: number[] = [];
    const run = (client: string, label: string) =>
      share.acquire(client).then((release) => {
        expect(synchronous).toBe(false);
        expect(share.inFlight).toBe(1);
        seen.push(turns);
        order.push(label);
        release();
      });
    // Arrivals of one pass of the event loop: the busy client's three first, then two others.
    const all = [
      run('busy', 'busy1'),
      run('busy', 'busy2'),
      run('busy', 'busy3'),
      run('other', 'other1'),
      run('third', 'third1'),
    ];
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
    const p = share.acquire('c').then((r) => {
      third = true;
      return r;
    });
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
    for (const r of releases) r();
  });
});

forEachDatabase((kind) => {
  describe('MAX_CONCURRENT_OPERATIONS=1 through the service', () => {
    let t: TestApp;
    let busy: Record<string, string>;
    let otherKey: string;
    beforeAll(async () => {
      // Key and user caches long enough to stay warm while the database is held (holdDownloads); the
      // read cache off, since these tests repeat one read to watch it queue. The response allowance off: it would hold
      // the busy client's 30 operations in its own queue, at most 4 running at once (test/response-allowance.test.ts).
      t = await startTestApp(kind, {
        maxConcurrentOperations: 1,
        cacheSeconds: 600,
        readCacheMb: 0,
        responseBytesPerMinute: 0,
      });
      const { categoryId } = (
        await t.gqlOk('mutation { createCategory(input: { title: "Fair" }) { category { categoryId } } }')
      ).createCategory.category;
      const user = await t.user('busy');
      for (let i = 0; i < 40; i++) {
        await t.gqlOk(
          'mutation($i: CreateDownloadInput!) { createDownload(input: $i) { download { downloadId } } }',
          { i: { categoryId, title: `Fair ${i}`, description: 'x'.repeat(200) } },
          user.key,
        );
      }
      busy = { 'Forum-Api-Key': user.key };
      otherKey = await t.key('SUPER', ['mc_dm_category:read', 'mc_dm_download:read']);
    }, 120_000);
    afterAll(() => t?.close());

    const heavyRest = () => fetch(`${t.url}/api/mc-dm-downloads/?per_page=40&with=full`, { headers: busy });
    const heavyGql = () =>
      fetch(`${t.url}/graphql`, {
        method: 'POST',
        headers: { ...busy, 'content-type': 'application/json' },
        body: JSON.stringify({
          query:
            '{ downloads(perPage: 40) { nodes { downloadId title category { title } currentVersion { versionString } } } }',
        }),
      });

    /**
     * Makes the backlog certain, then measures the other client's wait. The database is held (holdDownloads), so
     * the one slot's operation waits; the busy client's 30 operations are sent, and the test goes on only once the
     * metrics show 1 running and 29 queued (else it fails); the other client's request is sent and waits until it
     * is queued too (30); then the database is let go. Returns how many of the busy client's operations the server
     * admitted before the other client's one (`admitted`, from the scheduler: in arrival order all 30), and how many
     * of their answers had arrived when the other client's did (`answered`).
     */
    async function servedBefore(
      heavy: () => Promise<Response>,
      light: () => Promise<Response>,
    ): Promise<{ admitted: number; answered: number }> {
      // Warm the key caches: on the embedded database a key read would wait for the hold, before the queue.
      expect(await statusOf(heavy())).toBe(200);
      expect(await statusOf(light())).toBe(200);
      const grants = recordGrants();
      const release = await holdDownloads();
      let released = false;
      const letGo = async () => {
        if (!released) {
          released = true;
          await release();
        }
      };
      let done = 0;
      const statuses: number[] = [];
      const backlog = Array.from({ length: 30 }, () =>
        statusOf(heavy()).then((status) => {
          statuses.push(status);
          done++;
        }),
      );
      try {
        await until(
          "the busy client's 30 operations, 1 running and 29 queued",
          (o) => o.running === 1 && o.queued === 29,
        );
        const answer = statusOf(light());
        await until("the other client's operation queued behind them", (o) => o.running === 1 && o.queued === 30);
        await letGo();
        expect(await answer).toBe(200);
        const answered = done;
        await Promise.all(backlog);
        expect(statuses).toEqual(Array(30).fill(200));
        const order = grants.order;
        const busy = order[0];
        expect(order.length).toBe(31);
        expect(order.filter((c) => c !== busy).length).toBe(1);
        return { admitted: order.findIndex((c) => c !== busy), answered };
      } finally {
        await letGo();
        await Promise.allSettled(backlog);
        grants.stop();
      }
    }

    /** The status once the whole body has arrived. */
    async function statusOf(response: Promise<Response>): Promise<number> {
      const r = await response;
      await r.arrayBuffer();
      return r.status;
    }

    /** The clients of the operations the scheduler admits, in the order it admits them (until stop()). */
    function recordGrants(): { order: string[]; stop(): void } {
      const order: string[] = [];
      const acquire = FairShare.prototype.acquire;
      const spy = vi.spyOn(FairShare.prototype, 'acquire').mockImplementation(function (
        this: FairShare,
        client,
        signal,
      ) {
        const granted = acquire.call(this, client, signal);
        // Grants resolve in the order they are made, so these reactions run in that order too.
        granted.then(
          () => order.push(client),
          () => {},
        );
        return granted;
      });
      return { order, stop: () => spy.mockRestore() };
    }

    /**
     * Holds the database so that an operation reading downloads waits, until the returned function lets go. On a
     * server, a connection of the test's own locks the download table. The embedded database is one in-process
     * connection: an open transaction holds it whole, so every statement waits (the key caches are warm, and
     * CACHE_SECONDS is long, so that requests still reach the queue); its statements run as microtasks, so nothing
     * else (pg_sleep would stop the event loop itself) makes an operation wait there.
     */
    async function holdDownloads(): Promise<() => Promise<void>> {
      if (kind === 'postgres') {
        const client = new pg.Client({ connectionString: t.app.db.url });
        await client.connect();
        await client.query('BEGIN');
        await client.query('LOCK TABLE "download" IN ACCESS EXCLUSIVE MODE');
        return async () => {
          await client.query('COMMIT');
          await client.end();
        };
      }
      let letGo!: () => void;
      const gate = new Promise<void>((resolve) => {
        letGo = resolve;
      });
      let held!: () => void;
      const isHeld = new Promise<void>((resolve) => {
        held = resolve;
      });
      const tx = t.prisma.$transaction(
        async (tx) => {
          await tx.$queryRaw`SELECT 1`;
          held();
          await gate;
        },
        { timeout: 60_000 },
      );
      await Promise.race([isHeld, tx]);
      return async () => {
        letGo();
        await tx;
      };
    }

    /** Polls the metrics until `ready` holds; fails the test if it does not within a few seconds. */
    async function until(what: string, ready: (o: { running: number; queued: number }) => boolean): Promise<void> {
      let last = await operations();
      for (const started = Date.now(); !ready(last); last = await operations()) {
        if (Date.now() - started > 5000)
          throw new Error(`Not reached within 5 s: ${what} (running ${last.running}, queued ${last.queued}).`);
        await new Promise((r) => setTimeout(r, 5));
      }
    }

    async function operations(): Promise<{ running: number; queued: number }> {
      const text = await (await fetch(`${t.url}/metrics`, { headers: { 'Forum-Api-Key': SUPER_KEY } })).text();
      const read = (state: string) =>
        Number(new RegExp(`^dcs_operations\\{state="${state}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
      return { running: read('running'), queued: read('queued') };
    }

    it('REST: another client is served after a turn or two, not after the 29 queued before it', async () => {
      const before = await servedBefore(heavyRest, () =>
        fetch(`${t.url}/api/mc-dm-categories/`, { headers: { 'Forum-Api-Key': otherKey } }),
      );
      expect(before.admitted).toBeLessThanOrEqual(3);
      // What the client sees: the answer came while most of the backlog still waited, not after it.
      expect(before.answered).toBeLessThanOrEqual(10);
    });

    it('GraphQL: the same', async () => {
      const before = await servedBefore(heavyGql, () =>
        fetch(`${t.url}/graphql`, {
          method: 'POST',
          headers: { 'Forum-Api-Key': otherKey, 'content-type': 'application/json' },
          body: JSON.stringify({ query: '{ viewer { userId } }' }),
        }),
      );
      expect(before.admitted).toBeLessThanOrEqual(3);
      // What the client sees: the answer came while most of the backlog still waited, not after it.
      expect(before.answered).toBeLessThanOrEqual(10);
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
          expect((await t.gql('{ download(downloadId: 999999) { title } }')).codes).toContain(
            'mc_dm_api_error.download_not_found',
          );
          expect(
            (await t.gql('mutation { deleteComment(input: { commentId: 999999 }) { deletedId } }')).codes.length,
          ).toBe(1);
        }
        expect((await t.rest('GET', '/api/mc-dm-categories/')).status).toBe(200);
        expect((await t.gql('{ viewer { userId } }')).status).toBe(200);
        expect(await operations()).toEqual({ running: 0, queued: 0 });
      } finally {
        t.config.graphql.timeoutMs = 30_000;
      }
    });

    it('an operation still waiting at the deadline answers 503 operation_timeout, on both faces', async () => {
      // Short enough that, with one slot, operations queued behind 60 others pass it while they wait.
      t.config.graphql.timeoutMs = 10;
      try {
        const statuses = await Promise.all([
          ...Array.from({ length: 30 }, () =>
            heavyRest().then(async (r) => `${r.status} ${((await r.json()) as any).errors?.[0]?.code ?? ''}`.trim()),
          ),
          ...Array.from({ length: 30 }, () =>
            heavyGql().then(async (r) =>
              `${r.status} ${((await r.json()) as any).errors?.[0]?.extensions?.code ?? ''}`.trim(),
            ),
          ),
        ]);
        for (const s of statuses) expect(['200', '503 operation_timeout']).toContain(s);
        expect(statuses.filter((s) => s.startsWith('503')).length).toBeGreaterThan(0);
      } finally {
        t.config.graphql.timeoutMs = 30_000;
      }
      // A 503 answered at the deadline keeps its slot until the work behind it has stopped (on PostgreSQL the
      // cancelled statement still has to come back), so the slots are free soon after the answers, not with them.
      await vi.waitFor(async () => expect(await operations()).toEqual({ running: 0, queued: 0 }), {
        timeout: 5000,
        interval: 50,
      });
      expect((await t.rest('GET', '/api/mc-dm-categories/')).status).toBe(200);
    });
  });
});
