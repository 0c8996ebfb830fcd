// Review: a rating of a download (1–5) with an optional message, one per user and download. Reads need
// mc_dm_download:read, writes mc_dm_download:write; the permissions are checked in rules.ts.
import { queryFromInfo } from '@pothos/plugin-prisma';
import type { Download, Review } from '../../generated/prisma/client.js';
import { builder, unix } from '../../graphql/builder.js';
import { listOf, pageArgs } from '../../graphql/pagination.js';
import { deletePayloadOf, payloadOf } from '../../graphql/payloads.js';
import { connectionArgs, connectionFrom, connectionOf } from '../../graphql/connections.js';
import { NodeRef, registerNode, unlessUnseen } from '../../graphql/node.js';
import { noPermission } from '../../errors.js';
import { prismaAfter, prismaOrderBy, windowOf, type KeysetSpec } from '../../db/keyset.js';
import type { Context } from '../../graphql/context.js';
import type { Access } from '../../permissions/access.js';
import { DownloadRef } from '../downloads/index.js';
import * as reviews from './rules.js';

const READ = ['mc_dm_download:read'];
const WRITE = ['mc_dm_download:write'];

const ReviewStateEnum = builder.enumType('ReviewState', {
  description: 'Where a review stands. Only VISIBLE reviews count in the download’s ratings.',
  values: {
    VISIBLE: { value: 'visible', description: 'Shown to everyone who may view the download; counted.' },
    MODERATED: {
      value: 'moderated',
      description:
        'Awaiting approval (where the category requires comment approval and the reviewer lacks bypassCommentApproval): shown only to its author and to holders of viewModerated; not counted.',
    },
    DELETED: { value: 'deleted', description: 'Soft-deleted: shown only to holders of viewDeleted; not counted.' },
  } as const,
});

type WithDownload = Review & { download?: Download };
const onReview = async (r: WithDownload, ctx: Context, check: (a: Access, r: Review, d: Download) => boolean) => {
  const d = r.download ?? (await ctx.prisma.download.findUniqueOrThrow({ where: { id: r.downloadId } }));
  return check(await ctx.access(), r, d);
};

export const ReviewRef = builder.prismaObject('Review', {
  interfaces: [NodeRef],
  description:
    "A user's rating of a download, from 1 to 5, with an optional message and the version it is about. One per user and download; the download's owner may reply once. Reading needs mc_dm_download:read and the view permission on the download; moderated and deleted reviews are shown as ReviewState says.",
  fields: (t) => ({
    reviewId: t.exposeInt('id', { description: "The numeric review id (the REST API's `review_id`)." }),
    downloadId: t.exposeInt('downloadId', { description: 'The download reviewed.' }),
    userId: t.exposeInt('userId', { description: "The reviewer's user id." }),
    username: t.string({
      description: "The reviewer's display name.",
      select: { user: { select: { username: true } } },
      resolve: (r) => r.user.username,
    }),
    rating: t.exposeInt('rating', { description: 'The rating, 1 (worst) to 5 (best).' }),
    message: t.exposeString('message', { description: 'The text of the review; empty for a rating alone.' }),
    versionString: t.exposeString('versionString', {
      description: 'The version the review is about, as the reviewer wrote it; empty when not given.',
    }),
    reviewDate: t.int({
      description: 'When it was written (or last replaced by a new review), in Unix seconds.',
      resolve: (r) => unix(r.reviewDate),
    }),
    lastEditDate: t.int({
      description: 'When it was last edited, in Unix seconds; 0 when never edited.',
      resolve: (r) => unix(r.lastEditDate),
    }),
    reviewState: t.expose('state', { type: ReviewStateEnum, description: 'VISIBLE, MODERATED or DELETED.' }),
    ownerReply: t.exposeString('ownerReply', {
      nullable: true,
      description: "The download owner's reply; null until they reply (once).",
    }),
    ownerReplyDate: t.int({
      description: 'When the owner replied, in Unix seconds; 0 when they have not.',
      resolve: (r) => unix(r.ownerReplyDate),
    }),
    canEdit: t.boolean({
      description: 'Whether the visitor may edit it: its author (holding review), or editAnyComment.',
      resolve: (r, _a, ctx) => onReview(r, ctx, reviews.canEditReview),
    }),
    canDelete: t.boolean({
      description: 'Whether the visitor may delete it: its author (holding review), or deleteAnyComment.',
      resolve: (r, _a, ctx) => onReview(r, ctx, reviews.canDeleteReview),
    }),
    canReply: t.boolean({
      description: "Whether the visitor may reply to it: the download's owner, while there is no reply yet.",
      resolve: async (r, _a, ctx) => r.ownerReply === null && (await onReview(r, ctx, reviews.canReplyToReview)),
    }),
    author: t.relation('user', { description: 'The user who wrote the review (`userId`).' }),
    download: t.relation('download', { description: 'The download reviewed.' }),
  }),
});

