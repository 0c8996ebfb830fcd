// Reclaims orphan blobs: objects in storage that no file row references. They appear when a process dies between
// writing a blob and committing its row (or between a hard delete's commit and the blob's removal). A blob younger
// than the grace period is never touched, so an upload still on its way to its row is safe; the job holds an advisory
// lock, so one instance at a time reclaims, and it logs what it removed.
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Storage } from '../files/storage/index.js';
import type { Logger } from '../log.js';
import { schedule } from './schedule.js';

/** Advisory lock key (pair) held while reclaiming: one reclaimer at a time, across instances. */
const RECLAIM_LOCK = [72640337, 0] as const;
const BATCH = 500;
export const DEFAULT_GRACE_MS = 60 * 60 * 1000;

export interface ReclaimResult {
  scanned: number;
  reclaimed: string[];
  skipped?: 'locked';
}

/**
 * Removes blobs older than `graceMs` (at `now`) that no file row references. Storage is listed outside any
 * transaction (the embedded database has one connection, which a long scan must not hold); each batch's
 * look-up takes the advisory lock, and a reclaimer that finds it taken at its first batch leaves the work to the one
 * holding it. The orphans of a batch are checked to be still there and removed under that lock, so two reclaimers
 * that overlap never remove (or report) the same blob twice.
 */
export async function reclaimOrphanBlobs(
  prisma: PrismaClient,
  storage: Storage,
  graceMs = DEFAULT_GRACE_MS,
  now = new Date(),
): Promise<ReclaimResult> {
  const cutoff = now.getTime() - graceMs;
  const reclaimed: string[] = [];
  let scanned = 0;
  let first = true;
  let batch: string[] = [];
  const flush = async (): Promise<boolean> => {
    if (batch.length === 0) return true;
    const keys = batch;
    batch = [];
    const orphans = await prisma.$transaction(
      async (tx) => {
        const [{ locked }] = await tx.$queryRaw<
          { locked: boolean }[]
        >`SELECT pg_try_advisory_xact_lock(${RECLAIM_LOCK[0]}::int, ${RECLAIM_LOCK[1]}::int) AS locked`;
        if (!locked) return null;
        const referenced = await tx.file.findMany({
          where: { storageKey: { in: keys } },
          select: { storageKey: true },
        });
        const keep = new Set(referenced.map((r) => r.storageKey));
        const candidates = keys.filter((k) => !keep.has(k));
        // Another reclaimer may have removed some since this one listed them.
        const present = (await Promise.all(candidates.map(async (k) => ((await storage.exists(k)) ? k : null)))).filter(
          (k): k is string => k !== null,
        );
        await storage.remove(present);
        return present;
      },
      { timeout: 60_000 },
    );
    if (orphans === null) return !first;
    first = false;
    reclaimed.push(...orphans);
    return true;
  };
  for await (const blob of storage.list()) {
    scanned++;
    if (blob.modified.getTime() > cutoff) continue;
    batch.push(blob.key);
    if (batch.length >= BATCH && !(await flush())) return { scanned, reclaimed, skipped: 'locked' };
  }
  if (!(await flush())) return { scanned, reclaimed, skipped: 'locked' };
  return { scanned, reclaimed };
}

/**
 * Runs the reclaimer ten minutes after start and then every `everyMs`; returns a function that stops it. (Blobs a crash
 * just orphaned are younger than the grace period anyway, so an earlier first run would find nothing more.)
 */
export function scheduleReclaim(
  prisma: PrismaClient,
  storage: Storage,
  log: Logger,
  graceMs = DEFAULT_GRACE_MS,
  everyMs = 6 * 3_600_000,
): () => void {
  return schedule(
    'reclaiming orphan blobs',
    async () => {
      const r = await reclaimOrphanBlobs(prisma, storage, graceMs);
      if (r.reclaimed.length)
        log.info(
          { reclaimed: r.reclaimed.length, keys: r.reclaimed.slice(0, 20), scanned: r.scanned },
          'reclaimed orphan blobs',
        );
    },
    { firstMs: 10 * 60_000, everyMs },
    log,
  );
}
