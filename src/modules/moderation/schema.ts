// Moderation: approve or reject downloads and comments that wait in the moderated state. Writes need
// mc_dm_download:write; the permissions are checked in rules.ts.
import { builder, unix } from '../../graphql/builder.js';
import { payloadOf } from '../../graphql/payloads.js';
import { connectionArgs, connectionFrom, connectionOf } from '../../graphql/connections.js';
import { windowOf } from '../../db/keyset.js';
import type { Comment, Download, Report, Review } from '../../generated/prisma/client.js';
import { DownloadRef } from '../downloads/index.js';
import { CommentRef } from '../comments/index.js';
import { FileRef, deps as fileDeps } from '../files/index.js';
import { ReviewRef } from '../reviews/index.js';
import * as rules from './rules.js';
import * as reports from './reports.js';
import * as audit from './audit.js';
import { NodeRef, registerNode } from '../../graphql/node.js';
import { ApiError, noPermission } from '../../errors.js';

const moderation = { ...rules, ...reports };
const READ = ['mc_dm_download:read'];
const WRITE = ['mc_dm_download:write'];

const ApproveDownloadInput = builder.inputType('ApproveDownloadInput', {
  description: 'The moderated download to approve.',
  fields: (t) => ({ downloadId: t.int({ required: true, description: 'The download to approve.' }) }),
});
const RejectDownloadInput = builder.inputType('RejectDownloadInput', {
  description: 'The moderated download to reject, and why.',
  fields: (t) => ({
    downloadId: t.int({ required: true, description: 'The download to reject.' }),
    reason: t.string({
      required: true,
      description: 'Why, written to the audit log: 1 to 1,000 characters after trimming.',
    }),
  }),
});
const ApproveCommentInput = builder.inputType('ApproveCommentInput', {
  description: 'The moderated comment to approve.',
  fields: (t) => ({ commentId: t.int({ required: true, description: 'The comment to approve.' }) }),
});
const RejectCommentInput = builder.inputType('RejectCommentInput', {
  description: 'The moderated comment to reject, and why.',
  fields: (t) => ({
    commentId: t.int({ required: true, description: 'The comment to reject.' }),
    reason: t.string({
      required: true,
      description: 'Why, written to the moderator log: 1 to 1,000 characters after trimming.',
    }),
  }),
});

const ApproveReviewInput = builder.inputType('ApproveReviewInput', {
  description: 'The moderated review to approve.',
  fields: (t) => ({ reviewId: t.int({ required: true, description: 'The review to approve.' }) }),
});
const RejectReviewInput = builder.inputType('RejectReviewInput', {
  description: 'The moderated review to reject, and why.',
  fields: (t) => ({
    reviewId: t.int({ required: true, description: 'The review to reject.' }),
    reason: t.string({
      required: true,
      description: 'Why, written to the moderator log: 1 to 1,000 characters after trimming.',
    }),
  }),
});
const ApproveReviewPayload = payloadOf<Review>('ApproveReviewPayload', 'review', ReviewRef);
const RejectReviewPayload = payloadOf<Review>('RejectReviewPayload', 'review', ReviewRef);

const ApproveDownloadPayload = payloadOf<Download>('ApproveDownloadPayload', 'download', DownloadRef);
const RejectDownloadPayload = payloadOf<Download>('RejectDownloadPayload', 'download', DownloadRef);
const ApproveCommentPayload = payloadOf<Comment>('ApproveCommentPayload', 'comment', CommentRef);
const RejectCommentPayload = payloadOf<Comment>('RejectCommentPayload', 'comment', CommentRef);

