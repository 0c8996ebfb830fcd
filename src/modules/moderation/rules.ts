// Moderation rules (contract "Community, moderation, statistics"): approve or reject what waits in the moderated
// state. Approve: moderated → visible. Reject: moderated → deleted, the reason written to the audit log (downloads)
// or the moderator log (comments), as a deletion writes it; a rejected download is purged after the retention window
// like any soft-deleted one. Each change is one conditional UPDATE (`WHERE state = 'moderated'`), so two moderators
// acting at once cannot both succeed: the second finds nothing to change and answers the *_not_moderated code.
import { recordEvent, recordEvents } from '../../db/outbox.js';
import type { Comment, Download, PrismaClient } from '../../generated/prisma/client.js';
import type { Access } from '../../permissions/access.js';
import { ApiError, noPermission, requiredMissing } from '../../errors.js';
import { LIMITS } from '../../config.js';
import { viewableDownload } from '../downloads/index.js';
import { viewableComment } from '../comments/index.js';
import { refreshCategoryCounts } from '../categories/index.js';
import { canDeleteReview, canEditReview, lockDownload, recountRatings, viewableReview } from '../reviews/index.js';
import type { Review } from '../../generated/prisma/client.js';

const notModerated = (kind: 'download' | 'comment' | 'review', id: number) =>
  kind === 'review'
    ? new ApiError(
        'mc_dm_api_error.review_not_moderated',
        `The review (${id}) is not awaiting approval, so it cannot be approved or rejected.`,
        { review_id: id },
      )
    : kind === 'download'
      ? new ApiError(
          'mc_dm_api_error.download_not_moderated',
          `The download (${id}) is not awaiting approval, so it cannot be approved or rejected.`,
          { download_id: id },
        )
      : new ApiError(
          'mc_dm_api_error.comment_not_moderated',
          `The comment (${id}) is not awaiting approval, so it cannot be approved or rejected.`,
          { comment_id: id },
        );

/** A rejection's reason: required (the author is told why), trimmed, at most LIMITS.maxModerationReason characters. */
export function rejectionReason(raw: string | null | undefined): string {
  const reason = (raw ?? '').trim();
  if (!reason) throw requiredMissing(['reason']);
  if (reason.length > LIMITS.maxModerationReason)
    throw new ApiError('invalid_input', `reason must be at most ${LIMITS.maxModerationReason} characters.`, {
      field: 'reason',
    });
  return reason;
}

/** Approving a download: viewModerated and canEdit on it (or a super-user key). */
export function canApproveDownload(access: Access, d: Download): boolean {
  return access.isSuper || (access.has('viewModerated', d.categoryId) && access.canEditDownload(d));
}
/** Rejecting a download: viewModerated and canDelete on it (or a super-user key). */
export function canRejectDownload(access: Access, d: Download): boolean {
  return access.isSuper || (access.has('viewModerated', d.categoryId) && access.canDeleteDownload(d));
}

export async function approveDownload(prisma: PrismaClient, access: Access, downloadId: number): Promise<Download> {
  const d = await viewableDownload(prisma, access, downloadId);
  if (!canApproveDownload(access, d)) throw noPermission('approve this download');
  return prisma.$transaction(async (tx) => {
    const { count } = await tx.download.updateMany({
      where: { id: d.id, state: 'moderated' },
      data: { state: 'visible' },
    });
    if (count === 0) throw notModerated('download', d.id);
    await tx.auditLog.create({
      data: { action: 'download.approved', contentType: 'download', contentId: d.id, userId: access.visitor.userId },
    });
    await refreshCategoryCounts(tx, [d.categoryId]);
    await recordEvent(tx, 'download.state_changed', d.id, d.id);
    return tx.download.findUniqueOrThrow({ where: { id: d.id } });
  });
}

export async function rejectDownload(
  prisma: PrismaClient,
  access: Access,
  input: { downloadId: number; reason?: string | null },
): Promise<Download> {
  const d = await viewableDownload(prisma, access, input.downloadId);
  if (!canRejectDownload(access, d)) throw noPermission('reject this download');
  const reason = rejectionReason(input.reason);
  return prisma.$transaction(async (tx) => {
    const { count } = await tx.download.updateMany({
      where: { id: d.id, state: 'moderated' },
      data: { state: 'deleted', stateBeforeDelete: 'moderated', deletedAt: new Date() },
    });
    if (count === 0) throw notModerated('download', d.id);
    await tx.auditLog.create({
      data: {
        action: 'download.rejected',
        contentType: 'download',
        contentId: d.id,
        userId: access.visitor.userId,
        reason,
      },
    });
    await recordEvent(tx, 'download.state_changed', d.id, d.id);
    return tx.download.findUniqueOrThrow({ where: { id: d.id } });
  });
}

type CommentWithDownload = Awaited<ReturnType<typeof viewableComment>>;

