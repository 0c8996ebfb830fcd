// Download rules (spec "Downloads", contract §3, §5, §6): lists, visibility, create/update/delete/restore,
// versions and team members. Plain functions over Prisma; resolvers stay short.
import { LIMITS } from '../../config.js';
import type { Prisma, PrismaClient, Download, Category } from '../../generated/prisma/client.js';
import type { Access } from '../../permissions/access.js';
import { requireScopes } from '../../auth/scopes.js';
import { ApiError, invalidInput, noPermission, notFound, requiredMissing } from '../../errors.js';
import { recordEvents, recordEvent } from '../../db/outbox.js';
import {
  pageWindow,
  paginationOf,
  type Direction,
  type Page,
  type PageRequest,
  type PageWindow,
} from '../../db/lists.js';
import { searchTextOf, type SearchFacets, type SearchOrderColumn } from './search.js';
import { refreshCategoryCounts } from '../categories/index.js';
import { hardDeleteDownloads } from '../../db/purge.js';
import { normalizeTags, setTags, tagsOf } from './tags.js';
import type { Database } from '../../db/database.js';
import { jsonOf, revive, type JsonRow } from '../../db/rows.js';
import { filterWhere } from '../../db/filters.js';
import { searchDownloads } from './search.js';
import {
  DOWNLOAD_FILTER,
  downloadById,
  downloadPage,
  downloadRelationsOf,
  downloadTotal,
  type DownloadFilter,
} from './store.js';

export type DownloadState = Download['state'];

export const DOWNLOAD_ORDERS = {
  created_date: 'createdDate',
  last_update: 'lastUpdate',
  download_count: 'downloadCount',
  view_count: 'viewCount',
  title: 'title',
} as const;
export type DownloadOrder = keyof typeof DOWNLOAD_ORDERS;

/**
 * The orders of the page-numbered list: the columns, and two that only a search (`q`) can sort by: relevance (its
 * default) and rating (ratingAvg, then ratingCount).
 */
export const DOWNLOAD_LIST_ORDERS = { ...DOWNLOAD_ORDERS, relevance: 'relevance', rating: 'ratingAvg' } as const;
export type DownloadListOrder = keyof typeof DOWNLOAD_LIST_ORDERS;
const SEARCH_ONLY_ORDERS: readonly DownloadListOrder[] = ['relevance', 'rating'];

/** The search statement's order for a list order (view_count and title have none: a search cannot sort by them). */
const SEARCH_ORDERS: Partial<Record<DownloadListOrder, SearchOrderColumn>> = {
  relevance: 'relevance',
  rating: 'ratingAvg',
  download_count: 'downloadCount',
  created_date: 'createdDate',
  last_update: 'lastUpdate',
};

export interface DownloadListArgs extends PageRequest {
  categoryId?: number | null;
  prefixId?: number | null;
  downloadState?: DownloadState | null;
  since?: Date | null;
  userId?: number | null;
  tags?: readonly string[] | null;
  /** A search (web-search syntax): the list is then the downloads it finds, counted among those the visitor may view. */
  q?: string | null;
  /** The same as `since` (the REST list's `updated_since`); when both are given, the later moment applies. */
  updatedSince?: Date | null;
  order?: DownloadListOrder | null;
  direction?: Direction | null;
}

/** A page of the list, and with a search the facets of everything it found (when asked for). */
export interface DownloadPage extends Page<Download> {
  facets?: SearchFacets | null;
  /** With a search: false when more matched than LIMITS.searchMaxResults (pagination.total is then that bound). */
  totalIsExact?: boolean | null;
}

/** What a visitor needs to know about their team memberships to answer canEdit. */
export interface TeamLookup {
  isTeamMember(downloadId: number): Promise<boolean>;
}