builder.mutationFields((t) => ({
  approveDownload: t.field({
    nullable: true,
    description:
      'Approves a download awaiting approval: MODERATED becomes VISIBLE (audit action download.approved). Needs mc_dm_download:write, the viewModerated permission and canEdit on the download (or a super-user key). Errors: mc_dm_api_error.download_not_moderated (it is not MODERATED; nothing changes), mc_dm_api_error.download_not_found, do_not_have_permission.',
    type: ApproveDownloadPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: ApproveDownloadInput, required: true, description: 'The download.' }) },
    resolve: async (_r, { input }, ctx) => ({
      download: ctx.events.downloadChanged(
        await moderation.approveDownload(ctx.prisma, await ctx.access(), input.downloadId),
      ),
    }),
  }),
  rejectDownload: t.field({
    nullable: true,
    description:
      'Rejects a download awaiting approval: MODERATED becomes DELETED (a soft delete: restoreDownload brings it back as MODERATED, and it is purged after the retention window), with the reason in the audit log (action download.rejected). Needs mc_dm_download:write, the viewModerated permission and canDelete on the download (or a super-user key). Errors: mc_dm_api_error.download_not_moderated, required_input_missing (reason), invalid_input (reason too long), mc_dm_api_error.download_not_found, do_not_have_permission.',
    type: RejectDownloadPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: RejectDownloadInput, required: true, description: 'The download and the reason.' }) },
    resolve: async (_r, { input }, ctx) => ({
      download: ctx.events.downloadChanged(await moderation.rejectDownload(ctx.prisma, await ctx.access(), input)),
    }),
  }),
  approveComment: t.field({
    nullable: true,
    description:
      'Approves a comment awaiting approval: MODERATED becomes VISIBLE (moderator log action comment.approved). Needs mc_dm_download:write, the viewModerated permission and canEdit on the comment (or a super-user key). Errors: mc_dm_api_error.comment_not_moderated (it is not MODERATED; nothing changes), mc_dm_api_error.comment_not_found, do_not_have_permission.',
    type: ApproveCommentPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: ApproveCommentInput, required: true, description: 'The comment.' }) },
    resolve: async (_r, { input }, ctx) => ({
      // Approval is when the comment appears to everyone: subscribers of the download hear of it now.
      comment: ctx.events.commentPosted(
        await moderation.approveComment(ctx.prisma, await ctx.access(), input.commentId),
      ),
    }),
  }),
  approveReview: t.field({
    nullable: true,
    description:
      "Approves a review awaiting approval: MODERATED becomes VISIBLE and counts in the download's ratings from then on (moderator log action review.approved). Needs mc_dm_download:write, the viewModerated permission and canEdit on the review (or a super-user key). Errors: mc_dm_api_error.review_not_moderated (it is not MODERATED; nothing changes), mc_dm_api_error.review_not_found, do_not_have_permission.",
    type: ApproveReviewPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: ApproveReviewInput, required: true, description: 'The review.' }) },
    resolve: async (_r, { input }, ctx) => ({
      review: ctx.events.downloadChanged(
        await moderation.approveReview(ctx.prisma, await ctx.access(), input.reviewId),
      ),
    }),
  }),
  rejectReview: t.field({
    nullable: true,
    description:
      'Rejects a review awaiting approval: MODERATED becomes DELETED, with the reason in the moderator log (action review.rejected). Needs mc_dm_download:write, the viewModerated permission and canDelete on the review (or a super-user key). Errors: mc_dm_api_error.review_not_moderated, required_input_missing (reason), invalid_input (reason too long), mc_dm_api_error.review_not_found, do_not_have_permission.',
    type: RejectReviewPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: RejectReviewInput, required: true, description: 'The review and the reason.' }) },
    resolve: async (_r, { input }, ctx) => ({
      review: await moderation.rejectReview(ctx.prisma, await ctx.access(), input),
    }),
  }),
  rejectComment: t.field({
    nullable: true,
    description:
      'Rejects a comment awaiting approval: MODERATED becomes DELETED, with the reason in the moderator log (action comment.rejected). Needs mc_dm_download:write, the viewModerated permission and canDelete on the comment (or a super-user key). Errors: mc_dm_api_error.comment_not_moderated, required_input_missing (reason), invalid_input (reason too long), mc_dm_api_error.comment_not_found, do_not_have_permission.',
    type: RejectCommentPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: RejectCommentInput, required: true, description: 'The comment and the reason.' }) },
    resolve: async (_r, { input }, ctx) => ({
      comment: ctx.events.downloadChanged(await moderation.rejectComment(ctx.prisma, await ctx.access(), input)),
    }),
  }),
}));

// ───────────── reports and the queue

const ReportContentTypeEnum = builder.enumType('ReportContentType', {
  description: 'What a report is about.',
  values: {
    DOWNLOAD: { value: 'download', description: 'A download (contentId is its downloadId).' },
    COMMENT: { value: 'comment', description: 'A comment (contentId is its commentId).' },
    FILE: { value: 'file', description: 'A file (contentId is its fileId).' },
    REVIEW: { value: 'review', description: 'A review (contentId is its reviewId).' },
  } as const,
});
const ReportStateEnum = builder.enumType('ReportState', {
  description: 'Whether a report still waits for a moderator.',
  values: {
    OPEN: { value: 'open', description: 'Waiting in the moderation queue.' },
    RESOLVED: { value: 'resolved', description: 'Closed by a moderator (resolveReport).' },
  } as const,
});

