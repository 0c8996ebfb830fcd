// Nested connections: `Category.children`, `Category.downloads`, `Download.comments`, `Download.team`,
// `Download.versionsConnection`, `Version.files`. Each applies the rules of the matching root list (a visitor sees
// only what that list would show, with the same scope), and each field occurrence reads the pages of all its
// parents in one statement (src/db/child-pages.ts), batched per request, so a query costs the same number of SQL
// statements whatever its page sizes and however many parents it lists. Fields refused on their own (a missing
// scope, comments hidden from the visitor) are nullable: they null alone, with their error.
import DataLoader from 'dataloader';
import type { Category, Comment, Download, File, User, Version } from '../generated/prisma/client.js';
import { builder, unix } from '../graphql/builder.js';
import type { Context } from '../graphql/context.js';
import { connectionArgs, connectionFrom, connectionOf } from '../graphql/connections.js';
import { CategoryConnection, CommentConnection, DownloadConnection, FileConnection } from './connections-root.js';
import { DirectionEnum } from '../graphql/pagination.js';
import { CategoryOrderEnum, CategoryRef } from './categories/index.js';
import { DownloadOrderEnum, DownloadRef, DownloadStateEnum } from './downloads/index.js';
import { VersionRef } from './versions/index.js';
import { CommentOrderEnum, commentTotalSql } from './comments/index.js';
import { FileOrderEnum, deps, fileTotalSql } from './files/index.js';
import { UserRef } from './accounts/index.js';
import { noPermission } from '../errors.js';
import { windowOf, type KeysetSpec, type Window } from '../db/keyset.js';
import {
  CATEGORY_KEYS,
  COMMENT_KEYS,
  DOWNLOAD_KEYS,
  downloadKeyOrder,
  FILE_KEYS,
  TEAM_KEYS,
  VERSION_KEYS,
  keysetOf,
} from './keyset-orders.js';
import {
  DOWNLOAD_FILTER,
  downloadListFilter,
  downloadsById,
  downloadTotalSql,
  type DownloadListArgs,
} from './downloads/index.js';
import { fileVisibleTo } from './files/index.js';
import { childPages, type ChildPage, type ChildSource } from '../db/child-pages.js';
import { filterSql, sqlRef } from '../db/filters.js';

const CATEGORY_READ = ['mc_dm_category:read'];
const DOWNLOAD_READ = ['mc_dm_download:read'];

// ───────────── batching: one loader per request and field occurrence (list, order, window, filters)

const loaders = new WeakMap<object, Map<string, DataLoader<number, unknown>>>();

/** Loads `batch(parentIds)` once for every parent resolved in the same turn of the event loop. */
function loader<V>(
  ctx: Context,
  key: string,
  batch: (ids: readonly number[]) => Promise<Map<number, V>>,
  empty: V,
): DataLoader<number, V> {
  let byKey = loaders.get(ctx);
  if (!byKey) {
    byKey = new Map();
    loaders.set(ctx, byKey);
  }
  let l = byKey.get(key) as DataLoader<number, V> | undefined;
  if (!l) {
    l = new DataLoader<number, V>(
      async (ids) => {
        const found = await batch(ids);
        return ids.map((id) => found.get(id) ?? empty);
        // No cache: a request's later mutation must not be answered with a page read before it.
      },
      { batchScheduleFn: (run) => setImmediate(run), cache: false },
    );
    byKey.set(key, l as DataLoader<number, unknown>);
  }
  return l;
}

/** The page of `parentId`'s children for this spec and window, read together with its siblings' pages. */
function childPage<T>(
  ctx: Context,
  source: ChildSource,
  spec: KeysetSpec,
  w: Window,
  filterKey: unknown,
  parentId: number,
): Promise<ChildPage<T>> {
  const key = JSON.stringify([spec, w, filterKey], (_k, v) => (typeof v === 'bigint' ? `${v}n` : v));
  return loader<ChildPage<T>>(ctx, key, (ids) => childPages<T>(ctx.db, source, spec, w, ids), {
    total: 0,
    rows: [],
  }).load(parentId);
}

/** Downloads by id, batched per request (the parents of the versions whose files are listed). */
function downloadById(ctx: Context, id: number): Promise<Download | null> {
  return loader<Download | null>(
    ctx,
    'downloadById',
    async (ids) => {
      const rows = await downloadsById(ctx.db, ids);
      return new Map(rows.map((d) => [d.id, d]));
    },
    null,
  ).load(id);
}

/** A download list's filter as SQL over `t`: the parent's category comes from the connection's own term. */
function downloadFilterSql(filter: ReturnType<typeof downloadListFilter>) {
  return (param: (v: unknown) => string) =>
    filterSql(DOWNLOAD_FILTER, { ...filter, categoryId: undefined }, 't', param);
}

