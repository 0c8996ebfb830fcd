// The outbox dispatcher: the one path from a committed change to its subscribers and webhooks. Every instance runs
// one; they share the work through the database. A write of this instance wakes its dispatcher at once
// (Events.written); rows written by other instances, or left by an instance that died, are found by a short poll.
//
// 1. Dispatch: claim undispatched outbox rows (FOR UPDATE SKIP LOCKED: two instances never claim the same row),
//    queue a delivery per matching webhook, mark the rows dispatched and publish each to the subscriptions (through
//    Redis when set), all in one transaction. A crash before the commit leaves the rows for the next claim
//    (at-least-once); a rolled-back write never wrote a row. An instance whose Redis subscription was lost reads
//    back the rows dispatched since (dispatchedSince), so the dispatched time is set before anything is published.
// 2. Deliver: claim due deliveries with a lease (their next attempt moved past the attempt's deadline, in the same
//    statement), POST each (webhook-send.ts), log the attempt, then settle it: delivered, retried later per the
//    schedule, or failed. An instance killed mid-attempt leaves the lease to expire and another takes it again, with
//    the same webhook-id. The owner's right to view the object is checked at that moment (render): an event the
//    owner may not see is skipped, not sent.
// 3. Prune: dispatched rows and finished deliveries older than LIMITS.outboxRetentionMs.
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Logger } from '../log.js';
import type { Database } from '../db/database.js';
import { LIMITS } from '../config.js';
import { SUBSCRIBED_TYPES, type DispatchedEvent, type Events } from '../events.js';
import { send, type Attempt } from './webhook-send.js';
import { unbound } from '../db/operation-scope.js';

/** Who a webhook belongs to: a user, or a super-user key (userId 0). */
export interface WebhookOwner {
  userId: number;
  apiKeyId: number | null;
}

/**
 * The object an event names, as the REST face shows it to `owner` (snake_case), or null when the owner may not view
 * it (or it is gone). Provided by the app (it runs the REST documents as the owner).
 */
export type Render = (owner: WebhookOwner, type: string, objectId: number, downloadId: number) => Promise<unknown>;

export interface DispatcherOptions {
  render: Render;
  retrySeconds: readonly number[];
  timeoutMs: number;
  pollMs: number;
  allowPrivate: boolean;
}

/** Figures for /metrics. */
export class DispatchStats {
  attempts = 0;
  failures = 0;
  /** Hears commit → first attempt, in seconds (the /metrics histogram, a benchmark). */
  onFirstAttempt?: (seconds: number) => void;
  onAttempt?: (a: Attempt, type: string) => void;
}

interface DeliveryRow {
  id: number;
  webhookId: number;
  eventId: bigint;
  type: string;
  objectId: number;
  downloadId: number;
  eventAt: Date;
  attempts: number;
}

/** As deliverDue's statement returns a delivery: the outbox id as text, the event's time in epoch milliseconds. */
type ClaimedRow = Omit<DeliveryRow, 'eventId' | 'eventAt'> & { eventId: string; eventAt: number };

const BATCH = 100;
/** Delivery attempts in flight at once per instance (each holds a pool connection for its bookkeeping now and then). */
const DELIVERY_BATCH = 8;
const PRUNE_EVERY_MS = 60_000;
/**
 * Held shared by every dispatch transaction that claimed rows, from before it publishes to its commit; taken alone, for a moment, by a
 * replay (dispatchedSince) to wait for the dispatches in progress, whose publications may already have gone out.
 */
const DISPATCH_LOCK = [72640338, 0] as const;
/** Whether any outbox row waits (the index on dispatchedAt, id): an idle round's one statement. */
const DUE_SQL = 'SELECT EXISTS (SELECT 1 FROM event_outbox WHERE "dispatchedAt" IS NULL) AS due';

/**
 * A dispatch round's work in one statement ($1 BATCH, $2 and $3 DISPATCH_LOCK), in its transaction:
 * - claims the oldest undispatched rows, FOR UPDATE SKIP LOCKED (two instances never claim the same row);
 * - takes the shared DISPATCH_LOCK when it claimed any, held until the commit, so from before anything is published
 *   (see dispatchedSince);
 * - queues a delivery per matching active webhook, in event then webhook order: a webhook hears the writes made from
 *   its creation on (however late this round runs), of its events ('*' for all), of its download, of its category
 *   or one below it (the categories of an event's download, its own and every ancestor, read only for a webhook with
 *   a category);
 * - marks the rows dispatched with the time of this statement (clock_timestamp(), not the transaction's start), before
 *   the publications: a replay of what was dispatched since a moment finds every event published after it;
 * - returns the rows, the outbox id as text, to be published.
 */