export const ReportRef = builder.prismaObject('Report', {
  interfaces: [NodeRef],
  description:
    'A report of content to the moderators, by a registered visitor. Read by its reporter (in the reportContent payload) and by moderators (the moderation queue).',
  fields: (t) => ({
    reportId: t.exposeInt('id', { description: 'The numeric report id.' }),
    contentType: t.expose('contentType', { type: ReportContentTypeEnum, description: 'What is reported.' }),
    contentId: t.exposeInt('contentId', { description: 'The id of what is reported (of the contentType).' }),
    userId: t.exposeInt('userId', { description: "The reporter's user id." }),
    reason: t.exposeString('reason', { description: 'Why, as the reporter wrote it.' }),
    reportState: t.expose('state', { type: ReportStateEnum, description: 'OPEN or RESOLVED.' }),
    reportDate: t.int({
      description: 'When it was reported (or last reported again by the same visitor), in Unix seconds.',
      resolve: (r) => unix(r.reportDate),
    }),
    resolvedBy: t.int({
      description:
        'The user id of the moderator who resolved it; 0 while open (or resolved by a super-user key as guest).',
      resolve: (r) => r.resolvedBy ?? 0,
    }),
    resolvedDate: t.int({
      description: 'When it was resolved, in Unix seconds; 0 while open.',
      resolve: (r) => unix(r.resolvedDate),
    }),
    resolution: t.exposeString('resolution', { description: "The moderator's note on resolving; empty when none." }),
  }),
});

const QueueItemRef = builder.unionType('ModerationQueueItem', {
  description:
    'Something waiting for a moderator: a MODERATED download, comment or review, a file that failed validation, or an OPEN report.',
  types: [DownloadRef, CommentRef, FileRef, ReportRef, ReviewRef],
  resolveType: (item) => QUEUE_TYPES.get(item as object) ?? 'Report',
});
/** The GraphQL type of each queued row, set as the page is built. */
const QUEUE_TYPES = new WeakMap<object, string>();
const TYPE_OF: Record<reports.QueueKind, string> = {
  download: 'Download',
  comment: 'Comment',
  file: 'File',
  report: 'Report',
  review: 'Review',
};
type QueueNode = reports.QueueRow & { item: reports.QueueItem | null };
const ModerationQueueConnection = connectionOf<QueueNode, unknown>(
  'ModerationQueue',
  QueueItemRef as never,
  'moderation queue item',
);

const ReportContentInput = builder.inputType('ReportContentInput', {
  description: 'What to report, and why.',
  fields: (t) => ({
    contentType: t.field({ type: ReportContentTypeEnum, required: true, description: 'What kind of content.' }),
    contentId: t.int({ required: true, description: 'Its id (downloadId, commentId, fileId or reviewId).' }),
    reason: t.string({ required: true, description: 'Why: 1 to 1,000 characters after trimming.' }),
  }),
});
const ResolveReportInput = builder.inputType('ResolveReportInput', {
  description: 'The report to resolve.',
  fields: (t) => ({
    reportId: t.int({ required: true, description: 'The report.' }),
    resolution: t.string({
      required: false,
      description: 'A note, written to the moderator log (at most 1,000 characters).',
    }),
  }),
});
const ReportContentPayload = payloadOf<Report>('ReportContentPayload', 'report', ReportRef);
const ResolveReportPayload = payloadOf<Report>('ResolveReportPayload', 'report', ReportRef);

builder.queryFields((t) => ({
  moderationQueue: t.field({
    type: ModerationQueueConnection,
    nullable: true,
    description:
      'What waits for moderators, oldest first, as a cursor connection: MODERATED downloads, comments and reviews, files that failed validation, OPEN reports. Needs mc_dm_download:read and a moderator or administrator (or a super-user key); items the moderator may not view (a category denied to them) are left out of the page and still counted in totalCount.',
    authScopes: { scope: READ },
    args: { ...connectionArgs(t.arg) },
    resolve: async (_r, args, ctx) => {
      const access = await ctx.access();
      const w = windowOf(ctx.cursors, moderation.QUEUE_SPEC, args);
      const { total, rows } = await moderation.queuePage(ctx.prisma, access, w);
      const connection = await connectionFrom(ctx.cursors, moderation.QUEUE_SPEC, w, rows, total, (r) =>
        moderation.canSeeQueueItem(access, r.item),
      );
      return {
        ...connection,
        edges: connection.edges.map((e) => {
          const row = e.node.item!.row;
          QUEUE_TYPES.set(row, TYPE_OF[e.node.kind]);
          return { cursor: e.cursor, node: row as never };
        }),
      };
    },
  }),
}));

