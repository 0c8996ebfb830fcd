// Category rules: listing, validation of writes, and the delete policy (spec "Categories", contract §5–§6).
import { LIMITS } from '../../config.js';
import type { Prisma, PrismaClient, Category } from '../../generated/prisma/client.js';
import type { Config } from '../../config.js';
import type { Access } from '../../permissions/access.js';
import { ApiError, invalidInput, noPermission, notFound, requiredMissing } from '../../errors.js';
import { pageWindow, paginationOf, type Direction, type Page, type PageRequest } from '../../db/lists.js';
import { hardDeleteDownloads } from '../../db/purge.js';
import { isWholeNumberIn, wholeNumberRange } from '../../input/numbers.js';
import type { KeysetSpec } from '../../db/keyset.js';
import type { Database } from '../../db/database.js';
import { sqlRows, type Sql } from '../../db/sql.js';
import { categoryById, categoryPage, type CategoryRead } from './store.js';

type Db = PrismaClient | Prisma.TransactionClient;

export const CATEGORY_ORDERS = {
  display_order: 'displayOrder',
  title: 'title',
  download_count: 'downloadCount',
} as const;
export type CategoryOrder = keyof typeof CATEGORY_ORDERS;

export interface CategoryListArgs extends PageRequest {
  order?: CategoryOrder | null;
  direction?: Direction | null;
}

/** The order of a page-numbered categories list as a keyset spec (ties by id). */
export function categoryOrderSpec(
  order: CategoryOrder | null | undefined,
  direction: Direction | null | undefined,
): KeysetSpec {
  const o = order ?? 'display_order';
  return {
    list: 'categories',
    order: o,
    direction: direction ?? 'desc',
    column: { name: CATEGORY_ORDERS[o], kind: o === 'title' ? 'string' : 'int' },
  };
}

/**
 * A page of every category, read with its total in one statement, without those the visitor may not view; `read`
 * says whether to load each parent and which columns the caller's fields need (store.ts).
 */
export async function listCategories(
  db: Pick<Database, 'query'>,
  access: Access,
  args: CategoryListArgs,
  read: CategoryRead = {},
): Promise<Page<Category>> {
  const w = pageWindow(args);
  const { total, rows } = await categoryPage(
    db,
    { spec: categoryOrderSpec(args.order, args.direction), skip: w.skip, take: w.take },
    read,
  );
  return { nodes: rows.filter((c) => access.canViewCategory(c)), pagination: paginationOf(w, total) };
}

/** A category the visitor may view: 404 when it does not exist, 403 when hidden from them. */
export async function viewableCategory(prisma: Db, access: Access, id: number): Promise<Category> {
  return mayViewCategory(access, id, await prisma.category.findUnique({ where: { id } }));
}

/** viewableCategory for reads, through one hand-written statement (with the parent category when `withParent`). */
export async function readCategory(
  db: Pick<Database, 'query'>,
  access: Access,
  id: number,
  withParent = false,
): Promise<Category> {
  return mayViewCategory(access, id, await categoryById(db, id, withParent));
}

function mayViewCategory(access: Access, id: number, category: Category | null): Category {
  if (!category) throw notFound('category', id);
  if (!access.canViewCategory(category)) throw noPermission('view this category');
  return category;
}

/** Fields accepted on create and update. */
export interface CategoryFields {
  title?: string | null;
  description?: string | null;
  parentCategoryId?: number | null;
  displayOrder?: number | null;
  faIcon?: string | null;
  iconColor?: string | null;
}

/** Configuration knobs: accepted on update only (the spec refuses them on create). */
export interface CategoryKnobs {
  requireApproval?: boolean | null;
  requireCommentApproval?: boolean | null;
  enableVersioning?: boolean | null;
  allowMultiFile?: boolean | null;
  maxTeamMembers?: number | null;
  maxFilesPerVersion?: number | null;
  maxFileSize?: bigint | null;
  maxVersionSize?: bigint | null;
  maxDownloadSize?: bigint | null;
  allowedFileTypes?: string | null;
  previewTextEnabled?: boolean | null;
  previewImageEnabled?: boolean | null;
}

const HEX_COLOUR = /^#(?:[0-9a-f]{3}|[0-9a-f]{4}|[0-9a-f]{6}|[0-9a-f]{8})$/i;
const MAX_TITLE = LIMITS.maxTitle;