/** The rows a download list covers for this visitor: its filters, and the state rule for visitors who are not moderators. */
export function downloadListFilter(
  access: Access,
  args: Omit<DownloadListArgs, 'page' | 'perPage' | 'order' | 'direction' | 'q'>,
): DownloadFilter {
  const filter: DownloadFilter = {};
  if (args.categoryId != null) filter.categoryId = args.categoryId;
  if (args.prefixId != null) filter.prefixId = args.prefixId === 0 ? null : args.prefixId;
  // Visitors who are not moderators (and keys that are not super-user keys) only ever list visible downloads.
  if (!access.isModerator) filter.state = 'visible';
  else if (args.downloadState) filter.state = args.downloadState;
  const since = [args.since, args.updatedSince].filter((d): d is Date => d != null);
  if (since.length) filter.since = new Date(Math.max(...since.map((d) => d.getTime())));
  if (args.userId != null) filter.userId = args.userId;
  if (args.tags?.length) filter.tags = normalizeTags(args.tags);
  return filter;
}

/** The same filter as a Prisma `where`. */
export function downloadWhere(filter: DownloadFilter): Prisma.DownloadWhereInput {
  return filterWhere(DOWNLOAD_FILTER, filter);
}

/**
 * A page of downloads the visitor may view. `query` is what the operation asks to load with each row (Pothos's
 * query argument): the common shapes are read with one hand-written statement (store.ts), others by Prisma.
 */
export async function listDownloads(
  deps: { prisma: PrismaClient; db: Pick<Database, 'query' | 'kind'> },
  access: Access,
  args: DownloadListArgs,
  query: Omit<Prisma.DownloadFindManyArgs, 'where' | 'orderBy' | 'skip' | 'take'> = {},
  opts: { facets?: boolean } = {},
): Promise<DownloadPage> {
  const w = pageWindow(args);
  if (args.q != null) return searchList(deps, access, args, w, query, opts.facets ?? false);
  if (args.order && SEARCH_ONLY_ORDERS.includes(args.order))
    throw invalidInput('order', `order ${args.order} sorts a search: send q too.`);
  if (opts.facets) throw invalidInput('facets', 'facets are counted for a search: send q too.');
  const filter = downloadListFilter(access, args);
  const column = DOWNLOAD_ORDERS[(args.order ?? 'last_update') as DownloadOrder];
  const direction = args.direction ?? 'desc';
  const rel = downloadRelationsOf(query as never);
  let total: number;
  let rows: Download[];
  if (rel) {
    ({ total, rows } = await downloadPage(deps.db, filter, { column, direction }, w, rel));
  } else {
    const where = downloadWhere(filter);
    [total, rows] = await Promise.all([
      downloadTotal(deps.prisma, filter),
      deps.prisma.download.findMany({
        ...query,
        where,
        orderBy: [{ [column]: direction }, { id: direction }],
        skip: w.skip,
        take: w.take,
      }),
    ]);
  }
  return { nodes: rows.filter((d) => access.canViewDownload(d)), pagination: paginationOf(w, total) };
}

/**
 * The list with `q`: the downloads the search finds among those the visitor may view (the permission is part of the
 * statement, so `total` and the facets count only those), best match first unless `order` says otherwise. At most
 * LIMITS.searchMaxResults results: `total` is then that bound and `totalIsExact` false. The state
 * rule is the one of a single download (owners find their own moderated and draft downloads), and `download_state`
 * narrows it further for anyone.
 */
