// Moderation: approve or reject downloads and comments that wait in the moderated state. Writes need
// mc_dm_download:write; the permissions are checked in rules.ts.
import { builder } from '../../graphql/builder.js';
import { payloadOf } from '../../graphql/payloads.js';
import type { Comment, Download } from '../../generated/prisma/client.js';
import { DownloadRef } from '../downloads/index.js';
import { CommentRef } from '../comments/index.js';
import * as moderation from './rules.js';

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
  rejectComment: t.field({
    nullable: true,
    description:
      'Rejects a comment awaiting approval: MODERATED becomes DELETED, with the reason in the moderator log (action comment.rejected). Needs mc_dm_download:write, the viewModerated permission and canDelete on the comment (or a super-user key). Errors: mc_dm_api_error.comment_not_moderated, required_input_missing (reason), invalid_input (reason too long), mc_dm_api_error.comment_not_found, do_not_have_permission.',
    type: RejectCommentPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: RejectCommentInput, required: true, description: 'The comment and the reason.' }) },
    resolve: async (_r, { input }, ctx) => ({
      comment: await moderation.rejectComment(ctx.prisma, await ctx.access(), input),
    }),
  }),
}));
