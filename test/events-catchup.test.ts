// What an instance's subscribing connection missed during a Redis outage: Catchup (src/events.ts) delivers each
// outbox event once, whether it came from Redis or was read back, and replays in outbox order; dispatchedSince
// (src/jobs/events.ts) reads the window back from the outbox, after the dispatches in progress have committed.
// The end-to-end outage is test/redis-outage.test.ts.
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Catchup, type DispatchedEvent, type ReadDispatched } from '../src/events.js';
import { dispatchedSince } from '../src/jobs/events.js';
import { openDatabase } from '../src/db/client.js';
import type { Database } from '../src/db/database.js';
import { forEachDatabase, migratedDatabase } from './helpers/app.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const silent = pino({ level: 'silent' });

const msg = (payload: object) => JSON.stringify(payload);
const comment = (id: number, commentId = id): DispatchedEvent => ({
  id: BigInt(id),
  type: 'comment.posted',
  objectId: commentId,
  downloadId: 7,
});

function setup(pages: DispatchedEvent[][] | (() => Promise<DispatchedEvent[][]>), opts = {}) {
  const delivered: [string, string][] = [];
  const asked: number[] = [];
  const catchup = new Catchup((c, m) => delivered.push([c, m]), 'p:', silent, {
    marginMs: 1000,
    remember: 100,
    startedAt: 0,
    ...opts,
  });
  const read: ReadDispatched = async function* (msAgo) {
    asked.push(msAgo);
    for (const page of typeof pages === 'function' ? await pages() : pages) yield page;
  };
  catchup.readFrom(read);
  return { catchup, delivered, asked };
}

describe('Catchup', () => {
  it('delivers a message with an outbox id once, and every message without one', () => {
    const { catchup, delivered } = setup([]);
    catchup.message('p:commentPosted:7', msg({ commentId: 1, downloadId: 7, eventId: '1' }));
    catchup.message('p:commentPosted:7', msg({ commentId: 1, downloadId: 7, eventId: '1' }));
    catchup.message('p:apiKeyRevoked:3', msg({ apiKeyId: 3 }));
    catchup.message('p:apiKeyRevoked:3', msg({ apiKeyId: 3 }));
    catchup.message('p:other', 'not json');
    expect(delivered.map(([c]) => c)).toEqual([
      'p:commentPosted:7',
      'p:apiKeyRevoked:3',
      'p:apiKeyRevoked:3',
      'p:other',
    ]);
  });

  it('replays, in outbox order, what was dispatched since the loss (less the margin), skipping what it already delivered and what no subscription hears', async () => {
    const { catchup, delivered, asked } = setup([
      [comment(4), comment(5, 50)],
      [
        { id: 6n, type: 'version.released', objectId: 60, downloadId: 7 },
        { id: 7n, type: 'file.added', objectId: 1, downloadId: 7 },
      ],
      [{ id: 8n, type: 'download.deleted', objectId: 7, downloadId: 7 }],
    ]);
    catchup.message('p:commentPosted:7', msg({ commentId: 4, downloadId: 7, eventId: '4' }));
    const lostAt = Date.now() - 5000;
    catchup.lost(lostAt);
    expect(catchup.behind).toBe(true);
    await catchup.restored();
    expect(asked).toHaveLength(1);
    // From the loss less the margin (1 s here), measured when the read starts.
    expect(asked[0]).toBeGreaterThanOrEqual(6000);
    expect(asked[0]).toBeLessThan(7000);
    expect(delivered).toEqual([
      ['p:commentPosted:7', msg({ commentId: 4, downloadId: 7, eventId: '4' })],
      ['p:commentPosted:7', msg({ commentId: 50, downloadId: 7, eventId: '5' })],
      ['p:versionReleased', msg({ versionId: 60, downloadId: 7, eventId: '6' })],
      ['p:downloadChanged:7', msg({ downloadId: 7, eventId: '8' })],
    ]);
    expect(catchup.behind).toBe(false);
    // The publisher's kept copy arriving later is not delivered again; a restoration with nothing lost reads nothing.
    catchup.message('p:commentPosted:7', msg({ commentId: 50, downloadId: 7, eventId: '5' }));
    await catchup.restored();
    expect(delivered).toHaveLength(4);
    expect(asked).toHaveLength(1);
  });

  it('never reads from before the instance started', async () => {
    const startedAt = Date.now() - 300;
    const { catchup, asked } = setup([], { startedAt, marginMs: 60_000 });
    catchup.lost(startedAt + 100);
    await catchup.restored();
    expect(asked[0]).toBeGreaterThanOrEqual(300);
    expect(asked[0]).toBeLessThan(1000);
  });

  it('holds messages arriving during the read and delivers them after, once', async () => {
    let release = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const { catchup, delivered } = setup(async () => {
      await gate;
      return [[comment(1), comment(2)]];
    });
    catchup.lost();
    const replay = catchup.restored();
    await sleep(10);
    catchup.message('p:commentPosted:7', msg({ commentId: 2, downloadId: 7, eventId: '2' })); // also read back
    catchup.message('p:commentPosted:7', msg({ commentId: 3, downloadId: 7, eventId: '3' })); // newer
    expect(delivered).toEqual([]);
    release();
    await replay;
    expect(delivered.map(([, m]) => JSON.parse(m).commentId)).toEqual([1, 2, 3]);
  });

  it('a read that fails lets the held messages through and stays behind; the next restoration reads from the first loss', async () => {
    let fail = true;
    const { catchup, delivered, asked } = setup(async () => {
      if (fail) throw new Error('database unreachable');
      return [[comment(1)]];
    });
    catchup.lost(Date.now() - 2000);
    const replay = catchup.restored();
    catchup.message('p:commentPosted:7', msg({ commentId: 9, downloadId: 7, eventId: '9' }));
    await replay;
    expect(delivered).toHaveLength(1);
    expect(catchup.behind).toBe(true);
    fail = false;
    catchup.lost(); // a second loss keeps the first one's time
    await catchup.restored();
    expect(asked[1]).toBeGreaterThanOrEqual(3000);
    expect(delivered.map(([, m]) => JSON.parse(m).commentId)).toEqual([9, 1]);
    expect(catchup.behind).toBe(false);
    catchup.close();
  });

  it('a loss during the read keeps it behind for the next restoration', async () => {
    const { catchup } = setup(async () => {
      catchup.lost();
      return [];
    });
    catchup.lost();
    await catchup.restored();
    expect(catchup.behind).toBe(true);
  });

  it('with nobody subscribed, forgets the loss', () => {
    const { catchup } = setup([]);
    catchup.lost();
    catchup.forget();
    expect(catchup.behind).toBe(false);
  });

  it('remembers the newest ids only, up to its bound', () => {
    const { catchup, delivered } = setup([], { remember: 2 });
    for (const id of ['1', '2', '3', '1']) catchup.message('p:c', msg({ eventId: id }));
    expect(delivered.map(([, m]) => JSON.parse(m).eventId)).toEqual(['1', '2', '3', '1']);
    catchup.message('p:c', msg({ eventId: '3' }));
    expect(delivered).toHaveLength(4);
  });
});