async function searchList(
  deps: { db: Pick<Database, 'query' | 'kind'> },
  access: Access,
  args: DownloadListArgs,
  w: PageWindow,
  query: object,
  facets: boolean,
): Promise<DownloadPage> {
  const text = searchTextOf(args.q ?? '', 'q');
  const order = SEARCH_ORDERS[args.order ?? 'relevance'];
  if (!order)
    throw invalidInput(
      'order',
      `A search sorts by relevance, rating, download_count, created_date or last_update, not ${args.order}.`,
    );
  const filter = downloadListFilter(access, args);
  // The visibility below decides the states; a moderator's download_state filter, or nothing, narrows it.
  if (!access.isModerator) {
    if (args.downloadState) filter.state = args.downloadState;
    else delete filter.state;
  }
  const result = await searchDownloads(deps.db, {
    text,
    filter,
    visibility: access.downloadVisibility(),
    order,
    direction: args.direction ?? 'desc',
    offset: w.skip,
    take: w.take,
    first: w.take,
    facets,
    highlights: false,
    rel: downloadRelationsOf(query as never) ?? { category: false, currentVersion: false },
  });
  return {
    nodes: result.hits.map((h) => h.download),
    pagination: paginationOf(w, result.total),
    facets: result.facets,
    totalIsExact: result.totalIsExact,
  };
}

/** A download the visitor may view: 404 when it does not exist, 403 when hidden from them. */
export async function viewableDownload(
  prisma: PrismaClient,
  access: Access,
  id: number,
  extra: Omit<Prisma.DownloadFindUniqueArgs, 'where'> = {},
): Promise<Download> {
  return mayView(access, id, await prisma.download.findUnique({ ...extra, where: { id } }));
}

/** viewableDownload for reads: the common shapes of `query` through one hand-written statement. */
export async function readDownload(
  deps: { prisma: PrismaClient; db: Pick<Database, 'query'> },
  access: Access,
  id: number,
  query: Omit<Prisma.DownloadFindUniqueArgs, 'where'> = {},
): Promise<Download> {
  const rel = downloadRelationsOf(query as never);
  return rel
    ? mayView(access, id, await downloadById(deps.db, id, rel))
    : viewableDownload(deps.prisma, access, id, query);
}

/** A download as `query` asks for it, with no view check (a write's payload, read after the write made its checks). */
export async function downloadWith(
  deps: { prisma: PrismaClient; db: Pick<Database, 'query'> },
  id: number,
  query: Omit<Prisma.DownloadFindUniqueArgs, 'where'>,
): Promise<Download> {
  const rel = downloadRelationsOf(query as never);
  const d = rel
    ? await downloadById(deps.db, id, rel)
    : await deps.prisma.download.findUnique({ ...query, where: { id } });
  if (!d) throw notFound('download', id);
  return d;
}

function mayView<T extends Download>(access: Access, id: number, d: T | null): T {
  if (!d) throw notFound('download', id);
  if (!access.canViewDownload(d)) throw noPermission('view this download');
  return d;
}

const MAX_TITLE = LIMITS.maxTitle;
const MAX_TAG_LINE = LIMITS.maxTagLine;

function checkTitle(raw: string): string {
  const t = raw.trim();
  if (!t) throw invalidInput('title', 'title cannot be empty.');
  if (t.length > MAX_TITLE) throw invalidInput('title', `title must be at most ${MAX_TITLE} characters.`);
  return t;
}

function checkTagLine(raw: string): string {
  const t = raw.trim();
  if (t.length > MAX_TAG_LINE) throw invalidInput('tag_line', `tag_line must be at most ${MAX_TAG_LINE} characters.`);
  return t;
}

/** prefix_id must name a prefix assigned to the category (0 or null: no prefix). */
async function checkPrefix(
  db: Prisma.TransactionClient | PrismaClient,
  prefixId: number | null | undefined,
  categoryId: number,
): Promise<number | null> {
  if (!prefixId) return null;
  const prefix = await db.prefix.findUnique({
    where: { id: prefixId },
    include: { categories: { where: { categoryId } } },
  });
  if (!prefix) throw notFound('prefix', prefixId);
  if (prefix.categories.length === 0) {
    throw new ApiError(
      'mc_dm_api_error.prefix_not_allowed',
      `Prefix ${prefixId} is not available in category ${categoryId}.`,
      { prefix_id: prefixId, category_id: categoryId },
    );
  }
  return prefixId;
}