/** Approving a comment: viewModerated and canEdit on it (or a super-user key). */
export function canApproveComment(access: Access, c: CommentWithDownload): boolean {
  return access.isSuper || (access.has('viewModerated', c.download.categoryId) && access.canEditComment(c, c.download));
}
/** Rejecting a comment: viewModerated and canDelete on it (or a super-user key). */
export function canRejectComment(access: Access, c: CommentWithDownload): boolean {
  return (
    access.isSuper || (access.has('viewModerated', c.download.categoryId) && access.canDeleteComment(c, c.download))
  );
}

export async function approveComment(prisma: PrismaClient, access: Access, commentId: number): Promise<Comment> {
  const c = await viewableComment(prisma, access, commentId);
  if (!canApproveComment(access, c)) throw noPermission('approve this comment');
  return prisma.$transaction(async (tx) => {
    const { count } = await tx.comment.updateMany({
      where: { id: c.id, state: 'moderated' },
      data: { state: 'visible' },
    });
    if (count === 0) throw notModerated('comment', c.id);
    await tx.moderatorLog.create({
      data: { action: 'comment.approved', contentType: 'comment', contentId: c.id, userId: access.visitor.userId },
    });
    // Moderated, and posted for everyone who could not see it while it waited (subscribers of commentPosted).
    await recordEvents(tx, [
      { type: 'comment.moderated', objectId: c.id, downloadId: c.downloadId },
      { type: 'comment.posted', objectId: c.id, downloadId: c.downloadId },
    ]);
    return tx.comment.findUniqueOrThrow({ where: { id: c.id }, include: { download: true } });
  });
}

export async function rejectComment(
  prisma: PrismaClient,
  access: Access,
  input: { commentId: number; reason?: string | null },
): Promise<Comment> {
  const c = await viewableComment(prisma, access, input.commentId);
  if (!canRejectComment(access, c)) throw noPermission('reject this comment');
  const reason = rejectionReason(input.reason);
  return prisma.$transaction(async (tx) => {
    const { count } = await tx.comment.updateMany({
      where: { id: c.id, state: 'moderated' },
      data: { state: 'deleted', stateBeforeDelete: 'moderated' },
    });
    if (count === 0) throw notModerated('comment', c.id);
    await tx.moderatorLog.create({
      data: {
        action: 'comment.rejected',
        contentType: 'comment',
        contentId: c.id,
        userId: access.visitor.userId,
        reason,
      },
    });
    await recordEvent(tx, 'comment.moderated', c.id, c.downloadId);
    return tx.comment.findUniqueOrThrow({ where: { id: c.id }, include: { download: true } });
  });
}

/** Approving a review: viewModerated and canEdit on it (or a super-user key); the download's ratings follow. */
export async function approveReview(prisma: PrismaClient, access: Access, reviewId: number): Promise<Review> {
  const r = await viewableReview(prisma, access, reviewId);
  if (!(access.isSuper || (access.has('viewModerated', r.download.categoryId) && canEditReview(access, r, r.download))))
    throw noPermission('approve this review');
  return prisma.$transaction(async (tx) => {
    await lockDownload(tx, r.downloadId);
    const { count } = await tx.review.updateMany({
      where: { id: r.id, state: 'moderated' },
      data: { state: 'visible' },
    });
    if (count === 0) throw notModerated('review', r.id);
    await tx.moderatorLog.create({
      data: { action: 'review.approved', contentType: 'review', contentId: r.id, userId: access.visitor.userId },
    });
    await recountRatings(tx, r.downloadId);
    await recordEvent(tx, 'review.posted', r.id, r.downloadId);
    return tx.review.findUniqueOrThrow({ where: { id: r.id } });
  });
}

/** Rejecting a review: viewModerated and canDelete on it (or a super-user key), the reason in the moderator log. */
export async function rejectReview(
  prisma: PrismaClient,
  access: Access,
  input: { reviewId: number; reason?: string | null },
): Promise<Review> {
  const r = await viewableReview(prisma, access, input.reviewId);
  if (
    !(access.isSuper || (access.has('viewModerated', r.download.categoryId) && canDeleteReview(access, r, r.download)))
  )
    throw noPermission('reject this review');
  const reason = rejectionReason(input.reason);
  return prisma.$transaction(async (tx) => {
    const { count } = await tx.review.updateMany({
      where: { id: r.id, state: 'moderated' },
      data: { state: 'deleted', stateBeforeDelete: 'moderated' },
    });
    if (count === 0) throw notModerated('review', r.id);
    await tx.moderatorLog.create({
      data: {
        action: 'review.rejected',
        contentType: 'review',
        contentId: r.id,
        userId: access.visitor.userId,
        reason,
      },
    });
    return tx.review.findUniqueOrThrow({ where: { id: r.id } });
  });
}
