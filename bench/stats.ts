// `npm run bench:stats [-- --database-url postgres://…] [--rounds 200]`: what the daily statistics cost. On a seeded
// catalogue (5,000 downloads; a fresh database of that server, dropped at the end, with --database-url):
//   - a view flush of 1,000 downloads, as it is (view_count UPDATE + the day's upsert) and without the upsert;
//   - one counted file download, as it is (three counters + the day's upsert) and without the upsert;
//   - a read of 30 and of 366 days of one download that has a row every day.
// Sequential, after a warm-up; prints p50 and max in ms. Direct on the database: no HTTP in between.
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openDatabase } from '../src/db/client.js';
import { countFileDownload } from '../src/modules/files/index.js';
import { flushViews } from '../src/modules/downloads/index.js';
import { readDailyStats, statsRange } from '../src/modules/stats/index.js';
import { seed, sizeFor } from './seed.js';

const { values: opts } = parseArgs({
  options: { 'database-url': { type: 'string' }, rounds: { type: 'string', default: '200' } },
});
const ROUNDS = Number(opts.rounds);
const server = opts['database-url'];
const dbName = `dcs_bench_stats_${process.pid}`;
const onServer = async (sql: string) => {
  const c = new pg.Client({ connectionString: server });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
};
let dbUrl: string | undefined;
if (server) {
  await onServer(`CREATE DATABASE "${dbName}"`);
  const url = new URL(server);
  url.pathname = `/${dbName}`;
  dbUrl = url.toString();
}
const db = await openDatabase(dbUrl ? { url: dbUrl } : { memory: true });
const s = await seed(db, 'dm_bench_stats_key_00000000000000000000000000', sizeFor(5000));
const prisma = db.prisma;

async function measure(name: string, rounds: number, fn: (i: number) => Promise<unknown>) {
  for (let i = 0; i < Math.min(20, rounds); i++) await fn(i); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    await fn(i);
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  const p50 = ms[Math.floor(ms.length / 2)]!;
  console.log(`${name.padEnd(52)} p50 ${p50.toFixed(2).padStart(7)} ms   max ${ms.at(-1)!.toFixed(2).padStart(7)} ms`);
}

const ids = (await prisma.download.findMany({ select: { id: true }, take: 1000, orderBy: { id: 'asc' } })).map(
  (d) => d.id,
);
const batch = new Map(ids.map((id, i) => [id, 1 + (i % 5)]));
const flushRounds = Math.max(10, Math.round(ROUNDS / 10));
await measure(`view flush, ${ids.length} downloads (with the day's upsert)`, flushRounds, () =>
  flushViews(prisma, batch),
);
const idList = [...batch.keys()];
const nList = [...batch.values()];
await measure(`view flush, ${ids.length} downloads (UPDATE alone, as before)`, flushRounds, () =>
  prisma.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT pg_current_xact_id()::text AS xid`;
    await tx.$executeRaw`
      UPDATE "download" d SET "viewCount" = d."viewCount" + v.n
      FROM unnest(${idList}::int[], ${nList}::int[]) AS v(id, n) WHERE d.id = v.id`;
  }),
);

const file = await prisma.file.findFirstOrThrow({ where: { versionId: s.versionId }, include: { version: true } });
await measure("file download counted (with the day's upsert)", ROUNDS, () => countFileDownload(db, file));
await measure('file download counted (three counters alone, as before)', ROUNDS, () =>
  prisma.$transaction([
    prisma.file.update({ where: { id: file.id }, data: { downloadCount: { increment: 1 } } }),
    prisma.version.update({ where: { id: file.versionId }, data: { downloadCount: { increment: 1 } } }),
    prisma.download.update({ where: { id: file.version.downloadId }, data: { downloadCount: { increment: 1 } } }),
  ]),
);

// A year of rows for one download, then reads of its last 30 and 366 days.
await prisma.$executeRaw`
  INSERT INTO "download_daily_stats" ("downloadId", "day", "downloads", "views")
  SELECT ${s.downloadId}, d::date, 3, 7 FROM generate_series(current_date - 400, current_date, interval '1 day') d
  ON CONFLICT DO NOTHING`;
const rows = await prisma.downloadDailyStat.count();
console.log(`(${rows} daily rows in the table)`);
const month = statsRange(undefined, undefined);
const yearRange = statsRange(new Date(Date.now() - 365 * 86_400_000).toISOString().slice(0, 10), undefined);
await measure('stats read, 30 days (the default)', ROUNDS, () => readDailyStats(prisma, s.downloadId, month));
await measure('stats read, 366 days (the bound)', ROUNDS, () => readDailyStats(prisma, s.downloadId, yearRange));

await db.close();
if (server) await onServer(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
