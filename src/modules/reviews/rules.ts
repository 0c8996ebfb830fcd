// Review rules (contract "Community, moderation, statistics"): one review per user and download (a second replaces
// the first), a rating from 1 to 5 with an optional message and version, never on one's own download; the download's
// owner may reply once. Reviews are moderated like comments (the category's comment-approval knob). The download's
// ratingAvg, ratingCount and reviewCount are recomputed from its visible reviews in the transaction that changes
// one, after the download's row lock: concurrent reviews take turns on that lock, and each recount (a statement that
// starts after the lock is granted) sees every review committed before it, so the counters stay exact.
import { recordEvent } from '../../db/outbox.js';
import type { Download, Prisma, PrismaClient, Review, Category } from '../../generated/prisma/client.js';
import type { Access } from '../../permissions/access.js';
import { ApiError, invalidInput, noPermission, notFound, requiredMissing } from '../../errors.js';
import { LIMITS } from '../../config.js';
import { pageWindow, paginationOf, type Page, type PageRequest } from '../../db/lists.js';
import { viewableDownload } from '../downloads/index.js';

type Tx = Prisma.TransactionClient;
export type ReviewWithDownload = Review & { download: Download };

/** Whether the visitor may see a review: its download, then the state rule with the reviewer as owner. */
export function canViewReview(access: Access, r: Review, d: Download): boolean {
  if (access.isSuper) return true;
  if (!access.canViewDownload(d)) return false;
  const own = access.visitor.userId !== 0 && r.userId === access.visitor.userId;
  if (r.state === 'moderated') return own || access.has('viewModerated', d.categoryId);
  if (r.state === 'deleted') return access.has('viewDeleted', d.categoryId);
  return true;
}
const isAuthor = (access: Access, r: Review) => access.visitor.userId !== 0 && r.userId === access.visitor.userId;
/** Editing: its author while they hold `review`, or editAnyComment (reviews are moderated like comments). */
export function canEditReview(access: Access, r: Review, d: Download): boolean {
  return (
    access.isSuper ||
    (canViewReview(access, r, d) &&
      (access.has('editAnyComment', d.categoryId) || (isAuthor(access, r) && access.has('review', d.categoryId))))
  );
}
/** Deleting: its author while they hold `review`, or deleteAnyComment. */
export function canDeleteReview(access: Access, r: Review, d: Download): boolean {
  return (
    access.isSuper ||
    (canViewReview(access, r, d) &&
      (access.has('deleteAnyComment', d.categoryId) || (isAuthor(access, r) && access.has('review', d.categoryId))))
  );
}
/** Replying: the download's owner (or a super-user key), once. */
export function canReplyToReview(access: Access, r: Review, d: Download): boolean {
  return (
    access.isSuper || (canViewReview(access, r, d) && access.visitor.userId !== 0 && d.userId === access.visitor.userId)
  );
}

/** What an operation asks to load with each review (queryFromInfo), merged with the download the checks need. */
export type ReviewQuery = { include?: Record<string, unknown>; select?: Record<string, unknown> };
function withDownload(query: ReviewQuery): object {
  return query.select
    ? { select: { ...query.select, download: true, userId: true, state: true, downloadId: true } }
    : { include: { ...query.include, download: true } };
}

export async function viewableReview(
  prisma: PrismaClient | Tx,
  access: Access,
  id: number,
  query: ReviewQuery = {},
): Promise<ReviewWithDownload> {
  const r = (await prisma.review.findUnique({
    where: { id },
    ...withDownload(query),
  })) as unknown as ReviewWithDownload | null;
  if (!r) throw notFound('review', id);
  if (!canViewReview(access, r, r.download)) throw noPermission('view this review');
  return r;
}

export interface ReviewListArgs extends PageRequest {
  downloadId?: number | null;
}

/**
 * A download's reviews, newest first. downloadId is required except for super-user keys; the download must be
 * viewable (else 403); only super-user keys list reviews that are not visible (the rule of comment lists).
 */