const DISPATCH_SQL = `WITH RECURSIVE
  claimed AS MATERIALIZED (
    SELECT id, type, "objectId", "downloadId", "createdAt" FROM event_outbox
    WHERE "dispatchedAt" IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
  ),
  locked AS MATERIALIZED (
    SELECT pg_advisory_xact_lock_shared($2::int, $3::int)::text AS l WHERE EXISTS (SELECT 1 FROM claimed)
  ),
  up(did, cid) AS (
    SELECT d.id, d."categoryId" FROM download d WHERE d.id IN (SELECT "downloadId" FROM claimed)
    UNION SELECT up.did, c."parentId" FROM up JOIN category c ON c.id = up.cid WHERE c."parentId" IS NOT NULL
  ),
  queued AS (
    INSERT INTO webhook_delivery ("webhookId", "eventId", type, "objectId", "downloadId", "eventAt")
    SELECT h.id, e.id, e.type, e."objectId", e."downloadId", e."createdAt"
    FROM claimed e JOIN webhook h ON h.active AND h."createdAt" <= e."createdAt"
      AND ('*' = ANY(h.events) OR e.type = ANY(h.events))
      AND (h."downloadId" IS NULL OR h."downloadId" = e."downloadId")
      AND (h."categoryId" IS NULL OR EXISTS (SELECT 1 FROM up WHERE up.did = e."downloadId" AND up.cid = h."categoryId"))
    ORDER BY e.id, h.id
    RETURNING 1
  ),
  marked AS (
    UPDATE event_outbox o SET "dispatchedAt" = clock_timestamp() FROM claimed e WHERE o.id = e.id RETURNING 1
  )
SELECT e.id::text AS id, e.type, e."objectId", e."downloadId"
FROM claimed e, locked
ORDER BY e.id`;

/** Claims the due deliveries ($2 at most) with a lease of $1 ms (their next attempt moved past it). */
const DELIVER_SQL = `UPDATE webhook_delivery SET "nextAttemptAt" = now() + $1::float8 * interval '1 millisecond'
  WHERE id IN (
    SELECT id FROM webhook_delivery WHERE status = 'pending' AND "nextAttemptAt" <= now()
    ORDER BY "nextAttemptAt", id LIMIT $2 FOR UPDATE SKIP LOCKED
  )
  RETURNING id, "webhookId", "eventId"::text AS "eventId", type, "objectId", "downloadId",
    (extract(epoch FROM "eventAt") * 1000)::float8 AS "eventAt", attempts`;

/** Rows per page of a replay. */
const REPLAY_PAGE = 500;

/**
 * The subscribed events dispatched in the last `msAgo` milliseconds (the database's clock), in outbox order, page by
 * page: what an instance's subscribing connection may have missed while Redis was unreachable (src/events.ts,
 * Catchup). First waits for the dispatch transactions in progress on every instance: a row one of them publishes
 * before it commits is then visible, and a dispatch that starts later publishes after the caller listens again.
 */
export async function* dispatchedSince(prisma: PrismaClient, msAgo: number): AsyncGenerator<DispatchedEvent[]> {
  await prisma.$queryRaw`SELECT pg_advisory_xact_lock(${DISPATCH_LOCK[0]}::int, ${DISPATCH_LOCK[1]}::int)::text`;
  // The start of the window as an instant (epoch seconds), on the clock the rows were marked with.
  const [start] = await prisma.$queryRaw<{ cut: number; first: bigint | null }[]>`
    WITH w AS (SELECT now() - ${msAgo} * interval '1 millisecond' AS t)
    SELECT extract(epoch FROM w.t)::float8 AS cut,
           (SELECT min(id) FROM event_outbox WHERE "dispatchedAt" >= w.t) AS first
    FROM w`;
  if (!start || start.first === null) return;
  const types = [...SUBSCRIBED_TYPES];
  let after = start.first - 1n;
  for (;;) {
    const rows = await prisma.$queryRaw<DispatchedEvent[]>`
      SELECT id, type, "objectId", "downloadId" FROM event_outbox
      WHERE id > ${after} AND "dispatchedAt" >= to_timestamp(${start.cut}) AND type = ANY(${types}::text[])
      ORDER BY id LIMIT ${REPLAY_PAGE}`;
    if (rows.length > 0) yield rows;
    if (rows.length < REPLAY_PAGE) return;
    after = BigInt(rows[rows.length - 1]!.id);
  }
}

