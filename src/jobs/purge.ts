// Purges soft-deleted downloads once their retention window has passed (contract §6): each one is removed with
// its versions, files, comments and blobs, and recorded in the audit log as `download.purged`.
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Storage } from '../files/storage/index.js';
import type { Logger } from '../log.js';
import { schedule } from './schedule.js';
import { hardDeleteDownloads } from '../db/purge.js';
import { refreshCategoryCounts } from '../modules/categories/index.js';

const BATCH = 100;
/** Advisory lock key (pair) held by the transaction that purges a batch: one purger at a time, across instances. */
const PURGE_LOCK = [72640336, 0] as const;

/**
 * Returns the ids it purged. `now` is a parameter so the rule can be tested without waiting. When another purge
 * (this process's timer, or another instance on the same database) holds the lock, it stops and leaves the rest to it,
 * so no download is purged or audited twice.
 */
export async function purgeExpiredDownloads(
  prisma: PrismaClient,
  storage: Storage,
  retentionDays: number,
  now = new Date(),
): Promise<number[]> {
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
  const purged: number[] = [];
  for (;;) {
    const batch = await prisma.$transaction(async (tx) => {
      const [{ locked }] = await tx.$queryRaw<
        { locked: boolean }[]
      >`SELECT pg_try_advisory_xact_lock(${PURGE_LOCK[0]}::int, ${PURGE_LOCK[1]}::int) AS locked`;
      if (!locked) return null;
      const due = await tx.download.findMany({
        where: { state: 'deleted', deletedAt: { lt: cutoff } },
        select: { id: true, categoryId: true },
        orderBy: { id: 'asc' },
        take: BATCH,
      });
      if (due.length === 0) return null;
      const keys = await hardDeleteDownloads(
        tx,
        due.map((d) => d.id),
        0,
        `Deleted more than ${retentionDays} days ago.`,
        'download.purged',
      );
      await refreshCategoryCounts(tx, [...new Set(due.map((d) => d.categoryId))]);
      return { ids: due.map((d) => d.id), keys };
    });
    if (!batch) return purged;
    await storage.remove(batch.keys);
    purged.push(...batch.ids);
  }
}

/** Runs the purge five seconds after start and then every `everyMs`; returns a function that stops it. */
export function schedulePurge(
  prisma: PrismaClient,
  storage: Storage,
  retentionDays: number,
  log: Logger,
  everyMs = 3_600_000,
): () => void {
  return schedule(
    'purge of soft-deleted downloads',
    async () => {
      const ids = await purgeExpiredDownloads(prisma, storage, retentionDays);
      if (ids.length) log.info({ purged: ids.length }, 'purged soft-deleted downloads past the retention window');
    },
    { firstMs: 5_000, everyMs },
    log,
  );
}
