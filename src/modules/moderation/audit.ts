// The audit log and the moderator log, read by admins and super-user keys: newest first, filtered by action, content
// and date. The audit log holds downloads' deletions, restores, purges, approvals and rejections; the moderator log
// comments' and reviews' deletions, approvals and rejections, and resolved reports.
import type { Prisma, PrismaClient } from '../../generated/prisma/client.js';
import type { Access } from '../../permissions/access.js';
import { invalidInput, noPermission } from '../../errors.js';
import { prismaAfter, prismaOrderBy, type KeysetSpec, type Window } from '../../db/keyset.js';

export type LogName = 'audit' | 'moderator';
export interface LogRow {
  id: number;
  action: string;
  contentType: string;
  contentId: number;
  userId: number;
  reason: string;
  date: Date;
}
export interface LogFilter {
  log?: LogName | null;
  action?: string | null;
  contentType?: string | null;
  contentId?: number | null;
  from?: Date | null;
  to?: Date | null;
}

export const logSpec = (log: LogName): KeysetSpec => ({
  list: `auditLog:${log}`,
  order: 'date',
  direction: 'desc',
  column: { name: 'date', kind: 'date' },
});

const MAX_FILTER_TEXT = 100;
function text(v: string | null | undefined, field: string): string | undefined {
  if (v == null || v === '') return undefined;
  if (v.length > MAX_FILTER_TEXT) throw invalidInput(field, `${field} must be at most ${MAX_FILTER_TEXT} characters.`);
  return v;
}

/** A page of a log (rows in scan order, size + 1 at most) and its total with the filter: two statements side by side. */
export async function logPage(
  prisma: PrismaClient,
  access: Access,
  filter: LogFilter,
  w: Window,
): Promise<{ total: number; rows: LogRow[] }> {
  if (!access.hasAdminRights) throw noPermission('read the audit log');
  const log = filter.log ?? 'audit';
  const date: Prisma.DateTimeFilter = {};
  if (filter.from) date.gte = filter.from;
  if (filter.to) date.lte = filter.to;
  const where = {
    ...(text(filter.action, 'action') !== undefined ? { action: filter.action! } : {}),
    ...(text(filter.contentType, 'content_type') !== undefined ? { contentType: filter.contentType! } : {}),
    ...(filter.contentId != null ? { contentId: filter.contentId } : {}),
    ...(filter.from || filter.to ? { date } : {}),
  };
  const spec = logSpec(log);
  const page = {
    where: { AND: [where, prismaAfter(spec, w)] },
    orderBy: prismaOrderBy(spec, w) as never,
    take: w.size + 1,
  };
  const [total, rows] =
    log === 'audit'
      ? await Promise.all([prisma.auditLog.count({ where }), prisma.auditLog.findMany(page)])
      : await Promise.all([prisma.moderatorLog.count({ where }), prisma.moderatorLog.findMany(page)]);
  return { total, rows };
}
