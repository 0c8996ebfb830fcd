// What the read cache's version triggers (migration 20270110000000_cache_versions) cost a write: the same writes with
// the cache_bump_* triggers disabled, then enabled, alternating, on a seeded catalogue. Two writes: an edit (one
// UPDATE of a download's tag line: bumps "download") and a file downloaded as the service counts it (one
// transaction: file, version and download counters, and the daily statistics row: bumps the "#counts" versions).
// Every writer inserts its bump rows; none waits on another's (compare the p99 at 1 and 32 connections).
//
//   npx tsx bench/cache-writes.ts --database-url postgres://postgres@127.0.0.1:5432/test [--seconds 4] [--connections 1,32]
//   npx tsx bench/cache-writes.ts            # the embedded database (one connection)
//
// Run it under `flock /tmp/bench.lock`. Prints writes/s and p50/p99 per write, connections and trigger state.
import crypto from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openDatabase, type Database } from '../src/db/client.js';
import { seed, sizeFor } from './seed.js';

const { values: args } = parseArgs({
  options: {
    'database-url': { type: 'string' },
    seconds: { type: 'string', default: '4' },
    connections: { type: 'string', default: '1,32' },
    downloads: { type: 'string', default: '5000' },
  },
});
const seconds = Number(args.seconds);
const downloads = Number(args.downloads);

interface Runner {
  /** Runs `sql` statements (one transaction when several). */
  run(statements: [string, unknown[]][]): Promise<void>;
  triggers(on: boolean): Promise<void>;
  close(): Promise<void>;
}

const TRIGGERS = ['cache_bump_ins', 'cache_bump_upd', 'cache_bump_del', 'cache_bump_truncate'];

async function tables(db: Database): Promise<string[]> {
  const rows = await db.query<{ t: string }>(
    `SELECT DISTINCT c.relname::text AS t FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid WHERE g.tgname = 'cache_bump_ins'`,
  );
  return rows.map((r) => r.t);
}

async function openRunner(db: Database, url: string | undefined, size: number): Promise<Runner> {
  const names = await tables(db);
  const triggers = async (on: boolean) => {
    for (const t of names)
      for (const g of TRIGGERS) await db.query(`ALTER TABLE "${t}" ${on ? 'ENABLE' : 'DISABLE'} TRIGGER "${g}"`);
  };
  if (!url) {
    return {
      async run(statements) {
        if (statements.length === 1) {
          await db.prisma.$executeRawUnsafe(statements[0]![0], ...statements[0]![1]);
          return;
        }
        await db.prisma.$transaction(statements.map(([sql, p]) => db.prisma.$executeRawUnsafe(sql, ...p)));
      },
      triggers,
      close: async () => {},
    };
  }
  const pool = new pg.Pool({ connectionString: url, max: size });
  return {
    async run(statements) {
      const c = await pool.connect();
      try {
        if (statements.length > 1) await c.query('BEGIN');
        for (const [sql, p] of statements) await c.query(sql, p);
        if (statements.length > 1) await c.query('COMMIT');
      } finally {
        c.release();
      }
    },
    triggers,
    close: () => pool.end(),
  };
}

const EDIT = 'UPDATE download SET "tagLine" = $1 WHERE id = $2';
const COUNT: string[] = [
  'UPDATE file SET "downloadCount" = "downloadCount" + 1 WHERE id = (SELECT min(f.id) FROM file f JOIN version v ON v.id = f."versionId" WHERE v."downloadId" = $1)',
  'UPDATE version SET "downloadCount" = "downloadCount" + 1 WHERE "downloadId" = $1',
  'UPDATE download SET "downloadCount" = "downloadCount" + 1 WHERE id = $1',
  `INSERT INTO download_daily_stats ("downloadId", "day", "downloads") VALUES ($1, (now() AT TIME ZONE 'UTC')::date, 1)
   ON CONFLICT ("downloadId", "day") DO UPDATE SET "downloads" = download_daily_stats."downloads" + 1`,
];

async function measure(runner: Runner, connections: number, write: 'edit' | 'count') {
  const until = Date.now() + seconds * 1000;
  const times: number[] = [];
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < until) {
        const id = 1 + Math.floor(Math.random() * downloads);
        const started = performance.now();
        if (write === 'edit') await runner.run([[EDIT, [`tag ${crypto.randomUUID()}`, id]]]);
        else await runner.run(COUNT.map((sql) => [sql, [id]]));
        times.push(performance.now() - started);
      }
    }),
  );
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(2);
  return { perSecond: Math.round(times.length / seconds), p50: at(0.5), p99: at(0.99) };
}

async function main() {
  let url = args['database-url'];
  let drop = async () => {};
  if (url) {
    const name = `dcs_cache_writes_${process.pid}`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${name}"`);
    await admin.end();
    const base = url;
    const u = new URL(url);
    u.pathname = `/${name}`;
    url = u.toString();
    drop = async () => {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    };
  }
  const db = await openDatabase(url ? { url } : { memory: true });
  try {
    await seed(db, `dcs_${crypto.randomBytes(24).toString('hex')}`, sizeFor(downloads));
    const levels = url ? args.connections.split(',').map(Number) : [1];
    console.log(`${url ? 'PostgreSQL server' : 'embedded database'}, ${downloads} downloads, ${seconds} s per run`);
    console.log('write  conns  triggers  writes/s  p50 ms  p99 ms');
    for (const connections of levels) {
      const runner = await openRunner(db, url, connections);
      for (const write of ['edit', 'count'] as const) {
        for (const on of [false, true, false, true]) {
          await runner.triggers(on);
          const r = await measure(runner, connections, write);
          console.log(
            `${write.padEnd(6)} ${String(connections).padStart(5)}  ${(on ? 'on' : 'off').padEnd(8)}  ${String(r.perSecond).padStart(8)}  ${r.p50.padStart(6)}  ${r.p99.padStart(6)}`,
          );
        }
      }
      await runner.triggers(true);
      await runner.close();
    }
    const pending = await db.query<{ n: string }>('SELECT count(*)::text AS n FROM cache_bumps');
    console.log(`bump rows waiting at the end: ${pending[0]!.n}`);
  } finally {
    await db.close();
    await drop();
  }
}

await main();
