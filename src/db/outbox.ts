// The transactional outbox: every domain event is a row written in the SAME transaction as the change that makes it,
// so an event exists exactly when its change committed (a rolled-back write leaves none, a crash after the commit
// loses none). The dispatcher (src/jobs/events.ts) claims the rows, feeds the subscriptions and queues webhook
// deliveries. A module records its events with its transaction client:
//
//   await db.transaction(async (tx) => { const [c] = await tx.query(INSERT_COMMENT, …); await recordEvent(tx, 'comment.posted', c.id, c.downloadId); });
import { sqlRows, type Sql } from './sql.js';

/** Every event type, in the order the API lists them. */
export const EVENT_TYPES = [
  'download.created',
  'download.updated',
  'download.state_changed',
  'download.deleted',
  'download.restored',
  'version.released',
  'file.added',
  'file.validated',
  'comment.posted',
  'comment.moderated',
  'review.posted',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * Records one event of the change being written through `tx` (a driver or a Prisma transaction, src/db/sql.ts).
 * `objectId` is the id of the object the type names (the download, version, file, comment or review); `downloadId`
 * the download it belongs to.
 */
export async function recordEvent(tx: Sql, type: EventType, objectId: number, downloadId: number): Promise<void> {
  await recordEvents(tx, [{ type, objectId, downloadId }]);
}

/** Several events of one change, in one statement. */
export async function recordEvents(
  tx: Sql,
  events: readonly { type: EventType; objectId: number; downloadId: number }[],
): Promise<void> {
  if (events.length === 0) return;
  await sqlRows(
    tx,
    // In the order given (the rows' ids keep it): a download's creation before its first release.
    `INSERT INTO event_outbox ("type", "objectId", "downloadId")
     SELECT t, o, d FROM unnest($1::text[], $2::int[], $3::int[]) WITH ORDINALITY AS e(t, o, d, n) ORDER BY n`,
    [events.map((e) => e.type), events.map((e) => e.objectId), events.map((e) => e.downloadId)],
  );
}