builder.mutationFields((t) => ({
  reportContent: t.field({
    nullable: true,
    description:
      'Reports a download, comment, file or review to the moderators; it waits in moderationQueue until resolved. A second report of the same content by the same visitor, while the first is open, replaces its reason. Needs mc_dm_download:write and a registered visitor who can view the content. Errors: required_input_missing (empty reason), invalid_input (reason too long), mc_dm_api_error.<download|comment|file|review>_not_found, do_not_have_permission.',
    type: ReportContentPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: ReportContentInput, required: true, description: 'The content and the reason.' }) },
    resolve: async (_r, { input }, ctx) => {
      const access = await ctx.access();
      return { report: await moderation.reportContent(ctx.prisma, access, fileDeps(ctx, access), input) };
    },
  }),
  resolveReport: t.field({
    nullable: true,
    description:
      'Resolves an open report (moderator log action report.resolved). Needs mc_dm_download:write and a moderator or administrator (or a super-user key). Errors: mc_dm_api_error.report_already_resolved, mc_dm_api_error.report_not_found, invalid_input, do_not_have_permission.',
    type: ResolveReportPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: ResolveReportInput, required: true, description: 'The report and a note.' }) },
    resolve: async (_r, { input }, ctx) => ({
      report: await moderation.resolveReport(ctx.prisma, await ctx.access(), input),
    }),
  }),
}));

// ───────────── the audit and moderator logs

const LogNameEnum = builder.enumType('LogName', {
  description: 'Which log auditLog reads.',
  values: {
    AUDIT: {
      value: 'audit',
      description:
        "The audit log: downloads' soft and hard deletions, restores, purges, approvals (download.approved) and rejections (download.rejected).",
    },
    MODERATOR: {
      value: 'moderator',
      description:
        "The moderator log: comments' and reviews' deletions, approvals and rejections (comment.approved, comment.rejected, review.soft_deleted, …) and resolved reports (report.resolved).",
    },
  } as const,
});

const LogEntryRef = builder.objectRef<audit.LogRow>('AuditLogEntry').implement({
  description: 'One entry of the audit or moderator log: who did what to which content, when and why.',
  fields: (t) => ({
    entryId: t.exposeInt('id', { description: 'The entry id (numbered separately in each log).' }),
    action: t.exposeString('action', { description: 'What happened, e.g. download.soft_deleted, comment.rejected.' }),
    contentType: t.exposeString('contentType', {
      description: 'The kind of content: download, comment, review, report.',
    }),
    contentId: t.exposeInt('contentId', { description: 'Its id.' }),
    userId: t.exposeInt('userId', {
      description: 'Who acted (0: the guest, a super-user key without a user, or a job).',
    }),
    reason: t.exposeString('reason', { description: 'The reason given; empty when none.' }),
    date: t.int({ description: 'When, in Unix seconds.', resolve: (e) => unix(e.date) }),
  }),
});
const AuditLogConnection = connectionOf<audit.LogRow>('AuditLog', LogEntryRef, 'log entry');

const AuditLogFilter = builder.inputType('AuditLogFilter', {
  description: 'Which entries auditLog answers; every field left out matches everything.',
  fields: (t) => ({
    log: t.field({ type: LogNameEnum, required: false, description: 'The log to read (default AUDIT).' }),
    action: t.string({ required: false, description: 'Only this action, e.g. download.rejected (exact match).' }),
    contentType: t.string({ required: false, description: 'Only this kind of content, e.g. download (exact match).' }),
    contentId: t.int({ required: false, description: 'Only entries about the content with this id.' }),
    from: t.field({ type: 'DateTime', required: false, description: 'Only entries at or after this moment.' }),
    to: t.field({ type: 'DateTime', required: false, description: 'Only entries at or before this moment.' }),
  }),
});

builder.queryFields((t) => ({
  auditLog: t.field({
    type: AuditLogConnection,
    nullable: true,
    description:
      'The audit log (or, with filter.log MODERATOR, the moderator log), newest first, as a cursor connection. Needs mc_dm_download:read and admin rights (an administrator, or a super-user key). Errors: do_not_have_permission, invalid_input.',
    authScopes: { scope: READ },
    args: {
      filter: t.arg({
        type: AuditLogFilter,
        required: false,
        description: 'Which entries (default: all of the audit log).',
      }),
      ...connectionArgs(t.arg),
    },
    resolve: async (_r, args, ctx) => {
      const access = await ctx.access();
      const filter = args.filter ?? {};
      const spec = audit.logSpec(filter.log ?? 'audit');
      const w = windowOf(ctx.cursors, spec, args);
      const { total, rows } = await audit.logPage(ctx.prisma, access, filter, w);
      return connectionFrom(ctx.cursors, spec, w, rows, total, () => true);
    },
  }),
}));

// A report through node(id): moderators only (as in the queue); its reporter reads it in reportContent's payload.
registerNode('Report', READ, async (ctx, id) => {
  const access = await ctx.access();
  if (!access.isModerator) throw noPermission('read reports');
  const report = await ctx.prisma.report.findUnique({ where: { id } });
  if (!report)
    throw new ApiError('mc_dm_api_error.report_not_found', `The requested report (${id}) could not be found.`, {
      report_id: id,
    });
  return report;
});
