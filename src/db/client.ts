// The database: PGlite in-process by default, a PostgreSQL server when a URL is given.
// Both are driven through Prisma (driver adapters) and expose a raw session for the migrator.
import { StartError } from '../errors.js';
import fs from 'node:fs';
import path from 'node:path';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import type pg from 'pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';
import type { Config } from '../config.js';
import { embeddedStartParams } from './embedded-start.js';
import { readTemplate } from './template.js';
import { openPool } from './pool.js';
import { OPERATION, operationOf, type Carrier, type Operation } from './operation-scope.js';
import { withReleasedTransactions } from './transactions.js';
import { sharedReads } from './shared-reads.js';
import { statementName } from './statement-names.js';
import type { Database, Session, StatementOptions } from './database.js';
import { LiteStatements, type ResultOptions, type Results } from './lite-statements.js';
import './prisma-plans.js';
import { PGLITE_EXTENSIONS } from './pglite-extensions.js';
import { COMPACT_SQL, PRUNE_SQL, VERSIONS_SQL, versionsOf } from './cache-versions.js';

/**
 * Prisma's errors without the caller's source frame. With any other format (its default unless NODE_ENV is
 * `production`) Prisma captures a stack trace at every call, to point at the calling line should the call fail: a
 * cost on every read, for a frame of the compiled service that nobody reads. Our code reads Prisma's errors by their
 * codes (src/errors.ts), never by their text.
 */
const PRISMA_ERROR_FORMAT = 'minimal';

export type { Database, Session } from './database.js';

export type DatabaseTarget =
  // `statementsPerKey`: DATABASE_STATEMENTS_PER_KEY (src/db/pool.ts); absent or 0, not limited.
  | { url: string; poolSize?: number; statementsPerKey?: number }
  // `buffersMb`: the embedded database's page cache (EMBEDDED_BUFFERS_MB; src/db/embedded-start.ts).
  | { pgliteDir: string; buffersMb?: number }
  // `loadDataDir`: a dumped data directory to start from (tests pass the build's migrated one, src/db/template.ts).
  | { memory: true; loadDataDir?: Blob; buffersMb?: number };

/** DATABASE_URL's server, or the embedded database under DATA_DIR/db. */
export function targetOf(
  config: Pick<Config, 'databaseUrl' | 'databasePoolSize' | 'dataDir'> & {
    databaseStatementsPerKey?: number;
    embeddedBuffersMb?: number;
  },
): DatabaseTarget {
  return config.databaseUrl
    ? {
        url: config.databaseUrl,
        poolSize: config.databasePoolSize,
        statementsPerKey: config.databaseStatementsPerKey,
      }
    : { pgliteDir: path.join(config.dataDir, 'db'), buffersMb: config.embeddedBuffersMb };
}

