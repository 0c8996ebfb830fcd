// The transactional outbox: every domain event is a row written in the SAME transaction as the change that makes it,
// so an event exists exactly when its change committed (a rolled-back write leaves none, a crash after the commit
// loses none). The dispatcher (src/jobs/events.ts) claims the rows, feeds the subscriptions and queues webhook
// deliveries. A module records its events with its transaction client:
//
//   await prisma.$transaction(async (tx) => { const c = await tx.comment.create(…); await recordEvent(tx, 'comment.posted', c.id, c.downloadId); });
import type { Prisma } from '../generated/prisma/client.js';

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

/** What writes the outbox row: a transaction client (or the client itself, for a write that is one statement). */
type Writer = Pick<Prisma.TransactionClient, 'eventOutbox'>;

/**
 * Records one event of the change being written through `tx`. `objectId` is the id of the object the type names
 * (the download, version, file, comment or review); `downloadId` the download it belongs to.
 */
export async function recordEvent(tx: Writer, type: EventType, objectId: number, downloadId: number): Promise<void> {
  await tx.eventOutbox.create({ data: { type, objectId, downloadId }, select: { id: true } });
}

/** Several events of one change, in one statement. */
export async function recordEvents(
  tx: Writer,
  events: readonly { type: EventType; objectId: number; downloadId: number }[],
): Promise<void> {
  if (events.length > 0) await tx.eventOutbox.createMany({ data: [...events] });
}