/** Today's UTC date as Y-m-d: the version string a versioning category defaults to. */
export const todayVersionString = (now = new Date()) => now.toISOString().slice(0, 10);

export function versionStringFor(category: Category, raw: string | null | undefined, now: Date): string {
  if (!category.enableVersioning) return '';
  const v = raw?.trim() ?? '';
  if (v.length > 50) throw invalidInput('version_string', 'version_string must be at most 50 characters.');
  return v || todayVersionString(now);
}

export interface CreateDownloadInput {
  categoryId: number;
  title: string;
  tagLine?: string | null;
  description?: string | null;
  prefixId?: number | null;
  tags?: readonly string[] | null;
  versionString?: string | null;
}

export async function createDownload(
  prisma: PrismaClient,
  access: Access,
  input: CreateDownloadInput,
): Promise<Download> {
  if (!input.title.trim()) throw requiredMissing(['title']);
  const category = await prisma.category.findUnique({ where: { id: input.categoryId } });
  if (!category) throw notFound('category', input.categoryId);
  if (!access.canAddDownload(category)) throw noPermission('add downloads to this category');
  if (access.visitor.userId === 0) {
    throw new ApiError(
      'do_not_have_permission',
      'Guests cannot own downloads: act as a user (Forum-Api-User with a super-user key).',
    );
  }
  const title = checkTitle(input.title);
  const tagLine = checkTagLine(input.tagLine ?? '');
  const tags = normalizeTags(input.tags ?? []);
  const prefixId = await checkPrefix(prisma, input.prefixId, category.id);
  const now = new Date();
  const versionString = versionStringFor(category, input.versionString, now);
  const state: DownloadState =
    category.requireApproval && !access.bypassesApproval(category.id) ? 'moderated' : 'visible';
  return prisma.$transaction(async (tx) => {
    const d = await tx.download.create({
      data: {
        categoryId: category.id,
        userId: access.visitor.userId,
        title,
        tagLine,
        description: input.description ?? '',
        prefixId,
        state,
        lastUpdate: now,
        createdDate: now,
      },
    });
    const v = await tx.version.create({ data: { downloadId: d.id, versionString, releaseDate: now } });
    await setTags(tx, d.id, tags);
    if (state === 'visible') await refreshCategoryCounts(tx, [category.id]);
    // The first version is a release too.
    await recordEvents(tx, [
      { type: 'download.created', objectId: d.id, downloadId: d.id },
      { type: 'version.released', objectId: v.id, downloadId: d.id },
    ]);
    return tx.download.update({ where: { id: d.id }, data: { currentVersionId: v.id } });
  });
}

export interface UpdateDownloadInput {
  downloadId: number;
  title?: string | null;
  tagLine?: string | null;
  description?: string | null;
  prefixId?: number | null;
  categoryId?: number | null;
  tags?: readonly string[] | null;
}

/** The columns an edit may change (besides lastUpdate, which every change moves). */
type Edit = Partial<Pick<Download, 'title' | 'tagLine' | 'description' | 'categoryId' | 'prefixId'>>;

/**
 * Edits a download. Reads and checks first, then writes in one driver transaction (the row, its tags, the categories'
 * counts when it moves, the outbox row): the edit is the catalogue's most frequent write after a counted download, and
 * Prisma's model queries cost several times its statements' own time (src/db/sql.ts).
 */
