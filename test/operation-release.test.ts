// What an operation leaves behind once it has its answer: nothing that a long-lived map keeps for it. V8's
// young-generation collector keeps the value of every entry of such a map alive through its next run even once the
// entry's key is garbage, so an entry left for the collector to clear made each request's objects outlive it and be
// moved into the old generation (bench/README.md, garbage collection). The two maps a read filled on every request:
// the scope checks' cache of @pothos/plugin-scope-auth, keyed by the context (src/graphql/context.ts endOperation),
// and the pool's statements in flight, keyed by the operation's signal (src/db/pool.ts).
import { RequestCache } from '@pothos/plugin-scope-auth';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase, type Database } from '../src/db/client.js';
import { OperationAbort } from '../src/db/operation-signal.js';
import { builder } from '../src/graphql/builder.js';
import { forEachDatabase, freshPostgres, startTestApp, type TestApp } from './helpers/app.js';

forEachDatabase((kind) => {
  describe("the scope checks' cache of a context", () => {
    let t: TestApp;
    let downloadId: number;
    beforeAll(async () => {
      t = await startTestApp(kind, { readCacheMb: 0 });
      const category = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Released' } })).body.category
        .category_id;
      const owner = await t.user(`release_owner_${kind}`);
      downloadId = (
        await t.rest('POST', '/api/mc-dm-downloads/', {
          key: owner.key,
          form: { category_id: category, title: 'One', description: 'The first' },
        })
      ).body.download.download_id;
    });
    afterAll(() => t?.close());
    afterEach(() => vi.restoreAllMocks());

    /** The contexts whose scope checks `run` used, each with the cache it used. */
    async function cachesOf(run: () => Promise<unknown>): Promise<Map<object, unknown>> {
      const used = new Map<object, unknown>();
      const fromContext = RequestCache.fromContext.bind(RequestCache);
      vi.spyOn(RequestCache, 'fromContext').mockImplementation((context, b) => {
        const cache = fromContext(context, b);
        used.set(context as object, cache);
        return cache;
      });
      await run();
      vi.restoreAllMocks();
      return used;
    }

    it.each([
      ['REST', () => t.rest('GET', `/api/mc-dm-downloads/${downloadId}/`, { query: { with: 'full' } })],
      ['REST, refused', () => t.rest('GET', '/api/mc-dm-downloads/999999/')],
      ['/graphql', () => t.gql('query($d: Int!) { download(downloadId: $d) { title canEdit } }', { d: downloadId })],
      ['/graphql, refused', () => t.gql('query($d: Int!) { download(downloadId: $d) { title } }', { d: 999999 })],
    ])('%s: is gone from the cache once the answer is complete', async (_face, run) => {
      const used = await cachesOf(run);
      expect(used.size).toBeGreaterThan(0); // the operation checked scopes
      for (const [context, cache] of used) {
        // Asked again for the same context, the cache makes a new one: the entry the operation used was taken out.
        expect(RequestCache.fromContext(context as never, builder as never)).not.toBe(cache);
      }
    });
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)("PostgreSQL server: an operation's statements in flight", () => {
  let fresh: Awaited<ReturnType<typeof freshPostgres>>;
  let db: Database;
  beforeAll(async () => {
    fresh = await freshPostgres();
    db = await openDatabase({ url: fresh.url, poolSize: 4 });
  });
  afterAll(async () => {
    await db?.close({ deadlineMs: 0 });
    await fresh?.drop();
  });

  /** An operation's signal that counts the abort listeners on it. */
  class Counted extends OperationAbort {
    listening = 0;
    override addEventListener(type: 'abort', listener: (event: Event) => void): void {
      this.listening++;
      super.addEventListener(type, listener);
    }
    override removeEventListener(type: 'abort', listener: (event: Event) => void): void {
      this.listening--;
      super.removeEventListener(type, listener);
    }
    override abort(reason: unknown): void {
      this.listening = 0; // an abort calls its listeners and drops them
      super.abort(reason);
    }
  }

  it('leave no listener on the signal once they have ended, and a later one is still stopped by it', async () => {
    const signal = new Counted();
    const operation = { signal, client: 'key' };
    const one = (sql = 'SELECT 1 AS n') => db.query<{ n: number }>(sql, [], { operation });
    // One after another, and several at once: one listener while any runs, none after.
    for (let i = 0; i < 3; i++) await one();
    expect(signal.listening).toBe(0);
    const together = Promise.all([0, 1, 2].map(() => one('SELECT 1 AS n FROM pg_sleep(0.3)')));
    await new Promise((r) => setTimeout(r, 100));
    expect(signal.listening).toBe(1);
    await together;
    expect(signal.listening).toBe(0);
    // A statement started after those is still bound: the abort stops it at once, not after its 10 s.
    const slow = one('SELECT 1 AS n FROM pg_sleep(10)');
    const outcome = slow.then(
      () => 'answered',
      () => 'stopped',
    );
    await new Promise((r) => setTimeout(r, 50));
    const t0 = performance.now();
    signal.abort(new Error('deadline'));
    expect(await outcome).toBe('stopped');
    expect(performance.now() - t0).toBeLessThan(5000);
    // The pool still answers.
    expect(await db.query<{ n: number }>('SELECT 2 AS n')).toEqual([{ n: 2 }]);
  });
});
