// Comment: discussion entries of a download. Reads need mc_dm_download:read, writes mc_dm_download:write;
// a hard delete also mc_dm_download:delete_hard (checked in the domain, since it depends on `hard`).
import { queryFromInfo } from '@pothos/plugin-prisma';
import type { Comment } from '../../generated/prisma/client.js';
import { builder, unix } from '../../graphql/builder.js';
import { firstArg, firstOf, listOf, orderEnum, pageArgs } from '../../graphql/pagination.js';
import { deletePayloadOf, modelPayloadOf } from '../../graphql/payloads.js';
import { NodeRef, registerNode, unlessUnseen } from '../../graphql/node.js';
import { noPermission } from '../../errors.js';
import * as comments from './rules.js';
import type { Context } from '../../graphql/context.js';
import type { Access, CommentRow, DownloadRow } from '../../permissions/access.js';

const READ = ['mc_dm_download:read'];
const WRITE = ['mc_dm_download:write'];

const CommentStateEnum = builder.enumType('CommentState', {
  description: 'Where a comment stands. Super-user keys see comments in every state.',
  values: {
    VISIBLE: { value: 'visible', description: "Shown to everyone who may view the download's comments." },
    MODERATED: {
      value: 'moderated',
      description:
        'Awaiting approval (posted where the category requires comment approval, by an author without bypassCommentApproval): shown only to its author and to holders of viewModerated.',
    },
    DELETED: { value: 'deleted', description: 'Soft-deleted: shown only to holders of viewDeleted.' },
  } as const,
});

builder.prismaObject('CommentEdit', {
  description:
    'A previous text of a comment, kept when someone other than its author edits it, or its author edits it more than 5 minutes after posting.',
  fields: (t) => ({
    oldMessage: t.exposeString('oldMessage', { description: 'The message as it was before this edit.' }),
    editorId: t.exposeInt('editorId', { description: 'The user id of whoever made the edit.' }),
    editDate: t.int({ description: 'When the edit was made, in Unix seconds.', resolve: (e) => unix(e.editDate) }),
  }),
});

/** The parent download, loaded with the comment wherever the domain returned it. */
/**
 * A permission check on a comment and its download: at once when both are at hand (the lists load the download),
 * else once the download is read.
 */
const onComment = (
  c: Comment & { download?: DownloadRow },
  ctx: Context,
  check: (a: Access, c: CommentRow, d: DownloadRow) => boolean,
) => {
  const download = c.download;
  return download
    ? ctx.withAccess((a) => check(a, c, download))
    : ctx.prisma.download
        .findUniqueOrThrow({ where: { id: c.downloadId } })
        .then((d) => ctx.withAccess((a) => check(a, c, d)));
};

