// Reports and the moderation queue (contract "Community, moderation, statistics"). A registered visitor reports what
// they can see (a download, comment, file or review) with a reason; moderators read the queue (moderated downloads,
// moderated comments, failed files, open reports: oldest first) and resolve reports.
import type { Comment, Download, File, PrismaClient, Report, Review } from '../../generated/prisma/client.js';
import type { Access } from '../../permissions/access.js';
import { ApiError, noPermission, notFound, requiredMissing } from '../../errors.js';
import { LIMITS } from '../../config.js';
import { viewableDownload } from '../downloads/index.js';
import { viewableComment } from '../comments/index.js';
import { viewableFile, type FileDeps } from '../files/index.js';
import { canViewReview, viewableReview } from '../reviews/index.js';
import type { KeysetSpec, Window } from '../../db/keyset.js';
import { scanDirection } from '../../db/keyset.js';

export type ReportContentType = 'download' | 'comment' | 'file' | 'review';

/** Report reasons: required, trimmed, at most LIMITS.maxModerationReason characters. */
function reportReason(raw: string | null | undefined): string {
  const reason = (raw ?? '').trim();
  if (!reason) throw requiredMissing(['reason']);
  if (reason.length > LIMITS.maxModerationReason)
    throw new ApiError('invalid_input', `reason must be at most ${LIMITS.maxModerationReason} characters.`, {
      field: 'reason',
    });
  return reason;
}

export interface ReportContentInput {
  contentType: ReportContentType;
  contentId: number;
  reason: string;
}

/**
 * Reports content the visitor can see (404 when it does not exist, 403 when hidden from them). Guests cannot report.
 * A second open report of the same content by the same visitor updates the first (one statement, on the partial
 * unique index), so repeated reports do not flood the queue.
 */
export async function reportContent(
  prisma: PrismaClient,
  access: Access,
  fileDeps: FileDeps,
  input: ReportContentInput,
): Promise<Report> {
  const userId = access.visitor.userId;
  if (userId === 0)
    throw new ApiError('do_not_have_permission', 'Guests cannot report content: act as a registered user.');
  switch (input.contentType) {
    case 'download':
      await viewableDownload(prisma, access, input.contentId);
      break;
    case 'comment':
      await viewableComment(prisma, access, input.contentId);
      break;
    case 'file':
      await viewableFile(fileDeps, input.contentId);
      break;
    case 'review':
      await viewableReview(prisma, access, input.contentId);
      break;
  }
  const reason = reportReason(input.reason);
  const rows = await prisma.$queryRaw<{ id: number }[]>`
    INSERT INTO "report" ("contentType", "contentId", "userId", "reason")
    VALUES (${input.contentType}::"ReportContentType", ${input.contentId}, ${userId}, ${reason})
    ON CONFLICT ("contentType", "contentId", "userId") WHERE "state" = 'open'
    DO UPDATE SET "reason" = EXCLUDED."reason", "reportDate" = CURRENT_TIMESTAMP
    RETURNING "id"`;
  return prisma.report.findUniqueOrThrow({ where: { id: rows[0]!.id } });
}

export interface ResolveReportInput {
  reportId: number;
  resolution?: string | null;
}

/** Moderators close an open report (moderator log `report.resolved`); a resolved one answers report_already_resolved. */
export async function resolveReport(prisma: PrismaClient, access: Access, input: ResolveReportInput): Promise<Report> {
  if (!access.isModerator) throw noPermission('resolve reports');
  const resolution = (input.resolution ?? '').trim();
  if (resolution.length > LIMITS.maxModerationReason)
    throw new ApiError('invalid_input', `resolution must be at most ${LIMITS.maxModerationReason} characters.`, {
      field: 'resolution',
    });
  return prisma.$transaction(async (tx) => {
    const { count } = await tx.report.updateMany({
      where: { id: input.reportId, state: 'open' },
      data: { state: 'resolved', resolvedBy: access.visitor.userId, resolvedDate: new Date(), resolution },
    });
    if (count === 0) {
      if (!(await tx.report.findUnique({ where: { id: input.reportId }, select: { id: true } })))
        throw notFound('report', input.reportId);
      throw new ApiError('mc_dm_api_error.report_already_resolved', 'This report is resolved already.', {
        report_id: input.reportId,
      });
    }
    await tx.moderatorLog.create({
      data: {
        action: 'report.resolved',
        contentType: 'report',
        contentId: input.reportId,
        userId: access.visitor.userId,
        reason: resolution,
      },
    });
    return tx.report.findUniqueOrThrow({ where: { id: input.reportId } });
  });
}

// ───────────── the queue

/**
 * The queue's order: when each item arrived, oldest first, as one sortable text key (`<timestamp> <kind digit>`,
 * compared byte-wise), ties by the item's id. Cursors carry the key and the id.
 */
export const QUEUE_SPEC: KeysetSpec = {
  list: 'moderationQueue',
  order: 'queued',
  direction: 'asc',
  column: { name: 'sortKey', kind: 'string' },
};
const KINDS = ['download', 'comment', 'file', 'report', 'review'] as const;
export type QueueKind = (typeof KINDS)[number];
export type QueueItem =
  | { kind: 'download'; row: Download }
  | { kind: 'comment'; row: Comment & { download: Download } }
  | { kind: 'file'; row: File & { version: { download: Download } } }
  | { kind: 'report'; row: Report }
  | { kind: 'review'; row: Review & { download: Download } };