export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  if ('url' in target) return openPostgres(target.url, target.poolSize ?? 10, target.statementsPerKey ?? 0);
  let lite: PGlite;
  let unlock = () => {};
  if ('pgliteDir' in target) {
    fs.mkdirSync(path.dirname(target.pgliteDir), { recursive: true });
    unlock = lockDirectory(target.pgliteDir);
    // A fresh directory starts from the build's ready-made database when there is one (src/db/template.ts).
    const loadDataDir = fs.existsSync(path.join(target.pgliteDir, 'PG_VERSION')) ? undefined : readTemplate();
    lite = new PGlite(target.pgliteDir, {
      extensions: PGLITE_EXTENSIONS,
      startParams: embeddedStartParams(target.buffersMb),
      ...(loadDataDir ? { loadDataDir } : {}),
    });
  } else {
    lite = new PGlite({
      extensions: PGLITE_EXTENSIONS,
      startParams: embeddedStartParams(target.buffersMb),
      ...(target.loadDataDir ? { loadDataDir: target.loadDataDir } : {}),
    });
  }
  await lite.waitReady;
  let statements = 0;
  const observers: ((sql: string | undefined) => void)[] = [];
  const seen = (sql: unknown) => {
    for (const fn of observers) fn(typeof sql === 'string' ? sql : undefined);
  };
  const query = lite.query.bind(lite);
  lite.query = ((...args: Parameters<typeof query>) => {
    statements++;
    seen(args[0]);
    return query(...args);
  }) as typeof lite.query;
  const exec = lite.exec.bind(lite);
  lite.exec = ((...args: Parameters<typeof exec>) => {
    seen(args[0]);
    return exec(...args);
  }) as typeof lite.exec;
  /** A transaction's scripts, seen by the observers as the database's own are. */
  const observeExec = (tx: Transaction) => {
    const txExec = tx.exec.bind(tx);
    tx.exec = ((...args: Parameters<typeof txExec>) => {
      seen(args[0]);
      return txExec(...args);
    }) as typeof tx.exec;
  };
  // Prisma's transactions run their statements on the transaction's own object.
  const transaction = lite.transaction.bind(lite);
  lite.transaction = (<T>(fn: (tx: Transaction) => Promise<T>) =>
    transaction((tx) => {
      const txQuery = tx.query.bind(tx);
      tx.query = ((...args: Parameters<typeof txQuery>) => {
        seen(args[0]);
        return txQuery(...args);
      }) as typeof tx.query;
      observeExec(tx);
      return fn(tx);
    })) as typeof lite.transaction;
  // The hand-written reads as named prepared statements, parsed and planned once (src/db/lite-statements.ts).
  const prepared = new LiteStatements(lite);
  // Prisma's statements too, from a text's second run on (its texts are few shapes, each run again and again): the
  // adapter is given the database with its query() — and its transactions' — going through them.
  type QueryOptions = Parameters<PGlite['query']>[2];
  const preparable = (options: QueryOptions) =>
    !options || Object.keys(options).every((k) => k === 'rowMode' || k === 'parsers');
  const viaPrepared = <R>(
    sql: string,
    params: unknown[] | undefined,
    options: QueryOptions,
    inTransaction: boolean,
    unprepared: () => Promise<Results<R>>,
  ) =>
    preparable(options)
      ? prepared.results<R>(sql, params ?? [], (options ?? {}) as ResultOptions, inTransaction, unprepared)
      : unprepared();
  const forPrisma = {
    query: <R>(sql: string, params?: unknown[], options?: QueryOptions) => {
      statements++;
      seen(sql);
      return viaPrepared<R>(sql, params, options, false, () => query<R>(sql, params, options) as Promise<Results<R>>);
    },
    exec: lite.exec,
    transaction: <T>(fn: (tx: Transaction) => Promise<T>) =>
      transaction((tx) => {
        const txQuery = tx.query.bind(tx);
        tx.query = (<R>(sql: string, params?: unknown[], options?: QueryOptions) => {
          seen(sql);
          return viaPrepared<R>(
            sql,
            params,
            options,
            true,
            () => txQuery<R>(sql, params, options) as Promise<Results<R>>,
          );
        }) as typeof tx.query;
        observeExec(tx);
        return fn(tx);
      }),
  };
  // pglite-prisma-adapter pins an older @prisma/driver-adapter-utils: the runtime contract matches, the types differ.
  const prisma = new PrismaClient({
    adapter: new PrismaPGlite(forPrisma as unknown as PGlite) as unknown as PrismaPg,
    errorFormat: PRISMA_ERROR_FORMAT,
  });
  // One statement for the reads by key that arrive together; counted once, each read seen as it is asked.
  const liteShared = sharedReads(<R>(sql: string, params: unknown[]) => {
    statements++;
    return prepared.query<R>(sql, params, {});
  });
  const session: Session = {
    exec: async (sql) => {
      await lite.exec(sql);
    },
    query: async <R>(sql: string, params?: unknown[]) => (await lite.query<R>(sql, params)).rows,
  };
  return {
    kind: 'pglite',
    // The embedded database is one connection inside this process, open for its whole life.
    connections: () => ({ total: 1, idle: 0, waiting: 0 }),
    prisma,
    query: async <R>(sql: string, params?: unknown[], opts?: StatementOptions) => {
      statements++;
      seen(sql);
      // Unprepared: planned for its values every time, as an unnamed statement is, yet parsed once (a named statement
      // run with plan_cache_mode force_custom_plan): parsing and analysing a search statement cost the embedded
      // database about as much as planning it.
      return prepared.query<R>(sql, params, { customPlan: opts?.prepared === false });
    },
    readShared: <R extends { k: number }>(sql: string, key: number, params: unknown[] = []) => {
      seen(sql);
      return liteShared.read<R>(sql, key, params);
    },
    sharedReadCounts: () => liteShared.counts,
    cacheVersions: async ({ downloads = [], versions = [] } = {}) =>
      versionsOf(await prepared.query<{ t: string; v: string }>(VERSIONS_SQL, [downloads, versions]), downloads),
    compactCacheVersions: async () => {
      await prepared.query(COMPACT_SQL);
      await prepared.query(PRUNE_SQL);
    },
    onStatement: (fn) => {
      observers.push(fn);
    },
    session: (fn) => fn(session),
    transaction: (fn) =>
      lite.transaction((tx) =>
        fn({
          exec: async (sql) => {
            await tx.exec(sql);
          },
          // Named prepared statements, as query()'s; seen like the transaction's own statements.
          query: async <R>(sql: string, params?: unknown[]) => {
            seen(sql);
            return prepared.inTransaction<R>(sql, params);
          },
        }),
      ),
    ping: async () => {
      await lite.query('SELECT 1');
    },
    statements: () => statements,
    close: async () => {
      await prisma.$disconnect();
      await lite.close();
      unlock();
    },
  };
}