function uint(field: string, v: number): number {
  if (!isWholeNumberIn(v, 0)) throw invalidInput(field, `${field} must be ${wholeNumberRange(0)}, got ${v}.`);
  return v;
}

function ubig(field: string, v: bigint): bigint {
  if (v < 0n) throw invalidInput(field, `${field} must be a number of bytes, 0 or more, got ${v}.`);
  return v;
}

/** "ZIP, .rar , 7z" → "zip,rar,7z"; anything that is not an extension is refused. */
export function normalizeFileTypes(raw: string): string {
  const parts = raw
    .split(',')
    .map((p) => p.trim().toLowerCase().replace(/^\./, ''))
    .filter(Boolean);
  for (const p of parts) {
    if (!/^[a-z0-9][a-z0-9_-]{0,15}$/.test(p)) {
      throw invalidInput(
        'allowed_file_types',
        `allowed_file_types must be comma-separated file extensions such as "zip,rar"; "${p}" is not one.`,
      );
    }
  }
  return [...new Set(parts)].join(',');
}

function title(v: string): string {
  const t = v.trim();
  if (t.length > MAX_TITLE) throw invalidInput('title', `title must be at most ${MAX_TITLE} characters.`);
  return t;
}

async function parentId(prisma: Db, v: number, self?: number): Promise<number | null> {
  uint('parent_category_id', v);
  if (v === 0) return null;
  if (self !== undefined) {
    // Walk up from the new parent: meeting `self` would make the tree a loop.
    const all = await prisma.category.findMany({ select: { id: true, parentId: true } });
    const parents = new Map(all.map((c) => [c.id, c.parentId]));
    if (!parents.has(v)) throw notFound('category', v);
    for (let cur: number | null = v; cur !== null; cur = parents.get(cur) ?? null) {
      if (cur === self) {
        throw invalidInput(
          'parent_category_id',
          'A category cannot be moved under itself or one of its own subcategories.',
        );
      }
    }
    return v;
  }
  if (!(await prisma.category.findUnique({ where: { id: v }, select: { id: true } }))) throw notFound('category', v);
  return v;
}

async function fieldData(prisma: Db, f: CategoryFields, self?: number): Promise<Prisma.CategoryUncheckedUpdateInput> {
  const data: Prisma.CategoryUncheckedUpdateInput = {};
  if (f.title != null) {
    data.title = title(f.title);
    if (!data.title) throw invalidInput('title', 'title cannot be empty.');
  }
  if (f.description != null) data.description = f.description;
  if (f.parentCategoryId != null) data.parentId = await parentId(prisma, f.parentCategoryId, self);
  if (f.displayOrder != null) data.displayOrder = uint('display_order', f.displayOrder);
  if (f.faIcon != null) data.faIcon = f.faIcon.trim();
  if (f.iconColor != null) {
    const c = f.iconColor.trim();
    if (c && !HEX_COLOUR.test(c))
      throw invalidInput('icon_color', `icon_color must be a CSS hex colour such as #1e90ff, got "${f.iconColor}".`);
    data.iconColor = c;
  }
  return data;
}

function knobData(k: CategoryKnobs): Prisma.CategoryUncheckedUpdateInput {
  const data: Prisma.CategoryUncheckedUpdateInput = {};
  for (const key of [
    'requireApproval',
    'requireCommentApproval',
    'enableVersioning',
    'allowMultiFile',
    'previewTextEnabled',
    'previewImageEnabled',
  ] as const) {
    if (k[key] != null) data[key] = k[key];
  }
  if (k.maxTeamMembers != null) data.maxTeamMembers = uint('max_team_members', k.maxTeamMembers);
  if (k.maxFilesPerVersion != null) data.maxFilesPerVersion = uint('max_files_per_version', k.maxFilesPerVersion);
  if (k.maxFileSize != null) data.maxFileSize = ubig('max_file_size', k.maxFileSize);
  if (k.maxVersionSize != null) data.maxVersionSize = ubig('max_version_size', k.maxVersionSize);
  if (k.maxDownloadSize != null) data.maxDownloadSize = ubig('max_download_size', k.maxDownloadSize);
  if (k.allowedFileTypes != null) data.allowedFileTypes = normalizeFileTypes(k.allowedFileTypes);
  return data;
}

