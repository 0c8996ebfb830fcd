// Storage identity: with STORAGE=local each instance keeps its blobs in its own DATA_DIR/files, so several
// instances on one database must share that directory (or use S3), else each serves only the files it stored
// itself. At start an instance reads (or creates) a random id kept in DATA_DIR/files/.storage-id and records it in
// the database (storage_identities); when another local storage id is already recorded it refuses to start,
// unless ALLOW_SPLIT_STORAGE=1, where it starts with a loud warning. Instances sharing one directory share its id.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PrismaClient } from '../../generated/prisma/client.js';
import type { Logger } from '../../log.js';
import { StartError } from '../../errors.js';

export class SplitStorageError extends StartError {}

/** The id of a local storage root, created on first use. */
export function localStorageId(root: string): string {
  const file = path.join(root, '.storage-id');
  fs.mkdirSync(root, { recursive: true });
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    const id = `local-${crypto.randomUUID()}`;
    try {
      fs.writeFileSync(file, `${id}\n`, { flag: 'wx' });
      return id;
    } catch {
      return fs.readFileSync(file, 'utf8').trim(); // another process on the same directory wrote it first
    }
  }
}

/**
 * How long the start's transaction may wait for its connection and then run. Prisma's default of 5 s is too short
 * for it: it is the process's first Prisma call, which loads its query compiler, on a start that may be slow (a
 * loaded machine, several instances waiting on its lock, the service run under valgrind: there it failed the start).
 */
const START_TRANSACTION = { maxWait: 60_000, timeout: 120_000 };

export async function registerLocalStorage(
  prisma: PrismaClient,
  root: string,
  opts: { allowSplit: boolean; log: Logger },
): Promise<string> {
  const storageId = localStorageId(root);
  const location = `${os.hostname()}:${path.resolve(root)}`;
  return prisma.$transaction(async (tx) => {
    // One instance at a time: two starting together on a fresh database must not both find the table empty.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(72640336)`;
    const others = await tx.storageIdentity.findMany({ where: { kind: 'local', storageId: { not: storageId } } });
    if (others.length > 0) {
      const list = others
        .map((o) => `${o.storageId} (${o.location}, last started ${o.lastSeen.toISOString()})`)
        .join('; ');
      const message =
        `This database already serves files from another local storage directory: ${list}. ` +
        `This instance keeps its files in ${location} (${storageId}); each instance would answer 404 for the files the other stored. ` +
        'Share one directory between the instances, or use STORAGE=s3. If the other directory is gone for good, delete its row ' +
        'from storage_identities; to run split anyway, set ALLOW_SPLIT_STORAGE=1.';
      if (!opts.allowSplit) throw new SplitStorageError(message);
      opts.log.warn({ storageId, others: others.map((o) => o.storageId) }, `SPLIT STORAGE: ${message}`);
    }
    await tx.storageIdentity.upsert({
      where: { storageId },
      create: { storageId, kind: 'local', location },
      update: { location, lastSeen: new Date() },
    });
    return storageId;
  }, START_TRANSACTION);
}
