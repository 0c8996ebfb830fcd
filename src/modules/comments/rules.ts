// Comment rules (spec "Comments", contract §3, §5, §6): lists, visibility, approval, flood control,
// edit history, soft and hard delete with the moderator log.
import { LIMITS } from '../../config.js';
import type { Prisma, PrismaClient, Comment, Download, Category } from '../../generated/prisma/client.js';
import type { Access } from '../../permissions/access.js';
import { requireScopes } from '../../auth/scopes.js';
import { ApiError, noPermission, notFound, requiredMissing } from '../../errors.js';
import { recordEvent } from '../../db/outbox.js';
import { pageWindow, paginationOf, type Direction, type Page, type PageRequest } from '../../db/lists.js';
import { prismaAfter, prismaOrderBy, type KeysetSpec } from '../../db/keyset.js';
import type { Database } from '../../db/database.js';
import { filterWhere } from '../../db/filters.js';
import { jsonOf, revive, type JsonRow } from '../../db/rows.js';
import { downloadById } from '../downloads/index.js';
import type { Slice } from '../../db/slices.js';
import {
  COMMENT_FILTER,
  commentById,
  commentDownloadOf,
  commentPage,
  commentRelationsOf,
  countComments,
  type CommentFilter,
} from './store.js';

export const COMMENT_ORDERS = { comment_date: 'commentDate', last_edit_date: 'lastEditDate' } as const;
export type CommentOrder = keyof typeof COMMENT_ORDERS;

/** An author editing later than this after posting leaves an edit-history row (contract §6). */
export const EDIT_GRACE_MS = LIMITS.commentEditGraceMs;
export const MAX_MESSAGE = LIMITS.maxCommentMessage;

export interface CommentListArgs extends PageRequest {
  downloadId?: number | null;
  since?: Date | null;
  order?: CommentOrder | null;
  direction?: Direction | null;
}

type WithDownload = Comment & { download: Download };
type Reading = { prisma: PrismaClient; db: Pick<Database, 'query'> };

/** A download whose comments the visitor may read, with its category: 404 when it does not exist, 403 when they may not. */
export async function viewableParent(
  db: Pick<Database, 'query'>,
  access: Access,
  downloadId: number,
): Promise<Download & { category: Category }> {
  const d = await downloadById(db, downloadId, { category: true, currentVersion: false });
  return mayViewComments(access, downloadId, d as (Download & { category: Category }) | null);
}

function mayViewComments<T extends Download>(access: Access, downloadId: number, d: T | null): T {
  if (!d) throw notFound('download', downloadId);
  if (!access.canViewComments(d)) throw noPermission("view this download's comments");
  return d;
}

/** The order of a page-numbered comments list as a keyset spec (ties by id; never-edited comments are the nulls). */
export function commentOrderSpec(
  order: CommentOrder | null | undefined,
  direction: Direction | null | undefined,
): KeysetSpec {
  const o = order ?? 'comment_date';
  return {
    list: 'comments',
    order: o,
    direction: direction ?? 'desc',
    column: { name: COMMENT_ORDERS[o], kind: 'date', nullable: o === 'last_edit_date' },
  };
}

/**
 * The comments of a list (`slice` of them, with the list's total before the per-row permission check), each with its
 * download, after the list's rules: downloadId is required except for super-user keys, the download must show its
 * comments to the visitor, only super-user keys list comments in every state. `query` is what the operation asks to
 * load with each comment: the common shapes are read with one hand-written statement (store.ts),
 * others by Prisma.
 */
export async function commentSlice(
  deps: Reading,
  access: Access,
  args: Pick<CommentListArgs, 'downloadId' | 'since'>,
  slice: Slice,
  query: Omit<Prisma.CommentFindManyArgs, 'where' | 'orderBy' | 'skip' | 'take'> = {},
): Promise<{ total: number; rows: WithDownload[] }> {
  if (args.downloadId == null && !access.isSuper) throw requiredMissing(['download_id']);
  const rel = commentRelationsOf(query as never);
  if (rel) {
    const filter: CommentFilter = {};
    if (args.downloadId != null) filter.downloadId = args.downloadId;
    if (!access.isSuper) filter.state = 'visible';
    if (args.since) filter.since = args.since;
    const page = await commentPage(deps.db, filter, slice, rel.user, commentDownloadOf(query as never));
    if (args.downloadId != null) mayViewComments(access, args.downloadId, page.parent ?? null);
    return page;
  }
  const where = await commentListWhere(deps.db, access, args);
  const w = slice.window ?? { size: slice.take, backward: false, cursor: null };
  const withDownload = (query as { select?: object }).select
    ? query
    : { ...query, include: { ...(query as { include?: object }).include, download: true } };
  const [total, rows] = await Promise.all([
    countComments(deps.prisma, where),
    deps.prisma.comment.findMany({
      ...withDownload,
      where: { AND: [where, prismaAfter(slice.spec, w)] },
      orderBy: prismaOrderBy(slice.spec, w) as never,
      skip: slice.skip,
      take: slice.take,
    }) as unknown as Promise<WithDownload[]>,
  ]);
  return { total, rows };
}

