// Embedded databases for the test apps of one worker, used again from file to file. Opening one (PGlite loading the
// build's migrated template) costs about half a second of CPU; a test app gives its database back when it closes, and
// the next test app gets it emptied back to the template: every table holding rows but the migrations' own is
// truncated and the rows the migrations seeded are put back, the sequences restarted, the session's settings and locks
// reset. A database whose schema no longer matches the template (a test that altered it) is closed instead of reused,
// as is one whose reset fails.
import type { Database } from '../../src/db/client.js';
import { openDatabase } from '../../src/db/client.js';
import { readTemplate } from '../../src/db/template.js';

/** Idle databases kept per worker: the most test apps one file has open at once, in practice. */
const KEEP = 4;

interface Pooled {
  db: Database;
  /** The current holder's statement observers (the database's own list only grows). */
  observers: ((sql: string | undefined) => void)[];
  /** The template's fingerprint and the rows of the tables the migrations filled, taken when it was opened. */
  fingerprint: string;
  seeded: { table: string; rows: unknown[] }[];
}

const idle: Pooled[] = [];
let template: Blob | undefined | null = null;

/** The build's migrated embedded database, read once per worker. */
export function pgliteTemplate(): Blob | undefined {
  if (template === null) template = readTemplate();
  return template;
}

/** What a test could change in the schema: tables, columns, indexes, functions, triggers and applied migrations. */
const FINGERPRINT = `SELECT md5(concat_ws('|',
  (SELECT string_agg(c.relname || ':' || c.relkind::text || ':' || a.attname || ':' || format_type(a.atttypid, a.atttypmod)
     || ':' || a.attnotnull, ',' ORDER BY c.relname, a.attnum)
   FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
   WHERE n.nspname = 'public'),
  (SELECT string_agg(p.proname || md5(p.prosrc), ',' ORDER BY p.proname, p.prosrc)
   FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'),
  (SELECT string_agg(t.tgname || ':' || t.tgenabled::text, ',' ORDER BY t.tgname)
   FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = 'public'),
  (SELECT string_agg(cfgname, ',' ORDER BY cfgname) FROM pg_ts_config),
  (SELECT string_agg(n.nspname, ',' ORDER BY n.nspname) FROM pg_namespace n),
  (SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles),
  (SELECT string_agg(migration_name || checksum, ',' ORDER BY migration_name) FROM _prisma_migrations)
)) AS f`;

const TABLES = `SELECT quote_ident(tablename) AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`;

async function open(): Promise<Pooled> {
  const db = await openDatabase({ memory: true, loadDataDir: pgliteTemplate() });
  const pooled: Pooled = { db, observers: [], fingerprint: '', seeded: [] };
  db.onStatement((sql) => {
    for (const fn of pooled.observers) fn(sql);
  });
  pooled.fingerprint = (await db.query<{ f: string }>(FINGERPRINT))[0]!.f;
  for (const { t } of await db.query<{ t: string }>(TABLES)) {
    const rows = (await db.query<{ r: unknown }>(`SELECT to_jsonb(x) AS r FROM ${t} x`)).map((r) => r.r);
    if (rows.length) pooled.seeded.push({ table: t, rows });
  }
  return pooled;
}

/** Empties a database a test app gave back; false when it cannot be used again. */
async function reset(p: Pooled): Promise<boolean> {
  try {
    await p.db.session(async (s) => {
      // A transaction a test left open (a statement cut off by a stop) would hold the rest: rolled back first.
      await s.exec('ROLLBACK');
      await s.exec('RESET ALL; SELECT pg_advisory_unlock_all()');
    });
    if ((await p.db.query<{ f: string }>(FINGERPRINT))[0]!.f !== p.fingerprint) return false;
    // Only the tables holding rows, and those the migrations seeded (a test may have emptied one), are truncated
    // (CASCADE adds those that reference them): a TRUNCATE gives each table new files, and emptying all forty took
    // 40-60 ms where a test writes to a handful of them.
    const tables = (await p.db.query<{ t: string }>(TABLES)).map((r) => r.t);
    const holding = (
      await p.db.query<{ t: string }>(
        tables
          .filter((t) => t !== '_prisma_migrations')
          .map((t) => `SELECT '${t.replaceAll("'", "''")}' AS t WHERE EXISTS (SELECT FROM ${t})`)
          .join(' UNION ALL '),
      )
    ).map((r) => r.t);
    for (const { table } of p.seeded)
      if (table !== '_prisma_migrations' && !holding.includes(table)) holding.push(table);
    await p.db.transaction(async (s) => {
      if (holding.length) await s.exec(`TRUNCATE ${holding.join(', ')} RESTART IDENTITY CASCADE`);
      for (const { table, rows } of p.seeded) {
        if (table === '_prisma_migrations') continue;
        await s.query(`INSERT INTO ${table} SELECT * FROM jsonb_populate_recordset(NULL::${table}, $1::jsonb)`, [
          JSON.stringify(rows),
        ]);
      }
      // Sequences no column owns are not restarted by TRUNCATE.
      await s.exec(`DO $$ DECLARE r record; BEGIN
        FOR r IN SELECT quote_ident(sequencename) AS s FROM pg_sequences WHERE schemaname = 'public' LOOP
          EXECUTE 'ALTER SEQUENCE ' || r.s || ' RESTART';
        END LOOP; END $$`);
    });
    return true;
  } catch {
    return false;
  }
}

/**
 * An embedded database as the template left it, for one test app: its `close()` gives it back (emptied for the next
 * one) instead of closing it.
 */
export async function leaseLite(): Promise<Database> {
  let p: Pooled | undefined;
  while (!p) {
    const candidate = idle.pop();
    if (!candidate) p = await open();
    else if (await reset(candidate)) p = candidate;
    else await candidate.db.close().catch(() => {});
  }
  const pooled = p;
  pooled.observers = [];
  const base = pooled.db.statements();
  let returned = false;
  // After close() the test app's handle refuses statements, as a closed database would: a job of the closed app still
  // running cannot write into the next app's database through them (its Prisma client is the one thing shared as is).
  const live =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> =>
      returned ? Promise.reject(new Error('database closed (given back to the pool)')) : fn(...args);
  const db = pooled.db;
  return {
    ...db,
    query: live(db.query) as Database['query'],
    readShared: live(db.readShared) as Database['readShared'],
    session: live(db.session) as Database['session'],
    transaction: live(db.transaction) as Database['transaction'],
    cacheVersions: live(db.cacheVersions) as Database['cacheVersions'],
    compactCacheVersions: live(db.compactCacheVersions) as Database['compactCacheVersions'],
    ping: live(db.ping) as Database['ping'],
    onStatement: (fn) => {
      pooled.observers.push(fn);
    },
    statements: () => pooled.db.statements() - base,
    close: async () => {
      if (returned) return;
      returned = true;
      pooled.observers = [];
      if (idle.length < KEEP) idle.push(pooled);
      else await pooled.db.close();
    },
  };
}