/** One queue row as read: its kind, id and sort key (`id` and `sortKey` are what its cursor carries). */
export interface QueueRow {
  id: number;
  sortKey: string;
  kind: QueueKind;
}

const KEY = (date: string, digit: number) => `to_char(${date}, 'YYYY-MM-DD"T"HH24:MI:SS.US') || ' ${digit}'`;
const QUEUE_SQL = `
  SELECT 'download' AS kind, d.id, ${KEY('d."createdDate"', 1)} AS "sortKey" FROM "download" d WHERE d.state = 'moderated'
  UNION ALL
  SELECT 'comment', c.id, ${KEY('c."commentDate"', 2)} FROM "comment" c WHERE c.state = 'moderated'
  UNION ALL
  SELECT 'file', f.id, ${KEY('f."createdAt"', 3)} FROM "file" f WHERE f."validationStatus" = 'failed' AND NOT f."isDeleted"
  UNION ALL
  SELECT 'report', r.id, ${KEY('r."reportDate"', 4)} FROM "report" r WHERE r.state = 'open'
  UNION ALL
  SELECT 'review', v.id, ${KEY('v."reviewDate"', 5)} FROM "review" v WHERE v.state = 'moderated'`;
const COUNT_SQL = `SELECT
  (SELECT count(*) FROM "download" WHERE state = 'moderated')
  + (SELECT count(*) FROM "comment" WHERE state = 'moderated')
  + (SELECT count(*) FROM "file" WHERE "validationStatus" = 'failed' AND NOT "isDeleted")
  + (SELECT count(*) FROM "report" WHERE state = 'open')
  + (SELECT count(*) FROM "review" WHERE state = 'moderated') AS total`;

/**
 * A page of the queue for moderators (isModerator: moderator or admin users, super-user keys): the rows (size + 1 at
 * most, in scan order) and the total. Two statements side by side; then one per kind present on the page.
 */
export async function queuePage(
  prisma: PrismaClient,
  access: Access,
  w: Window,
): Promise<{ total: number; rows: (QueueRow & { item: QueueItem | null })[] }> {
  if (!access.isModerator) throw noPermission('read the moderation queue');
  const up = scanDirection(QUEUE_SPEC, w) === 'asc';
  const op = up ? '>' : '<';
  const dir = up ? 'ASC' : 'DESC';
  const params: unknown[] = [];
  const after = w.cursor ? `WHERE (q."sortKey" COLLATE "C" ${op} $1 OR (q."sortKey" = $1 AND q.id ${op} $2::int))` : '';
  if (w.cursor) params.push(String(w.cursor.value), w.cursor.id);
  const [counted, rows] = await Promise.all([
    prisma.$queryRawUnsafe<{ total: bigint }[]>(COUNT_SQL),
    prisma.$queryRawUnsafe<QueueRow[]>(
      `SELECT q.kind, q.id, q."sortKey" FROM (${QUEUE_SQL}) q ${after} ORDER BY q."sortKey" COLLATE "C" ${dir}, q.id ${dir} LIMIT ${w.size + 1}`,
      ...params,
    ),
  ]);
  const ids = (k: QueueKind) => rows.filter((r) => r.kind === k).map((r) => r.id);
  const [downloads, comments, files, reports, reviews] = await Promise.all([
    ids('download').length ? prisma.download.findMany({ where: { id: { in: ids('download') } } }) : [],
    ids('comment').length
      ? prisma.comment.findMany({ where: { id: { in: ids('comment') } }, include: { download: true } })
      : [],
    ids('file').length
      ? prisma.file.findMany({
          where: { id: { in: ids('file') } },
          include: { version: { include: { download: true } } },
        })
      : [],
    ids('report').length ? prisma.report.findMany({ where: { id: { in: ids('report') } } }) : [],
    ids('review').length
      ? prisma.review.findMany({ where: { id: { in: ids('review') } }, include: { download: true } })
      : [],
  ]);
  const byId = <T extends { id: number }>(list: T[]) => new Map(list.map((x) => [x.id, x]));
  const maps = {
    download: byId(downloads),
    comment: byId(comments),
    file: byId(files),
    report: byId(reports),
    review: byId(reviews),
  };
  // An item removed between the two reads has no row: it is left out of the page like a row the visitor may not see.
  const out = rows.map((r) => {
    const row = maps[r.kind].get(r.id);
    return { ...r, item: row ? ({ kind: r.kind, row } as QueueItem) : null };
  });
  return { total: Number(counted[0]?.total ?? 0), rows: out };
}

/** Whether a moderator may see a queue item: the item's own view rule (failed files: managing the download's files). */
export function canSeeQueueItem(access: Access, item: QueueItem | null): boolean {
  if (!item) return false;
  switch (item.kind) {
    case 'download':
      return access.canViewDownload(item.row);
    case 'comment':
      return access.canViewComment(item.row, item.row.download);
    case 'file':
      return access.canViewDownload(item.row.version.download) && access.canManageFiles(item.row.version.download);
    case 'report':
      return access.isModerator;
    case 'review':
      return canViewReview(access, item.row, item.row.download);
  }
}
