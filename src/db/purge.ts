// Irreversible removal of downloads with their versions, files and comments (rows cascade in the database),
// each one written to the audit log. Returns the storage keys of blobs the caller must remove afterwards.
import type { Prisma } from '../generated/prisma/client.js';

export async function hardDeleteDownloads(
  tx: Prisma.TransactionClient,
  downloadIds: number[],
  actorId: number,
  reason: string,
  action = 'download.hard_deleted',
): Promise<string[]> {
  if (downloadIds.length === 0) return [];
  // The rows' lock first (in id order): a file being added holds the download's row lock until it commits, so the
  // list below includes it and its blob is removed with the rest, instead of outliving its row.
  await tx.$queryRaw`SELECT id FROM download WHERE id = ANY(${downloadIds}::int[]) ORDER BY id FOR UPDATE`;
  const files = await tx.file.findMany({
    where: { version: { downloadId: { in: downloadIds } }, storageKey: { not: null } },
    select: { storageKey: true },
  });
  await tx.auditLog.createMany({
    data: downloadIds.map((id) => ({ action, contentType: 'download', contentId: id, userId: actorId, reason })),
  });
  // current_version_id points into version; clear it first so the cascade can remove versions.
  await tx.download.updateMany({ where: { id: { in: downloadIds } }, data: { currentVersionId: null } });
  await tx.download.deleteMany({ where: { id: { in: downloadIds } } });
  return files.map((f) => f.storageKey!);
}