const pages = async (it: AsyncIterable<DispatchedEvent[]>) => {
  const all: DispatchedEvent[][] = [];
  for await (const p of it) all.push(p);
  return all;
};

forEachDatabase((kind) => {
  describe('dispatchedSince', () => {
    let db: Database;
    let drop: () => Promise<void>;
    let url: string | undefined;
    beforeAll(async () => {
      const fresh = await migratedDatabase(kind);
      drop = fresh.drop;
      if ('url' in fresh.target) url = fresh.target.url;
      db = await openDatabase(fresh.target);
    }, 60_000);
    afterAll(async () => {
      await db?.close();
      await drop?.();
    });

    it('reads the subscribed events dispatched within the window, in outbox order, in pages', async () => {
      await db.prisma.$executeRaw`DELETE FROM event_outbox`;
      // Dispatched 10 minutes ago; 1,200 comments just now; a file event (webhooks only); one not dispatched.
      await db.prisma.$executeRaw`INSERT INTO event_outbox (type, "objectId", "downloadId", "dispatchedAt")
        VALUES ('comment.posted', 1, 1, now() - interval '10 minutes')`;
      await db.prisma.$executeRaw`INSERT INTO event_outbox (type, "objectId", "downloadId", "dispatchedAt")
        SELECT 'comment.posted', g, 1, now() FROM generate_series(2, 1201) g`;
      await db.prisma.$executeRaw`INSERT INTO event_outbox (type, "objectId", "downloadId", "dispatchedAt")
        VALUES ('file.added', 5000, 1, now()), ('version.released', 5001, 1, NULL)`;
      const got = await pages(dispatchedSince(db.prisma, 60_000));
      expect(got.map((p) => p.length)).toEqual([500, 500, 200]);
      const objects = got.flat().map((e) => e.objectId);
      expect(objects).toEqual(Array.from({ length: 1200 }, (_, i) => i + 2));
      const ids = got.flat().map((e) => BigInt(e.id));
      expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      expect(await pages(dispatchedSince(db.prisma, 60 * 60_000))).toHaveLength(3);
    });

    it.skipIf(kind !== 'postgres')(
      'waits for a dispatch in progress, whose publication may already be out, and then sees its row',
      async () => {
        await db.prisma.$executeRaw`DELETE FROM event_outbox`;
        const [row] = await db.prisma.$queryRaw<{ id: bigint }[]>`
          INSERT INTO event_outbox (type, "objectId", "downloadId") VALUES ('comment.posted', 77, 1) RETURNING id`;
        // A dispatcher of another instance, as EventDispatcher.dispatch does it, stopped before its commit.
        const other = new pg.Client({ connectionString: url });
        await other.connect();
        try {
          await other.query('BEGIN');
          await other.query('SELECT pg_advisory_xact_lock_shared(72640338, 0)');
          await other.query(
            'SELECT id FROM event_outbox WHERE "dispatchedAt" IS NULL ORDER BY id FOR UPDATE SKIP LOCKED',
          );
          await other.query('UPDATE event_outbox SET "dispatchedAt" = clock_timestamp() WHERE id = $1', [row!.id]);
          let done = false;
          const read = pages(dispatchedSince(db.prisma, 60_000)).finally(() => {
            done = true;
          });
          await sleep(300);
          expect(done).toBe(false);
          await other.query('COMMIT');
          const got = (await read).flat();
          expect(got.map((e) => e.objectId)).toEqual([77]);
        } finally {
          await other.end();
        }
      },
    );
  });
});