export async function listReviews(
  prisma: PrismaClient,
  access: Access,
  args: ReviewListArgs,
  query: ReviewQuery = {},
): Promise<Page<ReviewWithDownload>> {
  if (args.downloadId == null && !access.isSuper) throw requiredMissing(['download_id']);
  const w = pageWindow(args);
  if (args.downloadId != null) await viewableDownload(prisma, access, args.downloadId);
  const where: Prisma.ReviewWhereInput = {
    ...(args.downloadId != null ? { downloadId: args.downloadId } : {}),
    ...(access.isSuper ? {} : { state: 'visible' as const }),
  };
  const [total, rows] = await Promise.all([
    prisma.review.count({ where }),
    prisma.review.findMany({
      where,
      ...withDownload(query),
      orderBy: [{ reviewDate: 'desc' }, { id: 'desc' }],
      skip: w.skip,
      take: w.take,
    }) as unknown as Promise<ReviewWithDownload[]>,
  ]);
  return { nodes: rows.filter((r) => canViewReview(access, r, r.download)), pagination: paginationOf(w, total) };
}

function rating(v: number | null | undefined): number {
  if (v == null) throw requiredMissing(['rating']);
  if (!Number.isInteger(v) || v < 1 || v > 5) throw invalidInput('rating', `rating must be 1, 2, 3, 4 or 5, got ${v}.`);
  return v;
}
function text(v: string | null | undefined, field: string, max: number): string {
  const s = (v ?? '').trim();
  if (s.length > max) throw invalidInput(field, `${field} must be at most ${max} characters.`);
  return s;
}

/**
 * ratingAvg, ratingCount and reviewCount of a download, recomputed from its visible reviews (reviewCount: those with
 * a message). The caller holds the download's row lock (lockDownload) in the same transaction.
 */
export async function recountRatings(tx: Tx, downloadId: number): Promise<void> {
  await tx.$executeRaw`
    UPDATE "download" SET "ratingCount" = s.c, "ratingAvg" = s.a, "reviewCount" = s.r
    FROM (SELECT count(*)::int AS c, coalesce(avg("rating"), 0)::float8 AS a,
                 (count(*) FILTER (WHERE "message" <> ''))::int AS r
          FROM "review" WHERE "downloadId" = ${downloadId} AND "state" = 'visible') s
    WHERE "id" = ${downloadId}`;
}

/** The download's row lock: writers of its reviews take turns (NO KEY UPDATE: review inserts' foreign keys pass). */
export async function lockDownload(tx: Tx, downloadId: number): Promise<boolean> {
  const rows = await tx.$queryRaw<unknown[]>`SELECT 1 FROM "download" WHERE "id" = ${downloadId} FOR NO KEY UPDATE`;
  return rows.length > 0;
}

export interface CreateReviewInput {
  downloadId: number;
  rating: number;
  message?: string | null;
  versionString?: string | null;
}

/** Creates the visitor's review of a download, or replaces the one they wrote before (the owner's reply goes with it). */
export async function createReview(prisma: PrismaClient, access: Access, input: CreateReviewInput): Promise<Review> {
  const d = (await viewableDownload(prisma, access, input.downloadId, { include: { category: true } })) as Download & {
    category: Category;
  };
  const userId = access.visitor.userId;
  if (userId === 0)
    throw new ApiError(
      'do_not_have_permission',
      'Guests cannot review downloads: act as a user (Forum-Api-User with a super-user key).',
    );
  if (!access.isSuper && !access.has('review', d.categoryId)) throw noPermission('review this download');
  if (d.userId === userId)
    throw new ApiError('mc_dm_api_error.cannot_review_own_download', 'You cannot review your own download.', {
      download_id: d.id,
    });
  const data = {
    rating: rating(input.rating),
    message: text(input.message, 'message', LIMITS.maxReviewMessage),
    versionString: text(input.versionString, 'version_string', LIMITS.maxReviewVersion),
    state:
      d.category.requireCommentApproval && !access.bypassesCommentApproval(d.categoryId)
        ? ('moderated' as const)
        : ('visible' as const),
    reviewDate: new Date(),
    lastEditDate: null,
    stateBeforeDelete: null,
    ownerReply: null,
    ownerReplyDate: null,
  };
  return prisma.$transaction(async (tx) => {
    if (!(await lockDownload(tx, d.id))) throw notFound('download', d.id);
    const review = await tx.review.upsert({
      where: { downloadId_userId: { downloadId: d.id, userId } },
      create: { downloadId: d.id, userId, ...data },
      update: data,
    });
    await recountRatings(tx, d.id);
    // Webhooks hear of a review others can read; one awaiting approval is announced when it is approved.
    if (review.state === 'visible') await recordEvent(tx, 'review.posted', review.id, d.id);
    return review;
  });
}