/**
 * The rows a comment list covers for this visitor: downloadId is required except for super-user keys, the download
 * must show its comments to the visitor (else 403), and only super-user keys list comments in every state.
 */
export async function commentListWhere(
  db: Pick<Database, 'query'>,
  access: Access,
  args: Pick<CommentListArgs, 'downloadId' | 'since'>,
): Promise<Prisma.CommentWhereInput> {
  if (args.downloadId == null && !access.isSuper) throw requiredMissing(['download_id']);
  const filter: CommentFilter = {};
  if (args.downloadId != null) {
    await viewableParent(db, access, args.downloadId);
    filter.downloadId = args.downloadId;
  }
  if (!access.isSuper) filter.state = 'visible';
  if (args.since) filter.since = args.since;
  return filterWhere(COMMENT_FILTER, filter);
}

export async function listComments(
  deps: Reading,
  access: Access,
  args: CommentListArgs,
  query: Omit<Prisma.CommentFindManyArgs, 'where' | 'orderBy' | 'skip' | 'take'> = {},
): Promise<Page<Comment>> {
  const w = pageWindow(args);
  const { total, rows } = await commentSlice(
    deps,
    access,
    args,
    { spec: commentOrderSpec(args.order, args.direction), skip: w.skip, take: w.take },
    query,
  );
  return { nodes: rows.filter((c) => access.canViewComment(c, c.download)), pagination: paginationOf(w, total) };
}

export async function viewableComment(
  prisma: PrismaClient,
  access: Access,
  id: number,
  extra: Omit<Prisma.CommentFindUniqueArgs, 'where'> = {},
): Promise<WithDownload> {
  const c = (await prisma.comment.findUnique({
    ...extra,
    where: { id },
    include: { ...(extra as { include?: object }).include, download: true },
  })) as unknown as WithDownload | null;
  return mayViewComment(access, id, c);
}

/** viewableComment for reads: the common shapes of `query` through one hand-written statement. */
export async function readComment(
  deps: Reading,
  access: Access,
  id: number,
  query: Omit<Prisma.CommentFindUniqueArgs, 'where'> = {},
): Promise<WithDownload> {
  const rel = commentRelationsOf(query as never);
  return rel
    ? mayViewComment(access, id, await commentById(deps.db, id, rel.user))
    : viewableComment(deps.prisma, access, id, query);
}

/** A comment as `query` asks for it, with no view check (a write's payload, read after the write made its checks). */
export async function commentWith(
  deps: Reading,
  id: number,
  query: Omit<Prisma.CommentFindUniqueArgs, 'where'>,
): Promise<WithDownload> {
  const rel = commentRelationsOf(query as never);
  const c = rel
    ? await commentById(deps.db, id, rel.user)
    : ((await deps.prisma.comment.findUnique({
        ...query,
        where: { id },
        include: { ...(query as { include?: object }).include, download: true },
      })) as unknown as WithDownload | null);
  if (!c) throw notFound('comment', id);
  return c;
}

function mayViewComment<T extends WithDownload>(access: Access, id: number, c: T | null): T {
  if (!c) throw notFound('comment', id);
  if (!access.canViewComment(c, c.download)) throw noPermission('view this comment');
  return c;
}

function message(raw: string | null | undefined, onEmpty: () => ApiError): string {
  const m = (raw ?? '').trim();
  if (!m) throw onEmpty();
  if (m.length > MAX_MESSAGE)
    throw new ApiError('invalid_input', `message must be at most ${MAX_MESSAGE} characters.`, { field: 'message' });
  return m;
}

export interface CreateCommentInput {
  downloadId: number;
  message: string;
}

/**
 * Posts a comment. The checks read first; the flood check, the row and its outbox row are one driver transaction
 * (posting is a frequent write, and Prisma's model queries cost several times its statements' own time).
 */
