// The PostgreSQL server's pool never loses a connection: a transaction's connection comes back or is closed whatever
// ended it, a session the server ended stops counting, and closing (SIGTERM) ends in time with a connection still
// checked out. The embedded database has no pool. Skipped without a PostgreSQL server (TEST_DATABASE_URL).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/db/client.js';
import { freshPostgres, startTestApp } from './helpers/app.js';

const never = new Promise<never>(() => {});
/** Resolves to `value` after `ms`, for races. */
const after = <T,>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

describe.skipIf(!process.env.TEST_DATABASE_URL)('PostgreSQL server: the pool', () => {
  let fresh: Awaited<ReturnType<typeof freshPostgres>>;
  let admin: pg.Client;
  const opened: Database[] = [];
  const open = async (poolSize: number, params = '') => {
    const db = await openDatabase({ url: fresh.url + params, poolSize });
    opened.push(db);
    return db;
  };
  /** The sessions on the test database, other than this test's own. */
  const sessions = async () => (await admin.query<{ state: string; query: string }>(
    'SELECT state, query FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() ORDER BY state')).rows;
  /** A query answers: the pool has a connection to give. */
  const answers = async (db: Database) => Promise.race([db.query('SELECT 1').then(() => true), after(3000, false)]);

  beforeAll(async () => {
    fresh = await freshPostgres();
    admin = new pg.Client({ connectionString: fresh.url });
    await admin.connect();
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((db) => db.close({ deadlineMs: 0 })));
  });
  afterAll(async () => {
    await admin.end();
    await fresh.drop();
  });

  it('disconnect: transactions waiting for a connection leave none idle in a transaction, and close() ends at once', async () => {
    const db = await open(2);
    // Two transactions hold the pool, three wait for a connection; close() cancels them all.
    for (let i = 0; i < 5; i++) void db.prisma.$transaction(async (tx) => { await tx.$executeRawUnsafe('SELECT pg_sleep(0.3)'); }).catch(() => {});
    // Prisma's first query loads its query compiler: on a busy machine that alone can take longer than 100 ms.
    for (const until = performance.now() + 3000; db.connections().waiting < 3 && performance.now() < until;) await after(20, null);
    expect(db.connections()).toMatchObject({ total: 2, waiting: 3 });
    const t0 = performance.now();
    // A long deadline: closing must not need it.
    expect(await Promise.race([db.close({ deadlineMs: 60_000 }).then(() => 'closed'), after(3000, 'hung')])).toBe('closed');
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(await sessions()).toEqual([]);
  });

  it('a COMMIT the server refuses: the connection is closed and replaced, not kept checked out', async () => {
    const db = await open(1);
    await db.query('CREATE TABLE deferred_once (n int UNIQUE DEFERRABLE INITIALLY DEFERRED)');
    await expect(db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe('INSERT INTO deferred_once VALUES (1), (1)'); // refused only at COMMIT
    })).rejects.toThrow(/deferred_once|unique/i);
    expect(await answers(db)).toBe(true);
    expect(db.connections()).toMatchObject({ total: 1, waiting: 0 });
    expect(await sessions()).toEqual([{ state: 'idle', query: 'SELECT 1' }]);
  });

  it('a transaction whose session the server ended: the pool stops counting it at once', async () => {
    const db = await open(1);
    let pid = 0;
    const gone = db.prisma.$transaction(async (tx) => {
      pid = (await tx.$queryRawUnsafe<{ pid: number }[]>('SELECT pg_backend_pid() AS pid'))[0]!.pid;
      await after(300, null);
      await tx.$executeRawUnsafe('SELECT 1');
    });
    while (!pid) await after(10, null);
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await expect(gone).rejects.toThrow();
    expect(await answers(db)).toBe(true);
    expect(db.connections()).toMatchObject({ total: 1, waiting: 0 });
  });

  it('a connection left idle in a transaction is ended by the server after idle_in_transaction_session_timeout, and dropped', async () => {
    const db = await open(1);
    expect(await db.query('SHOW idle_in_transaction_session_timeout')).toEqual([{ idle_in_transaction_session_timeout: '2min' }]);
    const short = await open(1, '?idle_in_transaction_session_timeout=200');
    // A holder that begins a transaction and never releases its connection.
    void short.session(async (s) => { await s.exec('BEGIN'); await never; });
    await after(100, null);
    expect(short.connections()).toMatchObject({ total: 1, idle: 0 });
    await after(400, null);
    expect(short.connections()).toMatchObject({ total: 0 });
    expect(await answers(short)).toBe(true);
  });

  it('close() ends by its deadline with a connection checked out and never released', async () => {
    const db = await open(2);
    void db.session(async (s) => { await s.exec('BEGIN'); await never; });
    void db.session(async () => never);
    await after(100, null);
    expect(db.connections()).toMatchObject({ total: 2, idle: 0 });
    const t0 = performance.now();
    expect(await Promise.race([db.close({ deadlineMs: 300 }).then(() => 'closed'), after(3000, 'hung')])).toBe('closed');
    expect(performance.now() - t0).toBeLessThan(1000);
    await after(200, null);
    expect(await sessions()).toEqual([]);
  });

  it('the service stops within its grace period under a load of writes, leaving no session idle in a transaction', async () => {
    // What a benchmark saw: SIGTERM with writes queued for a pool of 10 never exited. Two connections, many writes.
    const target = await freshPostgres();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-pool-'));
    const app = await startTestApp('postgres', { dataDir, maxConcurrentOperations: 0 }, { url: target.url, poolSize: 2 });
    try {
      const alice = await app.user('alice', { isAdmin: true });
      const category = (await app.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Maps' } })).body.category.category_id;
      for (let i = 0; i < 200; i++) {
        void app.rest('POST', '/api/mc-dm-downloads/', { key: alice.key, form: { title: `Map ${i}`, category_id: category, version_string: '1.0' } }).catch(() => {});
      }
      await after(200, null);
      const t0 = performance.now();
      expect(await Promise.race([app.app.close({ graceMs: 300 }).then(() => 'closed'), after(5000, 'hung')])).toBe('closed');
      expect(performance.now() - t0).toBeLessThan(800);
      const watch = new pg.Client({ connectionString: target.url });
      await watch.connect();
      await after(200, null);
      const left = await watch.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'");
      await watch.end();
      expect(left.rows[0].n).toBe(0);
    } finally {
      await target.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('the service stops within its grace period with a connection checked out and never released', async () => {
    const app = await startTestApp('postgres');
    void app.app.db.session(async (s) => { await s.exec('BEGIN'); await never; });
    await after(100, null);
    const t0 = performance.now();
    expect(await Promise.race([app.close({ graceMs: 1000 }).then(() => 'closed'), after(5000, 'hung')])).toBe('closed');
    expect(performance.now() - t0).toBeLessThan(1500);
  });
});
