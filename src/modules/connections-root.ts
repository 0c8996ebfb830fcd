// The root connections: `categoriesConnection`, `downloadsConnection`, `commentsConnection`, `filesConnection`.
// Each takes the filters, order and direction of its page-numbered sibling (categories, downloads, comments, files)
// and applies the same rules: the sibling's filter and visibility rules choose the rows, totalCount counts them
// before the per-row permission check, and rows the visitor may not see are dropped after paging.
import { queryFromInfo } from '@pothos/plugin-prisma';
import type { GraphQLResolveInfo } from 'graphql';
import type { Category, Comment, Download, File } from '../generated/prisma/client.js';
import { builder } from '../graphql/builder.js';
import { connectionArgs, connectionFrom, connectionOf } from '../graphql/connections.js';
import { DirectionEnum } from '../graphql/pagination.js';
import { CategoryOrderEnum, CategoryRef, categoryPage, categoryParentOf } from './categories/index.js';
import { DownloadOrderEnum, DownloadRef, DownloadStateEnum } from './downloads/index.js';
import { CommentOrderEnum, CommentRef } from './comments/index.js';
import { FileOrderEnum, FileRef, deps } from './files/index.js';
import type { Context } from '../graphql/context.js';
import { prismaAfter, prismaOrderBy, windowOf } from '../db/keyset.js';
import { CATEGORY_KEYS, COMMENT_KEYS, DOWNLOAD_KEYS, FILE_KEYS, downloadKeyOrder, keysetOf } from './keyset-orders.js';
import { downloadListFilter, downloadTotal, downloadWhere } from './downloads/index.js';
import { commentSlice } from './comments/index.js';
import { fileSlice, fileVisibleTo } from './files/index.js';

const CATEGORY_READ = ['mc_dm_category:read'];
const DOWNLOAD_READ = ['mc_dm_download:read'];

export const CategoryConnection = connectionOf<Category>('Category', CategoryRef, 'category');
export const DownloadConnection = connectionOf<Download>('Download', DownloadRef, 'download');
export const CommentConnection = connectionOf<Comment>('Comment', CommentRef, 'comment');
export const FileConnection = connectionOf<File>('File', FileRef, 'file');

/** What the operation selects under `edges.node` and `nodes`, as a Prisma query for the rows. */
function rowQuery(ctx: Context, info: GraphQLResolveInfo, typeName: string): RowQuery {
  return queryFromInfo({ context: ctx, info, typeName, paths: [['edges', 'node'], ['nodes']] }) as never;
}

type RowQuery = { include?: Record<string, unknown>; select?: Record<string, unknown>; [k: string]: unknown };

/**
 * `query` with the relations the permission check needs loaded too. What the operation selects is kept: a relation it
 * already loads gets the missing nested relations merged in, never replaced.
 */
export function withRelations(query: RowQuery, relations: Record<string, true | RowQuery>): RowQuery {
  const mode = query.select ? 'select' : 'include';
  const merged: Record<string, unknown> = { ...(query[mode] ?? {}) };
  for (const [k, need] of Object.entries(relations)) {
    const have = merged[k] as undefined | boolean | RowQuery;
    if (have === undefined || have === false || have === true) merged[k] = have === true && need === true ? true : need;
    else if (need !== true) merged[k] = withRelations(have, (need.include ?? {}) as Record<string, true | RowQuery>);
  }
  return { ...query, [mode]: merged };
}