export async function updateDownload(
  deps: { prisma: PrismaClient; db: Pick<Database, 'query' | 'transaction'> },
  access: Access,
  team: TeamLookup,
  input: UpdateDownloadInput,
): Promise<Download> {
  const { prisma, db } = deps;
  const d = await readDownload(deps, access, input.downloadId);
  if (!access.canEditDownload(d, await team.isTeamMember(d.id))) throw noPermission('edit this download');
  const data: Edit = {};
  if (input.title != null && input.title.trim() !== d.title) data.title = checkTitle(input.title);
  if (input.tagLine != null && input.tagLine.trim() !== d.tagLine) data.tagLine = checkTagLine(input.tagLine);
  if (input.description != null && input.description !== d.description) data.description = input.description;
  let categoryId = d.categoryId;
  if (input.categoryId != null && input.categoryId !== d.categoryId) {
    const target = await prisma.category.findUnique({ where: { id: input.categoryId } });
    if (!target) throw notFound('category', input.categoryId);
    if (!access.canMoveDownload(d)) throw noPermission('move this download');
    // The mover must be able to add downloads to the target (view + add there), not merely see it.
    if (!access.canAddDownload(target)) throw noPermission('move downloads into that category');
    data.categoryId = categoryId = target.id;
  }
  if (input.prefixId != null) {
    const prefixId = await checkPrefix(prisma, input.prefixId, categoryId);
    if (prefixId !== d.prefixId) data.prefixId = prefixId;
  } else if (data.categoryId !== undefined && d.prefixId !== null) {
    // Moving to a category where the current prefix is not offered drops the prefix.
    const kept = await prisma.categoryPrefix.findUnique({
      where: { categoryId_prefixId: { categoryId, prefixId: d.prefixId } },
    });
    if (!kept) data.prefixId = null;
  }
  let tags: string[] | null = null;
  if (input.tags != null) {
    tags = normalizeTags(input.tags);
    if (JSON.stringify(await tagsOf(db, d.id)) === JSON.stringify([...tags].sort())) tags = null;
  }
  const columns = Object.keys(data) as (keyof Edit)[];
  if (columns.length === 0 && tags === null) return d;
  return db.transaction(async (tx) => {
    // The row update comes first: its row lock makes concurrent updates of one download take turns, so two tag
    // replacements cannot interleave into a union of both sets.
    const [row] = await tx.query<{ d: JsonRow }>(
      `UPDATE download d SET ${columns.map((c, i) => `"${c}" = $${i + 3}`).join(', ')}${columns.length ? ', ' : ''}"lastUpdate" = $2
       WHERE d.id = $1::int RETURNING ${jsonOf('Download', 'd')} AS d`,
      // The moment as UTC text: the column holds UTC without a zone (as Prisma writes it), and the zone is ignored.
      [d.id, new Date().toISOString(), ...columns.map((c) => data[c])],
    );
    // Deleted between the read and the write (a hard delete): as if it had been gone at the read.
    if (!row) throw notFound('download', d.id);
    if (tags !== null) await setTags(tx, d.id, tags);
    if (data.categoryId !== undefined) await refreshCategoryCounts(tx, [d.categoryId, categoryId]);
    await recordEvent(tx, 'download.updated', d.id, d.id);
    return revive<Download>('Download', row.d);
  });
}

export interface DeleteDownloadInput {
  downloadId: number;
  hard?: boolean | null;
  reason?: string | null;
}

/** Soft delete keeps the row (state deleted, previous state kept); hard delete removes it. Both are audited. */
export async function deleteDownload(
  prisma: PrismaClient,
  access: Access,
  input: DeleteDownloadInput,
): Promise<{ removedBlobs: string[] }> {
  const d = await viewableDownload(prisma, access, input.downloadId);
  if (!access.canDeleteDownload(d)) throw noPermission('delete this download');
  const reason = input.reason?.trim() ?? '';
  const actor = access.visitor.userId;
  if (input.hard) {
    requireScopes(access.visitor, ['mc_dm_download:delete_hard']);
    if (!access.canHardDeleteDownload(d)) throw noPermission('permanently delete this download');
    return prisma.$transaction(async (tx) => {
      const removedBlobs = await hardDeleteDownloads(tx, [d.id], actor, reason);
      await refreshCategoryCounts(tx, [d.categoryId]);
      await recordEvent(tx, 'download.deleted', d.id, d.id);
      return { removedBlobs };
    });
  }
  await prisma.$transaction(async (tx) => {
    if (d.state !== 'deleted') {
      await tx.download.update({
        where: { id: d.id },
        data: { state: 'deleted', stateBeforeDelete: d.state, deletedAt: new Date() },
      });
    }
    await tx.auditLog.create({
      data: { action: 'download.soft_deleted', contentType: 'download', contentId: d.id, userId: actor, reason },
    });
    await refreshCategoryCounts(tx, [d.categoryId]);
    if (d.state !== 'deleted') await recordEvent(tx, 'download.deleted', d.id, d.id);
  });
  return { removedBlobs: [] };
}