export interface UpdateReviewInput {
  reviewId: number;
  rating?: number | null;
  message?: string | null;
  versionString?: string | null;
}

export async function updateReview(prisma: PrismaClient, access: Access, input: UpdateReviewInput): Promise<Review> {
  const r = await viewableReview(prisma, access, input.reviewId);
  if (!canEditReview(access, r, r.download)) throw noPermission('edit this review');
  const data: Prisma.ReviewUpdateInput = {};
  if (input.rating != null) data.rating = rating(input.rating);
  if (input.message != null) data.message = text(input.message, 'message', LIMITS.maxReviewMessage);
  if (input.versionString != null)
    data.versionString = text(input.versionString, 'version_string', LIMITS.maxReviewVersion);
  const changed = Object.entries(data).some(([k, v]) => r[k as keyof Review] !== v);
  if (!changed) return r;
  return prisma.$transaction(async (tx) => {
    await lockDownload(tx, r.downloadId);
    const updated = await tx.review.update({ where: { id: r.id }, data: { ...data, lastEditDate: new Date() } });
    await recountRatings(tx, r.downloadId);
    return updated;
  });
}

export interface DeleteReviewInput {
  reviewId: number;
  reason?: string | null;
}

/** A soft delete (state deleted, out of the counters), written to the moderator log with the reason. */
export async function deleteReview(prisma: PrismaClient, access: Access, input: DeleteReviewInput): Promise<void> {
  const r = await viewableReview(prisma, access, input.reviewId);
  if (!canDeleteReview(access, r, r.download)) throw noPermission('delete this review');
  const reason = text(input.reason, 'reason', LIMITS.maxModerationReason);
  await prisma.$transaction(async (tx) => {
    await lockDownload(tx, r.downloadId);
    if (r.state !== 'deleted')
      await tx.review.update({ where: { id: r.id }, data: { state: 'deleted', stateBeforeDelete: r.state } });
    await tx.moderatorLog.create({
      data: {
        action: 'review.soft_deleted',
        contentType: 'review',
        contentId: r.id,
        userId: access.visitor.userId,
        reason,
      },
    });
    await recountRatings(tx, r.downloadId);
  });
}

export interface ReplyToReviewInput {
  reviewId: number;
  message: string;
}

/** The download owner's one reply: a second answers mc_dm_api_error.review_already_replied and changes nothing. */
export async function replyToReview(prisma: PrismaClient, access: Access, input: ReplyToReviewInput): Promise<Review> {
  const r = await viewableReview(prisma, access, input.reviewId);
  if (!canReplyToReview(access, r, r.download)) throw noPermission('reply to this review');
  const message = text(input.message, 'message', LIMITS.maxReviewMessage);
  if (!message) throw requiredMissing(['message']);
  const { count } = await prisma.review.updateMany({
    where: { id: r.id, ownerReply: null },
    data: { ownerReply: message, ownerReplyDate: new Date() },
  });
  if (count === 0)
    throw new ApiError('mc_dm_api_error.review_already_replied', 'The owner has replied to this review already.', {
      review_id: r.id,
    });
  return prisma.review.findUniqueOrThrow({ where: { id: r.id } });
}