export async function createComment(
  db: Pick<Database, 'query' | 'transaction'>,
  access: Access,
  floodSeconds: number,
  input: CreateCommentInput,
): Promise<Comment> {
  const d = await viewableParent(db, access, input.downloadId);
  if (!access.isSuper && !access.has('comment', d.categoryId)) throw noPermission('comment on this download');
  const userId = access.visitor.userId;
  if (userId === 0)
    throw new ApiError(
      'do_not_have_permission',
      'Guests cannot post comments: act as a user (Forum-Api-User with a super-user key).',
    );
  const text = message(input.message, () => requiredMissing(['message']));
  const state =
    d.category.requireCommentApproval && !access.bypassesCommentApproval(d.categoryId) ? 'moderated' : 'visible';
  const exempt = access.isModerator || floodSeconds === 0;
  const posted = await db.transaction(async (tx) => {
    if (!exempt) {
      // One writer per user at a time, so two simultaneous posts cannot both pass the flood check.
      await tx.query('SELECT pg_advisory_xact_lock(72640333, $1::int)', [userId]);
      // The column holds UTC without a zone: its epoch is read as UTC.
      const [last] = await tx.query<{ at: number | null }>(
        'SELECT (extract(epoch FROM max("commentDate")) * 1000)::float8 AS at FROM comment WHERE "userId" = $1::int',
        [userId],
      );
      const wait = last?.at != null ? Math.ceil((last.at + floodSeconds * 1000 - Date.now()) / 1000) : 0;
      // Answered after the transaction ends (it wrote nothing): an error inside would close its connection.
      if (wait > 0) return { wait };
    }
    const [row] = await tx.query<{ c: JsonRow }>(
      `INSERT INTO comment AS c ("downloadId", "userId", message, state, "commentDate")
       VALUES ($1::int, $2::int, $3::text, $4::"CommentState", $5::timestamp(3)) RETURNING ${jsonOf('Comment', 'c')} AS c`,
      // The moment as UTC text: the column holds UTC without a zone (as Prisma writes it), and the zone is ignored.
      [d.id, userId, text, state, new Date().toISOString()],
    );
    await recordEvent(tx, 'comment.posted', row!.c.id, d.id);
    return { comment: row!.c };
  });
  if ('wait' in posted) {
    throw new ApiError(
      'mc_dm_api_error.rate_limited',
      `You are posting too fast: wait ${posted.wait} second(s) before commenting again.`,
      { retry_after: posted.wait },
      { 'Retry-After': String(posted.wait) },
    );
  }
  const c = revive<Comment & { download: Download }>('Comment', posted.comment);
  c.download = d;
  return c;
}

export interface UpdateCommentInput {
  commentId: number;
  message: string;
}

/** Every edit counts; a history row is written when the editor is not the author, or the author is late. */
export async function updateComment(prisma: PrismaClient, access: Access, input: UpdateCommentInput): Promise<Comment> {
  const c = await viewableComment(prisma, access, input.commentId);
  if (!access.canEditComment(c, c.download)) throw noPermission('edit this comment');
  const text = message(
    input.message,
    () => new ApiError('mc_dm_api_error.message_empty', 'The message cannot be empty.', { field: 'message' }),
  );
  if (text === c.message) return c;
  const now = new Date();
  const editor = access.visitor.userId;
  const keepHistory = editor !== c.userId || now.getTime() - c.commentDate.getTime() > EDIT_GRACE_MS;
  return prisma.$transaction(async (tx) => {
    if (keepHistory)
      await tx.commentEdit.create({
        data: { commentId: c.id, oldMessage: c.message, editorId: editor, editDate: now },
      });
    return tx.comment.update({
      where: { id: c.id },
      data: { message: text, lastEditDate: now, editCount: { increment: 1 } },
      include: { download: true },
    });
  });
}

export interface DeleteCommentInput {
  commentId: number;
  hard?: boolean | null;
  reason?: string | null;
}

export async function deleteComment(prisma: PrismaClient, access: Access, input: DeleteCommentInput): Promise<void> {
  const c = await viewableComment(prisma, access, input.commentId);
  if (!access.canDeleteComment(c, c.download)) throw noPermission('delete this comment');
  const reason = input.reason?.trim() ?? '';
  const log = (action: string) => ({
    action,
    contentType: 'comment',
    contentId: c.id,
    userId: access.visitor.userId,
    reason,
  });
  if (input.hard) {
    requireScopes(access.visitor, ['mc_dm_download:delete_hard']);
    await prisma.$transaction([
      prisma.moderatorLog.create({ data: log('comment.hard_deleted') }),
      prisma.comment.delete({ where: { id: c.id } }),
    ]);
    return;
  }
  await prisma.$transaction([
    prisma.moderatorLog.create({ data: log('comment.soft_deleted') }),
    prisma.comment.update({
      where: { id: c.id },
      data: { state: 'deleted', stateBeforeDelete: c.state === 'deleted' ? c.stateBeforeDelete : c.state },
    }),
    // A soft delete is the one moderation of a comment's state this API has today.
    prisma.eventOutbox.create({ data: { type: 'comment.moderated', objectId: c.id, downloadId: c.downloadId } }),
  ]);
}