// ───────────── types only nested lists return

export const VersionConnection = connectionOf<Version>('Version', VersionRef, 'version');

type TeamMemberRow = User & { addedAt: Date };
export const DownloadTeamConnection = connectionOf<TeamMemberRow, User>(
  'DownloadTeam',
  UserRef,
  'team member',
  (t) => ({
    addedAt: t.int({
      description: 'When the user joined the team (Unix seconds).',
      resolve: (e) => unix(e.node.addedAt),
    }),
  }),
);

const VersionOrderEnum = builder.enumType('VersionOrder', {
  description: "The orders of a download's versions.",
  values: { RELEASE_DATE: { value: 'release_date', description: 'By release date (ties by id).' } } as const,
});

// ───────────── Category

builder.prismaObjectFields(CategoryRef, (t) => ({
  children: t.field({
    type: CategoryConnection,
    nullable: true,
    description:
      'The direct subcategories the visitor may view, as a cursor connection (default order DISPLAY_ORDER, DESC; ties by id).',
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
    resolve: async (c, args, ctx) => {
      const spec = keysetOf('Category.children', CATEGORY_KEYS, args.order, args.direction, 'display_order');
      const w = windowOf(ctx.cursors, spec, args);
      const access = await ctx.access();
      const page = await childPage<Category>(
        ctx,
        { from: 'category', parent: 'parentId', model: 'Category' },
        spec,
        w,
        null,
        c.id,
      );
      return connectionFrom(ctx.cursors, spec, w, page.rows, page.total, (row) => access.canViewCategory(row));
    },
  }),
  downloads: t.field({
    type: DownloadConnection,
    nullable: true,
    description:
      "The category's downloads the visitor may view, as a cursor connection (default order LAST_UPDATE, DESC; ties by id), with the filters of `downloadsConnection`. Visitors who are not moderators only list visible downloads.",
    authScopes: { scope: DOWNLOAD_READ },
    args: {
      ...connectionArgs(t.arg),
      order: t.arg({
        type: DownloadOrderEnum,
        required: false,
        description: 'The column rows are sorted by (default LAST_UPDATE).',
      }),
      direction: t.arg({ type: DirectionEnum, required: false, description: 'Sort direction (default DESC).' }),
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
    resolve: async (c, args, ctx) => {
      const spec = keysetOf(
        'Category.downloads',
        DOWNLOAD_KEYS,
        downloadKeyOrder(args.order),
        args.direction,
        'last_update',
      );
      const w = windowOf(ctx.cursors, spec, args);
      const access = await ctx.access();
      const filter = downloadListFilter(access, args as Omit<DownloadListArgs, 'categoryId'>);
      const total = (parent: string, param: (v: unknown) => string) =>
        downloadTotalSql({ ...filter, categoryId: sqlRef(parent) }, param);
      const page = await childPage<Download>(
        ctx,
        { from: 'download', parent: 'categoryId', model: 'Download', where: downloadFilterSql(filter), total },
        spec,
        w,
        filter,
        c.id,
      );
      return connectionFrom(ctx.cursors, spec, w, page.rows, page.total, (d) => access.canViewDownload(d));
    },
  }),
}));

// ───────────── Download

builder.prismaObjectFields(DownloadRef, (t) => ({
  comments: t.field({
    type: CommentConnection,
    nullable: true,
    description:
      "The download's comments as a cursor connection (default order COMMENT_DATE, DESC; ties by id). Only super-user keys list comments that are not visible. Null, with a do_not_have_permission error, when the visitor may not view this download's comments.",
    authScopes: { scope: DOWNLOAD_READ },
    args: {
      ...connectionArgs(t.arg),
      order: t.arg({
        type: CommentOrderEnum,
        required: false,
        description: 'The column rows are sorted by (default COMMENT_DATE).',
      }),
      direction: t.arg({ type: DirectionEnum, required: false, description: 'Sort direction (default DESC).' }),
      since: t.arg({ type: 'DateTime', required: false, description: 'Only comments posted at or after this moment.' }),
    },
    resolve: async (d, args, ctx) => {
      const spec = keysetOf('Download.comments', COMMENT_KEYS, args.order, args.direction, 'comment_date');
      const w = windowOf(ctx.cursors, spec, args);
      const access = await ctx.access();
      if (!access.canViewComments(d)) throw noPermission("view this download's comments");
      const superKey = access.isSuper;
      const since = args.since ?? null;
      const where = (param: (v: unknown) => string) => [
        // Only super-user keys list comments in every state (the rule of `comments`).
        ...(superKey ? [] : [`t.state = 'visible'::"CommentState"`]),
        ...(since ? [`t."commentDate" >= ${param(since.toISOString())}::timestamp`] : []),
      ];
      const total = (parent: string, param: (v: unknown) => string) =>
        commentTotalSql(
          { downloadId: sqlRef(parent), state: superKey ? undefined : 'visible', since: since ?? undefined },
          param,
        );
      const page = await childPage<Comment & { download?: Download }>(
        ctx,
        { from: 'comment', parent: 'downloadId', model: 'Comment', where, total },
        spec,
        w,
        [superKey, since],
        d.id,
      );
      // The parent rides along, so the comments' own permission fields need not read it again.
      for (const c of page.rows) c.download = d;
      return connectionFrom(ctx.cursors, spec, w, page.rows, page.total, (c) => access.canViewComment(c, d));
    },
  }),
  team: t.field({
    type: DownloadTeamConnection,
    nullable: true,
    description:
      "The users on the download's team (they may edit it and manage its files; the owner is not a member), as a cursor connection ordered by when they joined (default ASC).",
    authScopes: { scope: DOWNLOAD_READ },
    args: {
      ...connectionArgs(t.arg),
      direction: t.arg({
        type: DirectionEnum,
        required: false,
        description: 'Sort direction by joining date (default ASC).',
      }),
    },
    resolve: async (d, args, ctx) => {
      const spec = keysetOf('Download.team', TEAM_KEYS, null, args.direction, 'added_at', 'asc');
      const w = windowOf(ctx.cursors, spec, args);
      const from = `(SELECT u.*, tm."downloadId", tm."addedAt" FROM team_member tm JOIN "user" u ON u.id = tm."userId")`;
      const page = await childPage<TeamMemberRow>(
        ctx,
        { from, parent: 'downloadId', model: 'User', dates: ['addedAt'] },
        spec,
        w,
        null,
        d.id,
      );
      return connectionFrom(ctx.cursors, spec, w, page.rows, page.total, () => true);
    },
  }),
  versionsConnection: t.field({
    type: VersionConnection,
    nullable: true,
    description:
      "The download's visible versions as a cursor connection (default order RELEASE_DATE, DESC; ties by id): the paged form of `versions`.",
    authScopes: { scope: DOWNLOAD_READ },
    args: {
      ...connectionArgs(t.arg),
      order: t.arg({
        type: VersionOrderEnum,
        required: false,
        description: 'The column rows are sorted by (default RELEASE_DATE).',
      }),
      direction: t.arg({ type: DirectionEnum, required: false, description: 'Sort direction (default DESC).' }),
    },
    resolve: async (d, args, ctx) => {
      const spec = keysetOf('Download.versions', VERSION_KEYS, args.order, args.direction, 'release_date');
      const w = windowOf(ctx.cursors, spec, args);
      const page = await childPage<Version>(
        ctx,
        // Deleted versions are left out, as from every list of versions (the total counts the same rows).
        { from: 'version', parent: 'downloadId', model: 'Version', where: () => [`t."state" = 'visible'`] },
        spec,
        w,
        null,
        d.id,
      );
      return connectionFrom(ctx.cursors, spec, w, page.rows, page.total, () => true);
    },
  }),
}));

// ───────────── Version

builder.prismaObjectFields(VersionRef, (t) => ({
  files: t.field({
    type: FileConnection,
    nullable: true,
    description:
      "The version's files as a cursor connection (default order DISPLAY_ORDER, DESC; ties by id). Soft-deleted files are never listed; failed ones only to visitors who may manage the download's files.",
    authScopes: { scope: DOWNLOAD_READ },
    args: {
      ...connectionArgs(t.arg),
      order: t.arg({
        type: FileOrderEnum,
        required: false,
        description: 'The column rows are sorted by (default DISPLAY_ORDER).',
      }),
      direction: t.arg({ type: DirectionEnum, required: false, description: 'Sort direction (default DESC).' }),
    },
    resolve: async (v, args, ctx) => {
      const spec = keysetOf('Version.files', FILE_KEYS, args.order, args.direction, 'display_order');
      const w = windowOf(ctx.cursors, spec, args);
      const fileDeps = deps(ctx, await ctx.access());
      const [download, page] = await Promise.all([
        downloadById(ctx, v.downloadId),
        childPage<File>(
          ctx,
          {
            from: 'file',
            parent: 'versionId',
            model: 'File',
            where: () => ['t."isDeleted" = false'],
            total: (parent, param) => fileTotalSql({ versionId: sqlRef(parent) }, param),
          },
          spec,
          w,
          null,
          v.id,
        ),
      ]);
      if (!download || !fileDeps.access.canViewDownload(download)) throw noPermission("view this download's files");
      return connectionFrom(ctx.cursors, spec, w, page.rows, page.total, (f) => fileVisibleTo(fileDeps, f, download));
    },
  }),
}));
