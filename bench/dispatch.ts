// CPU and statements per outbox dispatcher round, in-process (`npm run bench:dispatch [-- --database-url …]`).
// Each round dispatches one outbox row written just before it (the write is not timed), with no webhook, then with
// one webhook for every event (a delivery queued per round). The CPU of this process is summed over the rounds alone
// (process.cpuUsage around each awaited call; nothing else runs meanwhile): on the embedded database that includes
// the database's own work, on a server only the client's. Beside the dispatcher, for comparison, the round as it was
// through Prisma's interactive transaction (`prismaRound`, the same statements as before the round went through the
// driver), and an idle round (nothing to dispatch).
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openDatabase, type Database } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';
import { readTemplate } from '../src/db/template.js';
import type { Events } from '../src/events.js';
import { EventDispatcher } from '../src/jobs/events.js';
import type { Logger } from '../src/log.js';

const { values: opts } = parseArgs({
  options: { 'database-url': { type: 'string' }, rounds: { type: 'string', default: '500' } },
});
const ROUNDS = Number(opts.rounds);

/** The dispatch round as it was (Prisma's interactive transaction), kept here to measure against. */
async function prismaRound(db: Database): Promise<number> {
  return db.prisma.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ id: bigint; type: string; downloadId: number; createdAt: Date }[]>`
      SELECT id, type, "objectId", "downloadId", "createdAt" FROM event_outbox
      WHERE "dispatchedAt" IS NULL ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED`;
    if (rows.length === 0) return 0;
    await tx.$queryRaw`SELECT pg_advisory_xact_lock_shared(72640338, 0)::text`;
    const hooks = await tx.webhook.findMany({
      where: { active: true },
      select: { id: true, events: true, categoryId: true, downloadId: true, createdAt: true },
    });
    const data = rows.flatMap((r) =>
      hooks
        .filter((h) => h.createdAt <= r.createdAt && (h.events.includes('*') || h.events.includes(r.type)))
        .map((h) => ({
          webhookId: h.id,
          eventId: r.id,
          type: r.type,
          objectId: 1,
          downloadId: 1,
          eventAt: r.createdAt,
        })),
    );
    if (data.length > 0) await tx.webhookDelivery.createMany({ data });
    await tx.$executeRaw`UPDATE event_outbox SET "dispatchedAt" = clock_timestamp() WHERE id = ANY(${rows.map((r) => r.id)}::bigint[])`;
    return rows.length;
  });
}

let dropDatabase = async () => {};
let db: Database;
if (opts['database-url']) {
  const name = `bench_dispatch_${process.pid}`;
  const admin = new pg.Client({ connectionString: opts['database-url'] });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const u = new URL(opts['database-url']);
  u.pathname = `/${name}`;
  db = await openDatabase({ url: u.toString() });
  await migrate(db);
  dropDatabase = async () => {
    const c = new pg.Client({ connectionString: opts['database-url'] });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await c.end();
  };
} else {
  db = await openDatabase({ memory: true, loadDataDir: readTemplate() });
  await migrate(db);
}
// Every statement, in transactions or not (on a server, statements() counts them all; onStatement only an operation's).
let seen = 0;
db.onStatement(() => seen++);
const sent = () => (db.kind === 'postgres' ? db.statements() : seen);

const events = { publishEvent() {} } as unknown as Events;
const log = { warn() {}, info() {}, error() {} } as unknown as Logger;
const dispatcher = new EventDispatcher(db, events, log, {
  render: async () => null,
  retrySeconds: [],
  timeoutMs: 1000,
  pollMs: 60_000,
  allowPrivate: true,
});

async function measure(label: string, round: () => Promise<unknown>, write: boolean): Promise<void> {
  let cpu = 0;
  let statements = 0;
  for (let i = 0; i < ROUNDS + 50; i++) {
    if (write)
      await db.query(`INSERT INTO event_outbox (type, "objectId", "downloadId") VALUES ('comment.posted', 1, 1)`);
    const before = process.cpuUsage();
    const n = sent();
    await round();
    const used = process.cpuUsage(before);
    // The first 50 warm up (compiled queries, prepared statements, JIT).
    if (i >= 50) {
      cpu += used.user + used.system;
      statements += sent() - n;
    }
  }
  console.log(
    `${label.padEnd(56)} ${(cpu / ROUNDS / 1000).toFixed(3)} ms CPU/round, ${(statements / ROUNDS).toFixed(1)} statements/round`,
  );
}

console.log(`${db.kind}, ${ROUNDS} rounds each`);
for (const hooks of [0, 1]) {
  if (hooks) await db.prisma.webhook.create({ data: { url: 'http://127.0.0.1:9/', events: ['*'], secret: 's' } });
  const w = `${hooks} webhook${hooks === 1 ? '' : 's'}`;
  await measure(`before: Prisma transaction, 1 row, ${w}`, () => prismaRound(db), true);
  await measure(`after: dispatch() through the driver, 1 row, ${w}`, () => dispatcher.dispatch(), true);
}
await measure('before: Prisma transaction, nothing to dispatch', () => prismaRound(db), false);
await measure('after: dispatch(), nothing to dispatch', () => dispatcher.dispatch(), false);
await db.query('DELETE FROM webhook_delivery');
await measure('after: deliverDue(), nothing due (each round)', () => dispatcher.deliverDue(), false);
await db.close();
await dropDatabase();