export class EventDispatcher {
  readonly stats = new DispatchStats();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private lastPrune = 0;
  private readonly inFlight = new Set<Promise<void>>();

  private readonly prisma: PrismaClient;

  constructor(
    private readonly db: Database,
    private readonly events: Events,
    private readonly log: Logger,
    private readonly opts: DispatcherOptions,
  ) {
    this.prisma = db.prisma;
  }

  start(): void {
    this.timer = setInterval(() => this.wake(), this.opts.pollMs);
    this.timer.unref();
    this.wake();
  }

  /** Runs a round now (or right after the one running). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    // Outside the operation of the request that woke it: its statements are not that request's to cancel.
    this.running = unbound(() => this.loop()).finally(() => {
      this.running = null;
    });
  }

  /** Resolves when no round is running (one woken meanwhile is waited for too). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        while ((await this.dispatch()) === BATCH && !this.stopped) {}
        if (!this.stopped) await this.deliverDue();
        if (!this.stopped && Date.now() - this.lastPrune > PRUNE_EVERY_MS) await this.prune();
      } catch (err) {
        if (!this.stopped) this.log.warn({ err }, 'events: dispatch round failed; retried at the next');
      }
    } while (this.again && !this.stopped);
  }

  /**
   * Claims a batch of outbox rows, publishes them and queues their deliveries. Returns how many it claimed. Straight
   * through the driver: with nothing to dispatch, one statement; else BEGIN, one statement that claims, locks, queues
   * and marks (DISPATCH_SQL), the publications, COMMIT.
   */
  async dispatch(): Promise<number> {
    const [due] = await this.db.query<{ due: boolean }>(DUE_SQL);
    if (!due?.due) return 0;
    return this.db.transaction(async (tx) => {
      const rows = await tx.query<{ id: string; type: string; objectId: number; downloadId: number }>(DISPATCH_SQL, [
        BATCH,
        DISPATCH_LOCK[0],
        DISPATCH_LOCK[1],
      ]);
      // Published before the commit: a crash in between publishes again at the next claim (at-least-once), never
      // an event whose row is lost. The outbox id travels, so an instance delivers an event once.
      for (const r of rows) this.events.publishEvent(r.type, r.objectId, r.downloadId, BigInt(r.id));
      return rows.length;
    });
  }

  /**
   * Claims the deliveries that are due (a lease past the attempt's deadline), as many as there is room for beside the
   * attempts in flight (at most DELIVERY_BATCH at once per instance), and attempts them.
   */
  async deliverDue(): Promise<number> {
    const room = DELIVERY_BATCH - this.inFlight.size;
    if (room <= 0) return 0;
    // Long enough for an attempt and its bookkeeping; an instance killed mid-attempt delays that delivery this long.
    const leaseMs = 2 * this.opts.timeoutMs + 5_000;
    const claimed = (await this.db.query<ClaimedRow>(DELIVER_SQL, [leaseMs, room])).map(
      (d): DeliveryRow => ({ ...d, eventId: BigInt(d.eventId), eventAt: new Date(d.eventAt) }),
    );
    for (const d of claimed) {
      const p: Promise<void> = this.attempt(d)
        .catch((err) => this.log.warn({ err, delivery: d.id }, 'webhooks: a delivery attempt could not be recorded'))
        .finally(() => {
          this.inFlight.delete(p);
          // The slot is free: more may be due (a full claim left some behind).
          if (claimed.length === room) this.wake();
        });
      this.inFlight.add(p);
    }
    return claimed.length;
  }