export const CommentRef = builder.prismaObject('Comment', {
  description:
    "A discussion entry on a download. Reading needs mc_dm_download:read and the viewComments permission in the download's category; moderated and deleted comments are shown as CommentState says.",
  interfaces: [NodeRef],
  fields: (t) => ({
    commentId: t.exposeInt('id', { description: "The numeric comment id (the REST API's `comment_id`)." }),
    downloadId: t.exposeInt('downloadId', { description: 'The download the comment is posted on.' }),
    userId: t.exposeInt('userId', { description: "The author's user id." }),
    username: t.string({
      description: "The author's display name.",
      select: { user: { select: { username: true } } },
      resolve: (c) => c.user.username,
    }),
    commentDate: t.int({ description: 'When it was posted, in Unix seconds.', resolve: (c) => unix(c.commentDate) }),
    message: t.exposeString('message', { description: 'The text, as posted (BB code permitted; not rendered).' }),
    commentState: t.expose('state', {
      type: CommentStateEnum,
      description: 'VISIBLE, MODERATED (awaiting approval) or DELETED (soft-deleted).',
    }),
    lastEditDate: t.int({
      description: 'When it was last edited, in Unix seconds; 0 when never edited.',
      resolve: (c) => unix(c.lastEditDate),
    }),
    editCount: t.exposeInt('editCount', {
      description:
        'How many times the message was changed (every edit counts, including those that leave no history entry).',
    }),
    isVisible: t.boolean({ description: 'True when commentState is VISIBLE.', resolve: (c) => c.state === 'visible' }),
    canView: t.boolean({
      description: 'Whether the visitor may view this comment (true for any comment returned to them).',
      resolve: (c, _a, ctx) => onComment(c, ctx, (a, c, d) => a.canViewComment(c, d)),
    }),
    canEdit: t.boolean({
      description: 'Whether the visitor may edit it: editAnyComment, or editOwnComment on their own comment.',
      resolve: (c, _a, ctx) => onComment(c, ctx, (a, c, d) => a.canEditComment(c, d)),
    }),
    canDelete: t.boolean({
      description:
        'Whether the visitor may delete it: deleteAnyComment, or deleteOwnComment on their own comment. A hard delete also needs the mc_dm_download:delete_hard scope.',
      resolve: (c, _a, ctx) => onComment(c, ctx, (a, c, d) => a.canDeleteComment(c, d)),
    }),
    author: t.relation('user', { description: 'The user who wrote the comment (`userId`).' }),
    download: t.relation('download', { description: 'The download the comment is posted on.' }),
    edits: t.relation('edits', {
      nullable: true,
      description:
        'Edit history, newest first: the first `first` entries. Moderators only: null, with a do_not_have_permission error, for anyone else.',
      args: { first: firstArg(t.arg, 'edits') },
      query: (args) => ({
        orderBy: [{ editDate: 'desc' as const }, { id: 'desc' as const }],
        take: firstOf(args.first),
      }),
      authScopes: async (_c, _a, ctx) => {
        if (!(await ctx.access()).isModerator) throw noPermission("read this comment's edit history");
        return true;
      },
    }),
  }),
});

registerNode('Comment', READ, async (ctx, id) => comments.readComment(ctx, await ctx.access(), id));

export const CommentOrderEnum = orderEnum('CommentOrder', comments.COMMENT_ORDERS, {
  description: 'How `comments` is sorted; ties are broken by commentId in the same direction.',
  values: {
    comment_date: 'By commentDate, when posted (the default).',
    last_edit_date: 'By lastEditDate; comments never edited come last when descending, first when ascending.',
  },
});

const CommentList = listOf<Comment>('Comment', CommentRef);

builder.queryFields((t) => ({
  comments: t.field({
    nullable: true,
    type: CommentList,
    description:
      'Comments of a download, one page at a time, default order COMMENT_DATE, DESC. Needs mc_dm_download:read and the viewComments permission on the download. downloadId is required (required_input_missing) except with super-user keys, which may list all comments. Only super-user keys list comments that are not VISIBLE; others fetch their own moderated comments with `comment`.',
    authScopes: { scope: READ },
    args: {
      ...pageArgs(t.arg),
      order: t.arg({ type: CommentOrderEnum, required: false, description: 'Sort field (default COMMENT_DATE).' }),
      downloadId: t.arg.int({
        required: false,
        description:
          'The download whose comments to list; required except with super-user keys. Unknown: mc_dm_api_error.download_not_found.',
      }),
      since: t.arg({ type: 'DateTime', required: false, description: 'Only comments posted at or after this moment.' }),
    },
    resolve: async (_r, args, ctx, info) =>
      comments.listComments(
        ctx,
        await ctx.access(),
        args,
        queryFromInfo({ context: ctx, info, typeName: 'Comment', path: ['nodes'] }) as object,
      ),
  }),
  comment: t.prismaField({
    type: 'Comment',
    nullable: true,
    description:
      'One comment. Needs mc_dm_download:read. Unknown ids answer mc_dm_api_error.comment_not_found; comments the visitor may not view (by state, or no viewComments on the download), do_not_have_permission.',
    authScopes: { scope: READ },
    args: { commentId: t.arg.int({ required: true, description: 'The numeric comment id.' }) },
    resolve: async (query, _r, args, ctx) =>
      comments.readComment(ctx, await ctx.access(), args.commentId, query as object),
  }),
}));