const ReviewList = listOf<Review>('Review', ReviewRef);
export const ReviewConnection = connectionOf<Review>('Review', ReviewRef, 'review');

const REVIEW_SPEC = (direction: 'asc' | 'desc' | null | undefined): KeysetSpec => ({
  list: 'Download.reviews',
  order: 'review_date',
  direction: direction ?? 'desc',
  column: { name: 'reviewDate', kind: 'date' },
});

builder.prismaObjectFields(DownloadRef, (t) => ({
  reviews: t.field({
    type: ReviewConnection,
    nullable: true,
    description:
      "The download's reviews as a cursor connection, newest first (ties by id). Only super-user keys list reviews that are not visible. Needs mc_dm_download:read.",
    authScopes: { scope: READ },
    args: { ...connectionArgs(t.arg) },
    resolve: async (d, args, ctx, info) => {
      const spec = REVIEW_SPEC('desc');
      const w = windowOf(ctx.cursors, spec, args);
      const access = await ctx.access();
      if (!access.canViewDownload(d)) throw noPermission('view this download');
      const where = { downloadId: d.id, ...(access.isSuper ? {} : { state: 'visible' as const }) };
      const [total, rows] = await Promise.all([
        ctx.prisma.review.count({ where }),
        ctx.prisma.review.findMany({
          ...(queryFromInfo({
            context: ctx,
            info,
            typeName: 'Review',
            paths: [['edges', 'node'], ['nodes']],
          }) as object),
          where: { AND: [where, prismaAfter(spec, w)] },
          orderBy: prismaOrderBy(spec, w) as never,
          take: w.size + 1,
        }) as unknown as Promise<Review[]>,
      ]);
      const withParent = rows.map((r) => Object.assign(r, { download: d }));
      return connectionFrom(ctx.cursors, spec, w, withParent, total, (r) => reviews.canViewReview(access, r, d));
    },
  }),
}));

builder.queryFields((t) => ({
  reviews: t.field({
    nullable: true,
    type: ReviewList,
    description:
      'Reviews of a download, one page at a time, newest first. Needs mc_dm_download:read and the view permission on the download. downloadId is required (required_input_missing) except with super-user keys. Only super-user keys list reviews that are not VISIBLE.',
    authScopes: { scope: READ },
    args: {
      ...pageArgs(t.arg),
      downloadId: t.arg.int({
        required: false,
        description:
          'The download whose reviews to list; required except with super-user keys. Unknown: mc_dm_api_error.download_not_found.',
      }),
    },
    resolve: async (_r, args, ctx, info) =>
      reviews.listReviews(
        ctx.prisma,
        await ctx.access(),
        args,
        queryFromInfo({ context: ctx, info, typeName: 'Review', path: ['nodes'] }) as reviews.ReviewQuery,
      ),
  }),
  review: t.prismaField({
    type: 'Review',
    nullable: true,
    description:
      'One review. Needs mc_dm_download:read. Unknown ids answer mc_dm_api_error.review_not_found; reviews the visitor may not view, do_not_have_permission.',
    authScopes: { scope: READ },
    args: { reviewId: t.arg.int({ required: true, description: 'The numeric review id.' }) },
    resolve: async (query, _r, args, ctx) =>
      reviews.viewableReview(ctx.prisma, await ctx.access(), args.reviewId, query as reviews.ReviewQuery),
  }),
}));

