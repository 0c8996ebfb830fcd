// Version rules: adding a release to a download. Plain functions over Prisma; resolvers stay short.
import type { Category, Download, PrismaClient } from '../../generated/prisma/client.js';
import type { Access } from '../../permissions/access.js';
import { ApiError, noPermission } from '../../errors.js';
import { recordEvents } from '../../db/outbox.js';
import { versionStringFor, viewableDownload, type TeamLookup } from '../downloads/index.js';

export interface CreateVersionInput {
  downloadId: number;
  versionString?: string | null;
}

/** A new version becomes the download's current version; last_update moves. */
export async function createVersion(prisma: PrismaClient, access: Access, team: TeamLookup, input: CreateVersionInput) {
  const d = (await viewableDownload(prisma, access, input.downloadId, { include: { category: true } })) as Download & {
    category: Category;
  };
  if (!access.canEditDownload(d, await team.isTeamMember(d.id))) throw noPermission('add versions to this download');
  if (!d.category.enableVersioning) {
    throw new ApiError(
      'mc_dm_api_error.versioning_disabled',
      `Category ${d.categoryId} does not use versioning: its downloads keep a single version.`,
      { category_id: d.categoryId },
    );
  }
  const now = new Date();
  const versionString = versionStringFor(d.category, input.versionString, now);
  return prisma.$transaction(async (tx) => {
    // The download's row lock first: the new version's foreign key takes a share lock on the download, and setting
    // currentVersionId (a unique column) needs the row exclusively, so two versions added at once to one download
    // would each wait for the other (a deadlock) without it. With it they take turns.
    await tx.$executeRaw`SELECT 1 FROM download WHERE id = ${d.id}::int FOR UPDATE`;
    const version = await tx.version.create({ data: { downloadId: d.id, versionString, releaseDate: now } });
    const download = await tx.download.update({
      where: { id: d.id },
      data: { currentVersionId: version.id, lastUpdate: now },
    });
    await recordEvents(tx, [
      { type: 'version.released', objectId: version.id, downloadId: d.id },
      { type: 'download.updated', objectId: d.id, downloadId: d.id },
    ]);
    return { version, download };
  });
}
