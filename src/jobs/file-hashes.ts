// Backfills the SHA-1 and SHA-512 of files stored before those columns existed: each stored blob is read once and
// hashed. A blob missing from storage is left as it is (the revalidation job reports it) and not retried in the same
// run.
import crypto from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Storage } from '../files/storage/index.js';
import type { Logger } from '../log.js';
import { schedule } from './schedule.js';

const BATCH = 20;

export interface BackfillResult {
  hashed: number;
  missing: number;
}

async function hashesOf(storage: Storage, key: string): Promise<{ sha1: string; sha512: string }> {
  const sha1 = crypto.createHash('sha1');
  const sha512 = crypto.createHash('sha512');
  await pipeline(
    await storage.read(key),
    new Writable({
      write(chunk: Buffer, _enc, done) {
        sha1.update(chunk);
        sha512.update(chunk);
        done();
      },
    }),
  );
  return { sha1: `sha1:${sha1.digest('hex')}`, sha512: `sha512:${sha512.digest('hex')}` };
}

/**
 * Hashes every stored file that lacks its SHA-1 or SHA-512, in batches of `BATCH` by id. No transaction is held while a
 * blob is read (the embedded database has one connection, which a long read must not hold): each file's hashes are
 * written by a conditional update, so an instance that hashed a file another one finished first changes nothing.
 */
export async function backfillFileHashes(prisma: PrismaClient, storage: Storage): Promise<BackfillResult> {
  const result: BackfillResult = { hashed: 0, missing: 0 };
  let after = 0;
  for (;;) {
    const rows = await prisma.file.findMany({
      where: { id: { gt: after }, storageKey: { not: null }, OR: [{ sha1: '' }, { sha512: '' }] },
      select: { id: true, storageKey: true },
      orderBy: { id: 'asc' },
      take: BATCH,
    });
    if (rows.length === 0) return result;
    for (const row of rows) {
      after = row.id;
      let hashes: { sha1: string; sha512: string };
      try {
        hashes = await hashesOf(storage, row.storageKey!);
      } catch {
        result.missing++;
        continue;
      }
      const { count } = await prisma.file.updateMany({
        where: { id: row.id, storageKey: row.storageKey, OR: [{ sha1: '' }, { sha512: '' }] },
        data: hashes,
      });
      result.hashed += count;
    }
  }
}

/** Runs the backfill ten minutes after start (once the start-up traffic has passed) and then hourly (a no-op once every file has its hashes). */
export function scheduleHashBackfill(prisma: PrismaClient, storage: Storage, log: Logger): () => void {
  return schedule(
    'file hash backfill',
    async () => {
      const r = await backfillFileHashes(prisma, storage);
      if (r.hashed || r.missing) log.info(r, `file hash backfill: ${r.hashed} hashed, ${r.missing} blobs missing`);
    },
    { firstMs: 10 * 60_000, everyMs: 3_600_000 },
    log,
  );
}