const CreateReviewInput = builder.inputType('CreateReviewInput', {
  description: "The visitor's review of a download; it replaces their earlier review of the same download.",
  fields: (t) => ({
    downloadId: t.int({ required: true, description: 'The download to review (not one of your own).' }),
    rating: t.int({ required: true, description: 'The rating, 1 to 5 (anything else: invalid_input).' }),
    message: t.string({ required: false, description: 'The text, at most 10,000 characters; empty by default.' }),
    versionString: t.string({
      required: false,
      description: 'The version the review is about, at most 50 characters; empty by default.',
    }),
  }),
});
const UpdateReviewInput = builder.inputType('UpdateReviewInput', {
  description: 'New values for a review; fields left out stay as they are.',
  fields: (t) => ({
    reviewId: t.int({ required: true, description: 'The review to edit.' }),
    rating: t.int({ required: false, description: 'The rating, 1 to 5.' }),
    message: t.string({ required: false, description: 'The text, at most 10,000 characters.' }),
    versionString: t.string({ required: false, description: 'The version, at most 50 characters.' }),
  }),
});
const DeleteReviewInput = builder.inputType('DeleteReviewInput', {
  description: 'Which review to delete, and why.',
  fields: (t) => ({
    reviewId: t.int({ required: true, description: 'The review to delete.' }),
    reason: t.string({ required: false, description: 'Why, written to the moderator log (at most 1,000 characters).' }),
  }),
});
const ReplyToReviewInput = builder.inputType('ReplyToReviewInput', {
  description: "The download owner's reply to a review.",
  fields: (t) => ({
    reviewId: t.int({ required: true, description: 'The review to reply to.' }),
    message: t.string({ required: true, description: 'The reply, 1 to 10,000 characters after trimming.' }),
  }),
});

const CreateReviewPayload = payloadOf<Review>('CreateReviewPayload', 'review', ReviewRef);
const UpdateReviewPayload = payloadOf<Review>('UpdateReviewPayload', 'review', ReviewRef);
const ReplyToReviewPayload = payloadOf<Review>('ReplyToReviewPayload', 'review', ReviewRef);
const DeleteReviewPayload = deletePayloadOf<Review>('DeleteReviewPayload', 'review', ReviewRef);

builder.mutationFields((t) => ({
  createReview: t.field({
    nullable: true,
    description:
      "Rates and reviews a download as the visitor; a second review of the same download replaces the first (and the owner's reply to it). Needs mc_dm_download:write, the view and review permissions on the download; guests cannot review, nor can the download's owner (mc_dm_api_error.cannot_review_own_download). It starts VISIBLE, or MODERATED where the category requires comment approval and the visitor lacks bypassCommentApproval. The download's ratingAvg, ratingCount and reviewCount change in the same transaction. Errors also: invalid_input (rating outside 1–5, texts too long), mc_dm_api_error.download_not_found, do_not_have_permission.",
    type: CreateReviewPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: CreateReviewInput, required: true, description: 'The download and the review.' }) },
    resolve: async (_r, { input }, ctx) => {
      // `review.posted` is in the outbox with the review (reviews.createReview); waking sends it at once.
      const review = ctx.events.downloadChanged(await reviews.createReview(ctx.prisma, await ctx.access(), input));
      return { review };
    },
  }),
  updateReview: t.field({
    nullable: true,
    description:
      "Changes a review's rating, message or version. Needs mc_dm_download:write and canEdit on the review (its author holding review, or editAnyComment). Errors: invalid_input, mc_dm_api_error.review_not_found, do_not_have_permission.",
    type: UpdateReviewPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: UpdateReviewInput, required: true, description: 'The review and its new values.' }) },
    resolve: async (_r, { input }, ctx) => ({
      review: await reviews.updateReview(ctx.prisma, await ctx.access(), input),
    }),
  }),
  deleteReview: t.field({
    nullable: true,
    description:
      "Soft-deletes a review (state DELETED; it leaves the download's ratings), written to the moderator log with the reason. Needs mc_dm_download:write and canDelete on the review (its author holding review, or deleteAnyComment). Errors: mc_dm_api_error.review_not_found, do_not_have_permission.",
    type: DeleteReviewPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: DeleteReviewInput, required: true, description: 'The review and a reason.' }) },
    resolve: async (_r, { input }, ctx) => {
      const access = await ctx.access();
      await reviews.deleteReview(ctx.prisma, access, input);
      const object = await unlessUnseen(reviews.viewableReview(ctx.prisma, access, input.reviewId));
      return { success: true as const, typeName: 'Review', id: input.reviewId, object };
    },
  }),
  replyToReview: t.field({
    nullable: true,
    description:
      "The download owner's reply to a review, once. Needs mc_dm_download:write and to own the download (or a super-user key). Errors: mc_dm_api_error.review_already_replied (a second reply; nothing changes), required_input_missing (message), invalid_input, mc_dm_api_error.review_not_found, do_not_have_permission.",
    type: ReplyToReviewPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: ReplyToReviewInput, required: true, description: 'The review and the reply.' }) },
    resolve: async (_r, { input }, ctx) => ({
      review: await reviews.replyToReview(ctx.prisma, await ctx.access(), input),
    }),
  }),
}));

registerNode('Review', READ, async (ctx, id) => reviews.viewableReview(ctx.prisma, await ctx.access(), id));