  private async attempt(d: DeliveryRow): Promise<void> {
    const hook = await this.prisma.webhook.findUnique({ where: { id: d.webhookId } });
    if (!hook) return; // deleted meanwhile: its deliveries went with it
    if (!hook.active) {
      await this.settle(d, 'skipped', null, 'the webhook is inactive');
      return;
    }
    const owner = { userId: hook.ownerUserId, apiKeyId: hook.ownerApiKeyId };
    const data = await this.opts.render(owner, d.type, d.objectId, d.downloadId);
    if (data === null) {
      await this.settle(d, 'skipped', null, "the webhook's owner may not view the object now");
      return;
    }
    const timestamp = new Date();
    const body = JSON.stringify({ type: d.type, timestamp: timestamp.toISOString(), data });
    const result = await send(
      hook.url,
      hook.secret,
      { id: `evt_${d.eventId}_${d.webhookId}`, timestamp, body },
      { timeoutMs: this.opts.timeoutMs, allowPrivate: this.opts.allowPrivate },
    );
    this.stats.attempts += 1;
    if (d.attempts === 0) {
      const seconds = (timestamp.getTime() - d.eventAt.getTime()) / 1000;
      this.stats.onFirstAttempt?.(seconds);
    }
    this.stats.onAttempt?.(result, d.type);
    if (result.error !== null) this.stats.failures += 1;
    await this.prisma.webhookAttempt.create({
      data: {
        deliveryId: d.id,
        attemptedAt: timestamp,
        status: result.status,
        durationMs: result.durationMs,
        error: result.error,
      },
    });
    const n = d.attempts + 1;
    if (result.error === null) {
      await this.settle(d, 'delivered', result, null, n);
      if (hook.failingSince) await this.prisma.webhook.update({ where: { id: hook.id }, data: { failingSince: null } });
      return;
    }
    const delay = this.opts.retrySeconds[n - 1];
    await this.settle(d, delay === undefined ? 'failed' : 'pending', result, result.error, n, delay);
    // A run of failures that lasts LIMITS.webhookDeactivateAfterMs deactivates the webhook.
    const since = hook.failingSince ?? timestamp;
    if (!hook.failingSince) await this.prisma.webhook.update({ where: { id: hook.id }, data: { failingSince: since } });
    else if (timestamp.getTime() - since.getTime() >= LIMITS.webhookDeactivateAfterMs) {
      await this.prisma.webhook.update({ where: { id: hook.id }, data: { active: false } });
      this.log.warn({ webhook: hook.id, since }, 'webhooks: deactivated after failing for 3 days');
    }
  }

  private async settle(
    d: DeliveryRow,
    status: 'delivered' | 'failed' | 'pending' | 'skipped',
    result: Attempt | null,
    error: string | null,
    attempts = d.attempts,
    delaySeconds = 0,
  ): Promise<void> {
    const pending = status === 'pending';
    await this.prisma.webhookDelivery.update({
      where: { id: d.id },
      data: {
        status,
        attempts,
        lastStatus: result?.status ?? null,
        lastDurationMs: result?.durationMs ?? null,
        lastError: error,
        nextAttemptAt: new Date(Date.now() + delaySeconds * 1000),
        finishedAt: pending ? null : new Date(),
      },
    });
  }

  /** Outbox rows and finished deliveries older than the retention window go. */
  private async prune(): Promise<void> {
    this.lastPrune = Date.now();
    // Prisma keeps DateTime columns as UTC wall-clock times (timestamp without time zone).
    const before = new Date(Date.now() - LIMITS.outboxRetentionMs).toISOString();
    await this.db.query(`DELETE FROM event_outbox WHERE "dispatchedAt" < ($1::timestamptz AT TIME ZONE 'UTC')`, [
      before,
    ]);
    await this.db.query(
      `DELETE FROM webhook_delivery WHERE status IN ('delivered', 'failed', 'skipped')
        AND "finishedAt" < ($1::timestamptz AT TIME ZONE 'UTC')`,
      [before],
    );
  }

  /** Deliveries waiting for an attempt (the queue depth of /metrics). */
  queueDepth(): Promise<number> {
    return this.prisma.webhookDelivery.count({ where: { status: 'pending' } });
  }

  /** Stops polling and lets the round and the attempts in flight end. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
    await Promise.allSettled([...this.inFlight]);
  }
}