/**
 * The embedded database belongs to one process: a second one opening the same directory would corrupt it.
 * A lock file holds the owner's pid; a lock left by a process that no longer runs is taken over.
 */
function lockDirectory(dir: string): () => void {
  const lock = `${dir}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
      return () => fs.rmSync(lock, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(fs.readFileSync(lock, 'utf8'));
      let alive = false;
      try {
        if (owner > 0 && owner !== process.pid) {
          process.kill(owner, 0);
          alive = true;
        }
      } catch {
        alive = false;
      }
      if (alive) {
        throw new StartError(
          `The embedded database at ${dir} is in use by process ${owner}. Stop that process first, or point DATABASE_URL at a PostgreSQL server to run several instances.`,
        );
      }
      fs.rmSync(lock, { force: true });
    }
  }
  throw new StartError(`Could not lock the embedded database at ${dir}.`);
}

/** The read cache's own statements: not counted, not observed. */
const BOOKKEEPING = new Set([statementName(VERSIONS_SQL), statementName(COMPACT_SQL), statementName(PRUNE_SQL)]);

/** How long close() waits for connections in use by default (the service passes what remains of its grace). */
const CLOSE_DEADLINE_MS = 5_000;

async function openPostgres(url: string, poolSize: number, statementsPerKey: number): Promise<Database> {
  let statements = 0;
  const observers: ((sql: string | undefined, operation?: Operation) => void)[] = [];
  const seen = (sql: string | undefined, operation: Operation) => {
    for (const fn of observers) fn(sql, operation);
  };
  const { pool, destroy, cancel, end } = openPool(
    url,
    poolSize,
    (client) => {
      const query = client.query.bind(client);
      client.query = ((...args: unknown[]) => {
        const first = args[0] as string | { name?: string; text?: unknown } | undefined;
        if (typeof first === 'string' || !first?.name || !BOOKKEEPING.has(first.name)) {
          statements++;
          // Only an operation's statements: a job's (the outbox dispatcher, retries) belong to no answer. Named ones
          // come from query() below, which reports them itself: pg-pool may send a statement from the context of the
          // connection's previous holder, where the operation is not known.
          const operation =
            observers.length > 0 && !(typeof first === 'object' && first?.name) && operationOf(first, client);
          if (operation) {
            const sql = typeof first === 'string' ? first : first?.text;
            seen(typeof sql === 'string' ? sql : undefined, operation);
          }
        }
        return (query as (...a: unknown[]) => unknown)(...args);
      }) as typeof client.query;
    },
    statementsPerKey,
  );
  const bookkeeping = <R extends pg.QueryResultRow>(sql: string, values?: unknown[]) =>
    pool.query<R>({ name: statementName(sql), text: sql, values });
  /** One statement through the pool, bound to `operation` when given (not observed: query() and readShared() are). */
  const send = async <R>(sql: string, params: unknown[] | undefined, operation?: Operation, unnamed = false) => {
    const config: pg.QueryConfig & Carrier = unnamed
      ? { text: sql, values: params }
      : { name: statementName(sql), text: sql, values: params };
    if (operation) config[OPERATION] = operation;
    return (await pool.query(config)).rows as R[];
  };
  const pgShared = sharedReads((sql, params, operation) => send(sql, params, operation));
  const prisma = new PrismaClient({
    adapter: withReleasedTransactions(new PrismaPg(pool), { destroy, cancel }),
    errorFormat: PRISMA_ERROR_FORMAT,
  });
  return {
    kind: 'postgres',
    connections: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    url,
    prisma,
    query: async <R>(sql: string, params?: unknown[], opts?: StatementOptions) => {
      const operation = opts?.operation;
      if (observers.length > 0) {
        const of = operation ?? operationOf();
        if (of) seen(sql, of);
      }
      return send<R>(sql, params, operation, opts?.prepared === false);
    },
    readShared: <R extends { k: number }>(
      sql: string,
      key: number,
      params: unknown[] = [],
      opts?: StatementOptions,
    ) => {
      const operation = opts?.operation ?? operationOf();
      // Seen for each operation that asks (the read cache learns per answer what it read); the shared statement is
      // sent unobserved.
      if (observers.length > 0 && operation) seen(sql, operation);
      return pgShared.read<R>(sql, key, params, operation);
    },
    sharedReadCounts: () => pgShared.counts,
    async session(fn, operation) {
      const client = await pool.connect();
      // Every statement on it belongs to the operation (src/db/pool.ts reads it there).
      if (operation) (client as Carrier)[OPERATION] = operation;
      try {
        return await fn({
          exec: async (sql) => {
            await client.query(sql);
          },
          query: async <R>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as R[],
        });
      } finally {
        delete (client as Carrier)[OPERATION];
        client.release();
      }
    },
    async transaction(fn, operation) {
      const client = await pool.connect();
      if (operation) (client as Carrier)[OPERATION] = operation;
      try {
        await client.query('BEGIN');
        const out = await fn({
          exec: async (sql) => {
            await client.query(sql);
          },
          // Named: parsed and planned once per connection, as query()'s.
          query: async <R>(sql: string, params?: unknown[]) =>
            (await client.query({ name: statementName(sql), text: sql, values: params })).rows as R[],
        });
        await client.query('COMMIT');
        delete (client as Carrier)[OPERATION];
        client.release();
        return out;
      } catch (err) {
        delete (client as Carrier)[OPERATION];
        // Closed rather than rolled back and reused: its state is unknown (a statement may still be running), and
        // the session's end rolls the transaction back.
        destroy(client, err instanceof Error ? err : new Error(String(err)));
        throw err;
      }
    },
    ping: async () => {
      await pool.query('SELECT 1');
    },
    cacheVersions: async ({ downloads = [], versions = [] } = {}) =>
      versionsOf((await bookkeeping<{ t: string; v: string }>(VERSIONS_SQL, [downloads, versions])).rows, downloads),
    compactCacheVersions: async () => {
      await bookkeeping(COMPACT_SQL);
      await bookkeeping(PRUNE_SQL);
    },
    onStatement: (fn) => {
      observers.push(fn);
    },
    statements: () => statements,
    async close({ deadlineMs = CLOSE_DEADLINE_MS } = {}) {
      // Prisma rolls back its transactions first; one whose statement runs past the deadline is cut by end().
      const started = Date.now();
      await Promise.race([
        prisma.$disconnect().catch(() => {}),
        new Promise((resolve) => setTimeout(resolve, deadlineMs).unref()),
      ]);
      await end(Math.max(0, deadlineMs - (Date.now() - started)));
    },
  };
}