export async function createCategory(prisma: Db, f: CategoryFields): Promise<Category> {
  if (f.title == null || !f.title.trim()) throw requiredMissing(['title']);
  const data = await fieldData(prisma, f);
  return prisma.category.create({
    data: { ...(data as Prisma.CategoryUncheckedCreateInput), title: data.title as string },
  });
}

export async function updateCategory(prisma: Db, id: number, f: CategoryFields & CategoryKnobs): Promise<Category> {
  const existing = await prisma.category.findUnique({ where: { id } });
  if (!existing) throw notFound('category', id);
  const data = { ...(await fieldData(prisma, f, id)), ...knobData(f) };
  if (Object.keys(data).length === 0) return existing;
  return prisma.category.update({ where: { id }, data });
}

/**
 * Hard-deletes a category under the configured policy (contract §6):
 * `reassign` moves child categories and downloads to the parent (a top-level category holding downloads is refused);
 * `cascade` hard-deletes the subtree with its downloads, each download audited.
 */
export async function deleteCategory(
  prisma: PrismaClient,
  config: Config,
  actorId: number,
  id: number,
  hard: boolean,
): Promise<{ removedBlobs: string[] }> {
  const category = await prisma.category.findUnique({ where: { id } });
  if (!category) throw notFound('category', id);
  if (!hard) {
    throw new ApiError(
      'mc_dm_api_error.category_hard_delete_required',
      'Categories cannot be soft-deleted: send hard=1 to delete this category permanently.',
    );
  }
  if (config.categoryDeletePolicy === 'reassign') {
    await prisma.$transaction(async (tx) => {
      const held = await tx.download.count({ where: { categoryId: id } });
      if (held > 0 && category.parentId === null) {
        throw new ApiError(
          'mc_dm_api_error.category_not_empty',
          `This top-level category holds ${held} download(s) and has no parent to move them to; move or delete them first.`,
          { download_count: held },
        );
      }
      await tx.category.updateMany({ where: { parentId: id }, data: { parentId: category.parentId } });
      if (held > 0) {
        await tx.download.updateMany({ where: { categoryId: id }, data: { categoryId: category.parentId! } });
        await refreshCategoryCounts(tx, [category.parentId!]);
      }
      await tx.category.delete({ where: { id } });
    });
    return { removedBlobs: [] };
  }
  // cascade
  const all = await prisma.category.findMany({ select: { id: true, parentId: true } });
  const subtree = [id];
  for (let i = 0; i < subtree.length; i++) {
    for (const c of all) if (c.parentId === subtree[i]) subtree.push(c.id);
  }
  return prisma.$transaction(async (tx) => {
    const downloads = await tx.download.findMany({ where: { categoryId: { in: subtree } }, select: { id: true } });
    const removedBlobs = await hardDeleteDownloads(
      tx,
      downloads.map((d) => d.id),
      actorId,
      `Category ${id} (${category.title}) was deleted.`,
    );
    for (const cid of [...subtree].reverse()) await tx.category.delete({ where: { id: cid } });
    return { removedBlobs };
  });
}

/** download_count of a category = its downloads in the visible state. `tx`: a driver or Prisma transaction. */
export async function refreshCategoryCounts(tx: Sql, categoryIds: number[]): Promise<void> {
  for (const id of [...new Set(categoryIds)].sort((a, b) => a - b)) {
    // Lock the category row first (in id order, so transactions cannot deadlock): the count then runs after any
    // concurrent writer of this category committed and sees its rows, so two creates cannot both write a stale count.
    // NO KEY UPDATE, the lock the count's UPDATE takes anyway, does not conflict with the KEY SHARE lock a download
    // insert holds on its category through the foreign key. The count is the next statement's, so its snapshot is
    // taken once the lock is held.
    await sqlRows(tx, 'SELECT 1 FROM category WHERE id = $1::int FOR NO KEY UPDATE', [id]);
    await sqlRows(
      tx,
      `UPDATE category SET "downloadCount" = (SELECT count(*) FROM download WHERE "categoryId" = $1::int AND state = 'visible')
       WHERE id = $1::int`,
      [id],
    );
  }
}