/** Moderators bring a soft-deleted download back to the state it had. */
export async function restoreDownload(prisma: PrismaClient, access: Access, downloadId: number): Promise<Download> {
  const d = await viewableDownload(prisma, access, downloadId);
  if (!access.isSuper && !(access.has('viewDeleted', d.categoryId) && access.has('deleteAny', d.categoryId))) {
    throw noPermission('restore this download');
  }
  if (d.state !== 'deleted') {
    throw new ApiError(
      'mc_dm_api_error.download_not_deleted',
      `Download ${d.id} is not deleted, so there is nothing to restore.`,
      { download_id: d.id },
    );
  }
  return prisma.$transaction(async (tx) => {
    const restored = await tx.download.update({
      where: { id: d.id },
      data: { state: d.stateBeforeDelete ?? 'visible', stateBeforeDelete: null, deletedAt: null },
    });
    await tx.auditLog.create({
      data: { action: 'download.restored', contentType: 'download', contentId: d.id, userId: access.visitor.userId },
    });
    await refreshCategoryCounts(tx, [d.categoryId]);
    await recordEvent(tx, 'download.restored', d.id, d.id);
    return restored;
  });
}

function canManageTeam(access: Access, d: Download): boolean {
  return (
    access.isSuper ||
    access.visitor.isAdmin ||
    (access.visitor.userId !== 0 && d.userId === access.visitor.userId) ||
    access.has('editAny', d.categoryId)
  );
}

export async function addTeamMember(
  prisma: PrismaClient,
  access: Access,
  downloadId: number,
  userId: number,
): Promise<void> {
  const d = (await viewableDownload(prisma, access, downloadId, { include: { category: true } })) as Download & {
    category: Category;
  };
  if (!canManageTeam(access, d)) throw noPermission('change the team of this download');
  if (userId === d.userId) throw invalidInput('user_id', 'The owner of a download is not added to its team.');
  if (!(await prisma.user.findUnique({ where: { id: userId }, select: { id: true } }))) throw notFound('user', userId);
  await prisma.$transaction(async (tx) => {
    // The download's row lock makes simultaneous adds take turns, so the count below sees every earlier add and the
    // cap holds across instances. NO KEY UPDATE does not block readers or rows that reference the download.
    await tx.$executeRaw`SELECT 1 FROM download WHERE id = ${downloadId}::int FOR NO KEY UPDATE`;
    if (await tx.teamMember.findUnique({ where: { downloadId_userId: { downloadId, userId } } })) return;
    const size = await tx.teamMember.count({ where: { downloadId } });
    if (size >= d.category.maxTeamMembers) {
      throw new ApiError(
        'mc_dm_api_error.too_many_team_members',
        `This download already has ${size} team member(s), the most its category allows.`,
        { max_team_members: d.category.maxTeamMembers },
      );
    }
    await tx.teamMember.create({ data: { downloadId, userId } });
  });
}

export async function removeTeamMember(
  prisma: PrismaClient,
  access: Access,
  downloadId: number,
  userId: number,
): Promise<void> {
  const d = await viewableDownload(prisma, access, downloadId);
  if (!canManageTeam(access, d)) throw noPermission('change the team of this download');
  await prisma.teamMember.deleteMany({ where: { downloadId, userId } });
}