builder.queryFields((t) => ({
  categoriesConnection: t.field({
    type: CategoryConnection,
    nullable: true,
    description:
      'Every category the visitor may view, as a cursor connection (default order DISPLAY_ORDER, DESC; ties by id). The cursor-paged sibling of `categories`. Needs mc_dm_category:read.',
    authScopes: { scope: CATEGORY_READ },
    args: {
      ...connectionArgs(t.arg),
      order: t.arg({
        type: CategoryOrderEnum,
        required: false,
        description: 'The column rows are sorted by (default DISPLAY_ORDER).',
      }),
      direction: t.arg({ type: DirectionEnum, required: false, description: 'Sort direction (default DESC).' }),
    },
    resolve: async (_r, args, ctx, info) => {
      const spec = keysetOf('categoriesConnection', CATEGORY_KEYS, args.order, args.direction, 'display_order');
      const w = windowOf(ctx.cursors, spec, args);
      const access = await ctx.access();
      const { total, rows } = await categoryPage(
        ctx.db,
        { spec, window: w, take: w.size + 1 },
        { parent: categoryParentOf(rowQuery(ctx, info, 'Category')) },
      );
      return connectionFrom(ctx.cursors, spec, w, rows, total, (c) => access.canViewCategory(c));
    },
  }),
  downloadsConnection: t.field({
    type: DownloadConnection,
    nullable: true,
    description:
      'Downloads the visitor may view, as a cursor connection (default order LAST_UPDATE, DESC; ties by id). Visitors who are not moderators only list visible downloads. The cursor-paged sibling of `downloads`. Needs mc_dm_download:read.',
    authScopes: { scope: DOWNLOAD_READ },
    args: {
      ...connectionArgs(t.arg),
      order: t.arg({
        type: DownloadOrderEnum,
        required: false,
        description: 'The column rows are sorted by (default LAST_UPDATE).',
      }),
      direction: t.arg({ type: DirectionEnum, required: false, description: 'Sort direction (default DESC).' }),
      categoryId: t.arg.int({ required: false, description: 'Only downloads of this category.' }),
      prefixId: t.arg.int({
        required: false,
        description: 'Only downloads with this prefix; 0 lists downloads without a prefix.',
      }),
      downloadState: t.arg({
        type: DownloadStateEnum,
        required: false,
        description: 'Honoured for moderators and super-user keys; everyone else lists VISIBLE downloads only.',
      }),
      since: t.arg({
        type: 'DateTime',
        required: false,
        description: 'Only downloads updated at or after this moment.',
      }),
    },
    resolve: async (_r, args, ctx, info) => {
      const spec = keysetOf(
        'downloadsConnection',
        DOWNLOAD_KEYS,
        downloadKeyOrder(args.order),
        args.direction,
        'last_update',
      );
      const w = windowOf(ctx.cursors, spec, args);
      const access = await ctx.access();
      const filter = downloadListFilter(access, args);
      const where = downloadWhere(filter);
      const [total, rows] = await Promise.all([
        downloadTotal(ctx.prisma, filter),
        ctx.prisma.download.findMany({
          ...rowQuery(ctx, info, 'Download'),
          where: { AND: [where, prismaAfter(spec, w)] },
          orderBy: prismaOrderBy(spec, w) as never,
          take: w.size + 1,
        }),
      ]);
      return connectionFrom(ctx.cursors, spec, w, rows, total, (d) => access.canViewDownload(d));
    },
  }),
  commentsConnection: t.field({
    type: CommentConnection,
    nullable: true,
    description:
      'Comments of a download as a cursor connection (downloadId is required except with super-user keys; default order COMMENT_DATE, DESC; ties by id). Only super-user keys list comments that are not visible. The cursor-paged sibling of `comments`. Needs mc_dm_download:read.',
    authScopes: { scope: DOWNLOAD_READ },
    args: {
      ...connectionArgs(t.arg),
      order: t.arg({
        type: CommentOrderEnum,
        required: false,
        description:
          'The column rows are sorted by (default COMMENT_DATE); never-edited comments sort first ascending by LAST_EDIT_DATE, last descending.',
      }),
      direction: t.arg({ type: DirectionEnum, required: false, description: 'Sort direction (default DESC).' }),
      downloadId: t.arg.int({
        required: false,
        description: 'The download whose comments to list (required except with super-user keys).',
      }),
      since: t.arg({ type: 'DateTime', required: false, description: 'Only comments posted at or after this moment.' }),
    },
    resolve: async (_r, args, ctx, info) => {
      const spec = keysetOf('commentsConnection', COMMENT_KEYS, args.order, args.direction, 'comment_date');
      const w = windowOf(ctx.cursors, spec, args);
      const access = await ctx.access();
      const { total, rows } = await commentSlice(
        ctx,
        access,
        args,
        { spec, window: w, take: w.size + 1 },
        withRelations(rowQuery(ctx, info, 'Comment'), { download: true }),
      );
      return connectionFrom(ctx.cursors, spec, w, rows, total, (c) => access.canViewComment(c, c.download));
    },
  }),
  filesConnection: t.field({
    type: FileConnection,
    nullable: true,
    description:
      "Files of a version as a cursor connection (versionId is required except with super-user keys; default order DISPLAY_ORDER, DESC; ties by id). Soft-deleted files are never listed; failed ones only to visitors who may manage the download's files. The cursor-paged sibling of `files`. Needs mc_dm_download:read.",
    authScopes: { scope: DOWNLOAD_READ },
    args: {
      ...connectionArgs(t.arg),
      order: t.arg({
        type: FileOrderEnum,
        required: false,
        description: 'The column rows are sorted by (default DISPLAY_ORDER).',
      }),
      direction: t.arg({ type: DirectionEnum, required: false, description: 'Sort direction (default DESC).' }),
      versionId: t.arg.int({
        required: false,
        description: 'The version whose files to list (required except with super-user keys).',
      }),
    },
    resolve: async (_r, args, ctx, info) => {
      const spec = keysetOf('filesConnection', FILE_KEYS, args.order, args.direction, 'display_order');
      const w = windowOf(ctx.cursors, spec, args);
      const d = deps(ctx, await ctx.access());
      const {
        total,
        rows,
        deps: seen,
      } = await fileSlice(
        d,
        args,
        { spec, window: w, take: w.size + 1 },
        withRelations(rowQuery(ctx, info, 'File'), { version: { include: { download: true } } }),
      );
      return connectionFrom(ctx.cursors, spec, w, rows, total, (f) => fileVisibleTo(seen, f, f.version.download));
    },
  }),
}));
