// Comment: discussion entries of a download. Reads need mc_dm_download:read, writes mc_dm_download:write;
// a hard delete also mc_dm_download:delete_hard (checked in the domain, since it depends on `hard`).
import { queryFromInfo } from '@pothos/plugin-prisma';
import type { Comment } from '../generated/prisma/client.js';
import { builder, unix } from './builder.js';
import { listOf, orderEnum, pageArgs } from './pagination.js';
import { payloadOf, SuccessPayload } from './payloads.js';
import { NodeRef, registerNode } from './node.js';
import { noPermission } from '../errors.js';
import * as comments from '../domain/comments.js';

const READ = ['mc_dm_download:read'];
const WRITE = ['mc_dm_download:write'];

const CommentStateEnum = builder.enumType('CommentState', {
  values: { VISIBLE: { value: 'visible' }, MODERATED: { value: 'moderated' }, DELETED: { value: 'deleted' } } as const,
});

builder.prismaObject('CommentEdit', {
  description: 'A previous text of a comment, kept when a moderator edits it or its author edits it late.',
  fields: (t) => ({
    oldMessage: t.exposeString('oldMessage'),
    editorId: t.exposeInt('editorId'),
    editDate: t.int({ description: 'Unix seconds.', resolve: (e) => unix(e.editDate) }),
  }),
});

/** The parent download, loaded with the comment wherever the domain returned it. */
const parentOf = async (c: Comment & { download?: any }, ctx: { prisma: any }) =>
  c.download ?? ctx.prisma.download.findUniqueOrThrow({ where: { id: c.downloadId } });

export const CommentRef = builder.prismaObject('Comment', {
  interfaces: [NodeRef],
  fields: (t) => ({
    commentId: t.exposeInt('id'),
    downloadId: t.exposeInt('downloadId'),
    userId: t.exposeInt('userId', { description: 'The author.' }),
    username: t.string({ description: "The author's display name.", select: { user: { select: { username: true } } }, resolve: (c) => c.user.username }),
    commentDate: t.int({ description: 'Unix seconds.', resolve: (c) => unix(c.commentDate) }),
    message: t.exposeString('message', { description: 'BB code permitted.' }),
    commentState: t.expose('state', { type: CommentStateEnum }),
    lastEditDate: t.int({ description: 'Unix seconds; 0 when never edited.', resolve: (c) => unix(c.lastEditDate) }),
    editCount: t.exposeInt('editCount'),
    isVisible: t.boolean({ resolve: (c) => c.state === 'visible' }),
    canView: t.boolean({ resolve: async (c, _a, ctx) => (await ctx.access()).canViewComment(c, await parentOf(c, ctx)) }),
    canEdit: t.boolean({ resolve: async (c, _a, ctx) => (await ctx.access()).canEditComment(c, await parentOf(c, ctx)) }),
    canDelete: t.boolean({ resolve: async (c, _a, ctx) => (await ctx.access()).canDeleteComment(c, await parentOf(c, ctx)) }),
    edits: t.relation('edits', {
      description: 'Edit history, newest first. Moderators only.',
      query: { orderBy: [{ editDate: 'desc' }, { id: 'desc' }] },
      authScopes: async (_c, _a, ctx) => {
        if (!(await ctx.access()).isModerator) throw noPermission("read this comment's edit history");
        return true;
      },
    }),
  }),
});

registerNode('Comment', READ, async (ctx, id) => comments.viewableComment(ctx.prisma, await ctx.access(), id));

const CommentOrderEnum = orderEnum('CommentOrder', comments.COMMENT_ORDERS);

const CommentList = listOf<Comment>('Comment', CommentRef);

builder.queryFields((t) => ({
  comments: t.field({
    type: CommentList,
    description: 'Comments of a download (downloadId is required except with super-user keys), default order COMMENT_DATE, DESC. Only super-user keys list comments that are not visible.',
    authScopes: { scope: READ },
    args: {
      ...pageArgs(t.arg),
      order: t.arg({ type: CommentOrderEnum, required: false }),
      downloadId: t.arg.int({ required: false }),
      since: t.arg({ type: 'DateTime', required: false, description: 'Only comments posted at or after this moment.' }),
    },
    resolve: async (_r, args, ctx, info) => comments.listComments(ctx.prisma, await ctx.access(), args,
      queryFromInfo({ context: ctx, info, typeName: 'Comment', path: ['nodes'] }) as object),
  }),
  comment: t.prismaField({
    type: 'Comment',
    nullable: true,
    authScopes: { scope: READ },
    args: { commentId: t.arg.int({ required: true }) },
    resolve: async (query, _r, args, ctx) => comments.viewableComment(ctx.prisma, await ctx.access(), args.commentId, query as object),
  }),
}));

const CreateCommentInput = builder.inputType('CreateCommentInput', {
  fields: (t) => ({
    downloadId: t.int({ required: true }),
    message: t.string({ required: true, description: 'BB code permitted.' }),
  }),
});
const UpdateCommentInput = builder.inputType('UpdateCommentInput', {
  fields: (t) => ({
    commentId: t.int({ required: true }),
    message: t.string({ required: true, description: 'An empty message is refused (mc_dm_api_error.message_empty).' }),
  }),
});
const DeleteCommentInput = builder.inputType('DeleteCommentInput', {
  fields: (t) => ({
    commentId: t.int({ required: true }),
    hard: t.boolean({ required: false, description: 'true: remove irreversibly (needs mc_dm_download:delete_hard). Default: soft delete.' }),
    reason: t.string({ required: false, description: 'Written to the moderator log.' }),
  }),
});

const CreateCommentPayload = payloadOf<Comment>('CreateCommentPayload', 'comment', CommentRef);
const UpdateCommentPayload = payloadOf<Comment>('UpdateCommentPayload', 'comment', CommentRef);

builder.mutationFields((t) => ({
  createComment: t.field({
    type: CreateCommentPayload, authScopes: { scope: WRITE },
    args: { input: t.arg({ type: CreateCommentInput, required: true }) },
    resolve: async (_r, { input }, ctx) => ({ comment: ctx.events.commentPosted(await comments.createComment(ctx.prisma, await ctx.access(), ctx.config.commentFloodSeconds, input)) }),
  }),
  updateComment: t.field({
    type: UpdateCommentPayload, authScopes: { scope: WRITE },
    args: { input: t.arg({ type: UpdateCommentInput, required: true }) },
    resolve: async (_r, { input }, ctx) => ({ comment: await comments.updateComment(ctx.prisma, await ctx.access(), input) }),
  }),
  deleteComment: t.field({
    type: SuccessPayload, authScopes: { scope: WRITE },
    args: { input: t.arg({ type: DeleteCommentInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      await comments.deleteComment(ctx.prisma, await ctx.access(), input);
      return { success: true };
    },
  }),
}));
