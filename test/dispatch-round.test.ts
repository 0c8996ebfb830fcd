// The outbox dispatcher's round through the driver (src/jobs/events.ts) and the raw transactions it runs in
// (Database.transaction): what a round sends, and that a failed transaction leaves nothing behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, migratedDatabase } from './helpers/app.js';
import { openDatabase, type Database } from '../src/db/client.js';
import type { Events } from '../src/events.js';
import { EventDispatcher } from '../src/jobs/events.js';
import type { Logger } from '../src/log.js';

forEachDatabase((kind) => {
  describe('dispatch round', () => {
    let db: Database;
    let drop = async () => {};
    let seen = 0;
    const published: [string, number, number, bigint | undefined][] = [];
    let dispatcher: EventDispatcher;
    const sent = () => (db.kind === 'postgres' ? db.statements() : seen);

    beforeAll(async () => {
      const m = await migratedDatabase(kind);
      drop = m.drop;
      db = await openDatabase(m.target);
      db.onStatement(() => seen++);
      const events = {
        publishEvent: (type: string, objectId: number, downloadId: number, id?: bigint) =>
          published.push([type, objectId, downloadId, id]),
      } as unknown as Events;
      const log = { warn() {}, info() {}, error() {} } as unknown as Logger;
      dispatcher = new EventDispatcher(db, events, log, {
        render: async () => null,
        retrySeconds: [],
        timeoutMs: 1000,
        pollMs: 60_000,
        allowPrivate: true,
      });
    });
    afterAll(async () => {
      await db?.close();
      await drop();
    });

    it('a transaction commits when its function returns, rolls back when it throws; the database goes on', async () => {
      await db.transaction((s) => s.exec('CREATE TABLE dispatch_t (id int)'));
      await db.transaction((s) => s.query('INSERT INTO dispatch_t VALUES ($1)', [1]));
      await expect(
        db.transaction(async (s) => {
          await s.query('INSERT INTO dispatch_t VALUES ($1)', [2]);
          throw new Error('no');
        }),
      ).rejects.toThrow('no');
      await expect(db.transaction((s) => s.query('INSERT INTO dispatch_t VALUES ($1)', ['x']))).rejects.toThrow();
      expect(await db.query<{ id: number }>('SELECT id FROM dispatch_t ORDER BY id', [], { prepared: false })).toEqual([
        { id: 1 },
      ]);
    });

    it('nothing to dispatch: one statement; a row: claimed, queued for the matching webhooks, marked, published', async () => {
      const before = sent();
      expect(await dispatcher.dispatch()).toBe(0);
      expect(sent() - before).toBe(1);

      const hook = (events: string[], createdAt = "now() - interval '1 hour'") =>
        db.query<{ id: number }>(
          `INSERT INTO webhook (url, events, secret, "createdAt") VALUES ('http://127.0.0.1:9/', $1, 's', ${createdAt})
           RETURNING id`,
          [events],
          { prepared: false },
        );
      const [all] = await hook(['*']);
      const [posted] = await hook(['comment.posted']);
      await hook(['download.updated']); // another event
      await hook(['*'], "now() + interval '1 hour'"); // created after the event
      const [row] = await db.query<{ id: string }>(
        `INSERT INTO event_outbox (type, "objectId", "downloadId") VALUES ('comment.posted', 7, 3) RETURNING id::text`,
        [],
        { prepared: false },
      );
      published.length = 0;
      expect(await dispatcher.dispatch()).toBe(1);
      expect(published).toEqual([['comment.posted', 7, 3, BigInt(row!.id)]]);
      const deliveries = await db.query<{ webhookId: number; eventId: string }>(
        `SELECT "webhookId", "eventId"::text AS "eventId" FROM webhook_delivery ORDER BY id`,
        [],
        { prepared: false },
      );
      expect(deliveries).toEqual([
        { webhookId: all!.id, eventId: row!.id },
        { webhookId: posted!.id, eventId: row!.id },
      ]);
      const [marked] = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM event_outbox WHERE "dispatchedAt" IS NOT NULL`,
        [],
        { prepared: false },
      );
      expect(marked!.n).toBe(1);
      // Dispatched once: the next round finds nothing.
      published.length = 0;
      expect(await dispatcher.dispatch()).toBe(0);
      expect(published).toEqual([]);
    });
  });
});
