// Keeps `is_available` true to its word (contract §6: "the storage exists or the external URL is still
// reachable"): externally linked files are probed again through their adapter, blobs are looked up in storage.
// Each check counts in validation_attempts and last_attempt_date; a failure is written to validation_error.
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Storage } from '../files/storage/index.js';
import type { Logger } from '../log.js';
import { schedule } from './schedule.js';
import { adapterFor, parseExternalUrl } from '../files/external/index.js';

export interface RevalidateOptions {
  allowPrivate: boolean;
  olderThanMs: number;
  batch: number;
  now?: Date;
}

/**
 * Checks up to `batch` files not checked for `olderThanMs`; returns the ids checked. The batch is claimed in one
 * statement (its rows stamped with this attempt's date, rows another instance holds skipped), so instances sharing
 * a database never check the same file twice, and no transaction stays open while URLs are probed.
 */
export async function revalidateFiles(
  prisma: PrismaClient,
  storage: Storage,
  opts: RevalidateOptions,
): Promise<number[]> {
  const now = opts.now ?? new Date();
  const cutoff = new Date(now.getTime() - opts.olderThanMs);
  const claimed = await prisma.$queryRaw<{ id: number }[]>`
    UPDATE "file" SET "lastAttemptDate" = ${now} WHERE id IN (
      SELECT id FROM "file"
      WHERE "isDeleted" = false AND "validationStatus" IN ('passed', 'skipped')
        AND ("lastAttemptDate" IS NULL OR "lastAttemptDate" < ${cutoff})
      ORDER BY "lastAttemptDate" ASC NULLS FIRST, id ASC
      LIMIT ${opts.batch}
      FOR UPDATE SKIP LOCKED)
    RETURNING id`;
  if (claimed.length === 0) return [];
  const due = await prisma.file.findMany({ where: { id: { in: claimed.map((c) => c.id) } }, orderBy: { id: 'asc' } });
  for (const f of due) {
    let error: string | null = null;
    try {
      if (f.storageKey) {
        if (!(await storage.exists(f.storageKey))) error = 'The stored blob is missing.';
      } else if (f.externalUrl) {
        const url = parseExternalUrl(f.externalUrl);
        const fetched = await adapterFor(url).fetch(url, {
          allowPrivate: opts.allowPrivate,
          timeoutMs: 10_000,
          maxRedirects: 5,
        });
        fetched.body.destroy(); // reachable is all we need to know
      }
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    await prisma.file.update({
      where: { id: f.id },
      data: {
        isAvailable: error === null,
        validationError: error,
        validationAttempts: { increment: 1 },
        lastAttemptDate: now,
      },
    });
  }
  return due.map((f) => f.id);
}

/** Runs revalidation every `everyMs` (a batch at a time); returns a function that stops it. */
export function scheduleRevalidation(
  prisma: PrismaClient,
  storage: Storage,
  allowPrivate: boolean,
  log: Logger,
  everyMs = 600_000,
): () => void {
  return schedule(
    'file revalidation',
    async () => {
      const ids = await revalidateFiles(prisma, storage, { allowPrivate, olderThanMs: 86_400_000, batch: 100 });
      if (ids.length) log.info({ checked: ids.length }, 'revalidated files');
    },
    { firstMs: everyMs, everyMs },
    log,
  );
}
