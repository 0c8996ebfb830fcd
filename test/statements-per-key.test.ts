// DATABASE_STATEMENTS_PER_KEY: on a PostgreSQL server, the plain statements (pool.query) the operations of one key run
// at once; the key's others wait in its own queue, so one operation sending dozens of statements (30 aliases of a page)
// cannot take every connection of the pool and put the other keys' statements behind its own.
import { describe, expect, it } from 'vitest';
import type pg from 'pg';
import { limitStatementsPerKey, openPool } from '../src/db/pool.js';
import { freshPostgres } from './helpers/app.js';
import { bindStatementsToOperations, boundTo, operationOf } from '../src/db/operation-scope.js';
import { loadConfig } from '../src/config.js';
import type { OperationSignal } from '../src/db/operation-signal.js';

/** A pool whose statements run until the test ends them, recording which are running. */
function fakePool() {
  const running: { sql: string; signal: OperationSignal | undefined; end: () => void }[] = [];
  const pool = {
    query: (sql: string) =>
      new Promise<{ rows: [] }>((resolve) => {
        const entry = {
          sql,
          signal: operationOf(sql)?.signal,
          end: () => {
            running.splice(running.indexOf(entry), 1);
            resolve({ rows: [] });
          },
        };
        running.push(entry);
      }),
  };
  return { pool: pool as unknown as pg.Pool, running };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('configuration', () => {
  it('defaults to 3 and reads DATABASE_STATEMENTS_PER_KEY (0 turns it off)', () => {
    expect(loadConfig({}).databaseStatementsPerKey).toBe(3);
    expect(loadConfig({ DATABASE_STATEMENTS_PER_KEY: '5' }).databaseStatementsPerKey).toBe(5);
    expect(loadConfig({ DATABASE_STATEMENTS_PER_KEY: '0' }).databaseStatementsPerKey).toBe(0);
    expect(() => loadConfig({ DATABASE_STATEMENTS_PER_KEY: 'x' })).toThrow(/DATABASE_STATEMENTS_PER_KEY/);
  });
});

describe('limitStatementsPerKey', () => {
  bindStatementsToOperations();

  it("runs at most N of one key's statements at once, in order; other keys and work outside operations go on", async () => {
    const { pool, running } = fakePool();
    limitStatementsPerKey(pool, 3);
    const signal = new AbortController().signal;
    const done: string[] = [];
    const mine = boundTo(
      signal,
      () =>
        Array.from({ length: 8 }, (_, i) =>
          (pool.query as unknown as (s: string) => Promise<unknown>)(`a${i}`).then(() => done.push(`a${i}`)),
        ),
      'key-a',
    );
    const other = boundTo(
      new AbortController().signal,
      () => (pool.query as unknown as (s: string) => Promise<unknown>)('b0'),
      'key-b',
    );
    const outside = (pool.query as unknown as (s: string) => Promise<unknown>)('job');
    await tick();
    expect(running.map((r) => r.sql).sort()).toEqual(['a0', 'a1', 'a2', 'b0', 'job']);
    running.find((r) => r.sql === 'a1')!.end();
    await tick();
    expect(running.map((r) => r.sql).sort()).toEqual(['a0', 'a2', 'a3', 'b0', 'job']);
    while (running.length) {
      running[0]!.end();
      await tick();
      expect(running.filter((r) => r.sql.startsWith('a')).length).toBeLessThanOrEqual(3);
    }
    await Promise.all([...mine, other, outside]);
    expect(done).toHaveLength(8);
  });

  it('with the pool size, a key alone goes past its limit while the others keep N connections free, in order', async () => {
    const { pool, running } = fakePool();
    limitStatementsPerKey(pool, 3, 10); // 10 connections: a key alone may use 7, the others always find 3 free
    const q = pool.query as unknown as (s: string) => Promise<unknown>;
    const started: string[] = [];
    /** Records the statements that started since last time; one started past its key's limit left 3 connections. */
    const seen = () => {
      for (const r of running) {
        if (started.includes(r.sql)) continue;
        started.push(r.sql);
        const ofKey = running.filter((x) => x.sql[0] === r.sql[0]).length;
        if (ofKey > 3) expect(running.length).toBeLessThanOrEqual(7);
      }
    };
    const mine = boundTo(new AbortController().signal, () => Array.from({ length: 12 }, (_, i) => q(`a${i}`)), 'key-a');
    await tick();
    seen();
    expect(running.map((r) => r.sql)).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6']);
    // Another key finds its 3 connections at once; its fourth statement waits behind its own, in its queue.
    const theirs = boundTo(
      new AbortController().signal,
      () => Array.from({ length: 4 }, (_, i) => q(`b${i}`)),
      'key-b',
    );
    await tick();
    seen();
    expect(running.map((r) => r.sql).filter((x) => x.startsWith('b'))).toEqual(['b0', 'b1', 'b2']);
    expect(running).toHaveLength(10);
    // One of a's ends: a, past its limit, does not take the room back while b uses its share.
    running.find((r) => r.sql === 'a0')!.end();
    await tick();
    seen();
    expect(running).toHaveLength(9);
    // One of b's ends: b's waiting statement goes (b is under its limit).
    running.find((r) => r.sql === 'b0')!.end();
    await tick();
    seen();
    expect(running.map((r) => r.sql).filter((x) => x.startsWith('b'))).toEqual(['b1', 'b2', 'b3']);
    while (running.length) {
      running[0]!.end();
      await tick();
      seen();
    }
    await Promise.all([...mine, ...theirs]);
    // Each key's statements started in the order they were sent, and all of them ran.
    expect(started.filter((x) => x.startsWith('a'))).toEqual(Array.from({ length: 12 }, (_, i) => `a${i}`));
    expect(started.filter((x) => x.startsWith('b'))).toEqual(['b0', 'b1', 'b2', 'b3']);
  });

  it("a waiting statement runs in its own operation, not in the one whose statement's end started it", async () => {
    const { pool, running } = fakePool();
    limitStatementsPerKey(pool, 1);
    const a = new AbortController().signal;
    const b = new AbortController().signal;
    const q = pool.query as unknown as (s: string) => Promise<unknown>;
    const first = boundTo(a, () => q('a0'), 'key');
    const second = boundTo(b, () => q('b0'), 'key');
    await tick();
    expect(running.map((r) => r.sql)).toEqual(['a0']);
    running[0]!.end();
    await tick();
    expect(running.map((r) => r.sql)).toEqual(['b0']);
    expect(running[0]!.signal).toBe(b);
    running[0]!.end();
    await Promise.all([first, second]);
  });

  it('without it, one key runs every statement at once', async () => {
    const { pool, running } = fakePool();
    boundTo(
      new AbortController().signal,
      () => Array.from({ length: 8 }, (_, i) => (pool.query as unknown as (s: string) => Promise<unknown>)(`a${i}`)),
      'key-a',
    );
    await tick();
    expect(running).toHaveLength(8);
    for (const r of [...running]) r.end();
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('PostgreSQL server', () => {
  it("a statement that waited for a connection is sent in its own operation's scope, not the releasing one's", async () => {
    const fresh = await freshPostgres({ migrated: false });
    const seen: { sql: string; signal: OperationSignal | undefined }[] = [];
    const { pool, end } = openPool(fresh.url, 1, (client) => {
      const query = client.query.bind(client) as (...a: unknown[]) => unknown;
      client.query = ((...args: unknown[]) => {
        if (typeof args[0] === 'string') seen.push({ sql: args[0], signal: operationOf(args[0], client)?.signal });
        return query(...args);
      }) as typeof client.query;
    });
    try {
      const a = new AbortController().signal;
      const b = new AbortController().signal;
      await Promise.all([
        boundTo(a, () => pool.query('SELECT pg_sleep(0.1) AS a')),
        boundTo(b, () => pool.query('SELECT 1 AS b')),
      ]);
      expect(seen.find((x) => x.sql.includes('AS a'))?.signal).toBe(a);
      expect(seen.find((x) => x.sql.includes('AS b'))?.signal).toBe(b);
    } finally {
      await end(1000);
      await fresh.drop();
    }
  });
});
