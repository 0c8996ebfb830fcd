// Views of downloads (contract "Community, moderation, statistics"): a read of one download by a visitor other than
// its owner counts once per visitor and download per LIMITS.viewWindowMs, in memory; the counts are added to
// `view_count` in batches (flushViews), never one write per read. A visitor is a user (by user id) or, for the
// guest, the API key it reads with. Each instance counts and flushes on its own: flushes add, so instances sharing a
// database lose nothing, but the once-per-window rule holds per instance. A process killed with kill -9 loses the
// views counted since its last flush (LIMITS.viewFlushMs at most); a normal stop flushes first.
import type { PrismaClient } from '../../generated/prisma/client.js';
import { LIMITS } from '../../config.js';

export interface ViewVisitor {
  userId: number;
  apiKeyId: number;
}

export class ViewCounter {
  /** visitor:download → when its window ends. */
  private readonly seen = new Map<string, number>();
  private pending = new Map<number, number>();

  constructor(
    private readonly windowMs: number = LIMITS.viewWindowMs,
    private readonly maxSeen: number = LIMITS.maxViewVisitors,
  ) {}

  /** Counts a read of download `d` by `v`, unless it is the owner's or a repeat within the window. */
  record(v: ViewVisitor, d: { id: number; userId: number }, now = Date.now()): void {
    if (v.userId !== 0 && v.userId === d.userId) return;
    const key = `${v.userId === 0 ? `k${v.apiKeyId}` : `u${v.userId}`}:${d.id}`;
    const until = this.seen.get(key);
    if (until !== undefined && until > now) return;
    this.seen.delete(key); // to the back: the map stays ordered by window end
    this.seen.set(key, now + this.windowMs);
    this.pending.set(d.id, (this.pending.get(d.id) ?? 0) + 1);
    // Bounded memory: past the bound the oldest windows are forgotten (those visitors may count again).
    if (this.seen.size > this.maxSeen) {
      for (const [k, end] of this.seen) {
        if (this.seen.size <= this.maxSeen && end > now) break;
        this.seen.delete(k);
      }
    }
  }

  /** Views counted and not yet flushed, by download. */
  get pendingCount(): number {
    let n = 0;
    for (const c of this.pending.values()) n += c;
    return n;
  }

  /** Takes the pending counts (the next views start a new batch). */
  take(): Map<number, number> {
    const out = this.pending;
    this.pending = new Map();
    return out;
  }

  /** Gives counts back after a failed flush, so they are tried again with the next batch. */
  giveBack(counts: Map<number, number>): void {
    for (const [id, n] of counts) this.pending.set(id, (this.pending.get(id) ?? 0) + n);
  }
}

/**
 * Adds `counts` to the downloads' view_count and to today's (UTC) daily statistics, LIMITS.viewFlushBatch downloads
 * per transaction (one UPDATE and one upsert each; downloads deleted meanwhile are skipped), and removes from `counts`
 * what each committed transaction added: when one fails, `counts` holds exactly what is still to add. In batches,
 * because one statement for every download viewed in the flush interval (tens of thousands on a large catalogue)
 * held all their row locks, and ran the download table's statement triggers over every row, for longer than a
 * transaction may last: it was cancelled, given back, and the next flush was larger still. Only counter columns
 * change: the read cache keeps the answers that do not show them (src/http/read-cache.ts).
 */
export async function flushViews(prisma: PrismaClient, counts: Map<number, number>): Promise<void> {
  const all = [...counts.keys()].sort((a, b) => a - b);
  for (let i = 0; i < all.length; i += LIMITS.viewFlushBatch) {
    const ids = all.slice(i, i + LIMITS.viewFlushBatch);
    const ns = ids.map((id) => counts.get(id)!);
    await prisma.$transaction(async (tx) => {
      await tx.$executeRaw`
        UPDATE "download" d SET "viewCount" = d."viewCount" + v.n
        FROM unnest(${ids}::int[], ${ns}::int[]) AS v(id, n) WHERE d.id = v.id`;
      // Today's row (UTC) of each download's daily statistics, in the same transaction; the join skips downloads
      // deleted meanwhile (their rows would break the foreign key).
      await tx.$executeRaw`
        INSERT INTO "download_daily_stats" ("downloadId", "day", "views")
        SELECT v.id, (now() AT TIME ZONE 'UTC')::date, v.n
        FROM unnest(${ids}::int[], ${ns}::int[]) AS v(id, n) JOIN "download" d ON d.id = v.id
        ON CONFLICT ("downloadId", "day") DO UPDATE SET "views" = "download_daily_stats"."views" + excluded."views"`;
    });
    for (const id of ids) counts.delete(id);
  }
}