const CreateCommentInput = builder.inputType('CreateCommentInput', {
  description: 'A new comment, posted as the visitor.',
  fields: (t) => ({
    downloadId: t.int({ required: true, description: 'The download to comment on.' }),
    message: t.string({
      required: true,
      description: 'The text, 1 to 50,000 characters after trimming (BB code permitted).',
    }),
  }),
});
const UpdateCommentInput = builder.inputType('UpdateCommentInput', {
  description: 'A new text for a comment.',
  fields: (t) => ({
    commentId: t.int({ required: true, description: 'The comment to edit.' }),
    message: t.string({
      required: true,
      description:
        'The new text, at most 50,000 characters. An empty message is refused (mc_dm_api_error.message_empty); the same text changes nothing.',
    }),
  }),
});
const DeleteCommentInput = builder.inputType('DeleteCommentInput', {
  description: 'Which comment to delete, and how.',
  fields: (t) => ({
    commentId: t.int({ required: true, description: 'The comment to delete.' }),
    hard: t.boolean({
      required: false,
      description: 'true: remove irreversibly (needs mc_dm_download:delete_hard). Default: soft delete.',
    }),
    reason: t.string({ required: false, description: 'Why, written to the moderator log with the deletion.' }),
  }),
});

const CreateCommentPayload = modelPayloadOf('CreateCommentPayload', 'comment', 'Comment', comments.commentWith);
const UpdateCommentPayload = modelPayloadOf('UpdateCommentPayload', 'comment', 'Comment', comments.commentWith);
const DeleteCommentPayload = deletePayloadOf<Comment>('DeleteCommentPayload', 'comment', CommentRef);

builder.mutationFields((t) => ({
  createComment: t.field({
    nullable: true,
    description:
      "Posts a comment as the visitor. Needs mc_dm_download:write and the viewComments and comment permissions on the download; guests cannot post. It starts VISIBLE, or MODERATED when the category requires comment approval and the visitor lacks bypassCommentApproval. Users who are not moderators must wait the server's flood interval (COMMENT_FLOOD_SECONDS, 10 by default) between comments: mc_dm_api_error.rate_limited, with params.retry_after in seconds. Errors also: mc_dm_api_error.download_not_found, required_input_missing (message), invalid_input, do_not_have_permission.",
    type: CreateCommentPayload,
    authScopes: { scope: WRITE },
    args: { input: t.arg({ type: CreateCommentInput, required: true, description: 'The download and the message.' }) },
    resolve: async (_r, { input }, ctx) => ({
      comment: ctx.events.commentPosted(
        await comments.createComment(ctx.db, await ctx.access(), ctx.config.commentFloodSeconds, input),
      ),
    }),
  }),
  updateComment: t.field({
    nullable: true,
    description:
      "Replaces a comment's message. Needs mc_dm_download:write and canEdit on the comment. Every edit counts in editCount and sets lastEditDate; the old text is kept in `edits` when the editor is not the author, or the author edits more than 5 minutes after posting. Errors: mc_dm_api_error.comment_not_found, mc_dm_api_error.message_empty, invalid_input (too long), do_not_have_permission.",
    type: UpdateCommentPayload,
    authScopes: { scope: WRITE },
    args: {
      input: t.arg({ type: UpdateCommentInput, required: true, description: 'The comment and its new message.' }),
    },
    resolve: async (_r, { input }, ctx) => ({
      comment: await comments.updateComment(ctx.prisma, await ctx.access(), input),
    }),
  }),
  deleteComment: t.field({
    nullable: true,
    description:
      'Deletes a comment: soft by default (state DELETED, recoverable), or irreversibly with hard: true, which also needs the mc_dm_download:delete_hard scope. Needs mc_dm_download:write and canDelete on the comment. Both are written to the moderator log with the reason. Errors: mc_dm_api_error.comment_not_found, do_not_have_permission, api_scope_missing.',
    type: DeleteCommentPayload,
    authScopes: { scope: WRITE },
    args: {
      input: t.arg({
        type: DeleteCommentInput,
        required: true,
        description: 'The comment, hard or soft, and a reason.',
      }),
    },
    resolve: async (_r, { input }, ctx) => {
      const access = await ctx.access();
      await comments.deleteComment(ctx.prisma, access, input);
      ctx.events.written(); // a soft delete recorded comment.moderated
      const object = input.hard
        ? null
        : await unlessUnseen(comments.viewableComment(ctx.prisma, access, input.commentId));
      return { success: true as const, typeName: 'Comment', id: input.commentId, object };
    },
  }),
}));
