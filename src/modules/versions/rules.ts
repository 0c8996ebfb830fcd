// Version rules (contract "Releases"): adding, reading, listing, changing, deleting and restoring the releases of a
// download, their channel, compatibility and dependencies, and which one is the download's current version. Plain
// functions over Prisma; resolvers stay short.
import semver from 'semver';
import type { Category, Download, Prisma, PrismaClient, Version } from '../../generated/prisma/client.js';
import type { Access } from '../../permissions/access.js';
import { LIMITS } from '../../config.js';
import { requireScopes } from '../../auth/scopes.js';
import { ApiError, invalidInput, noPermission, notFound, requiredMissing } from '../../errors.js';
import { pageWindow, paginationOf, type Page, type PageRequest } from '../../db/lists.js';
import { recordEvents } from '../../db/outbox.js';
import { versionStringFor, viewableDownload, type TeamLookup } from '../downloads/index.js';

export const CHANNELS = ['release', 'beta', 'alpha'] as const;
export type Channel = (typeof CHANNELS)[number];
export const DEPENDENCY_KINDS = ['required', 'optional', 'incompatible', 'embedded'] as const;
export type DependencyKind = (typeof DEPENDENCY_KINDS)[number];

/** One dependency of a version, as stored (the `dependencies` JSON column) and as the API shows it. */
export interface Dependency {
  downloadId: number;
  versionRange: string;
  kind: DependencyKind;
}

export type VersionWithDownload = Version & { download: Download & { category: Category } };

// ───────────── input checks (plain functions)

/** compatible_with: trimmed, without repeats, each 1–maxCompatibleLength characters, at most maxCompatibleWith. */
export function checkCompatibleWith(raw: readonly string[], field = 'compatible_with'): string[] {
  if (raw.length > LIMITS.maxCompatibleWith) {
    throw invalidInput(field, `${field} takes at most ${LIMITS.maxCompatibleWith} entries, got ${raw.length}.`);
  }
  const out: string[] = [];
  for (const item of raw) {
    const v = item.trim();
    if (!v) throw invalidInput(field, `${field} entries cannot be empty.`);
    if (v.length > LIMITS.maxCompatibleLength) {
      throw invalidInput(field, `${field} entries must be at most ${LIMITS.maxCompatibleLength} characters.`);
    }
    if (!out.includes(v)) out.push(v);
  }
  return out;
}

export function checkChangelog(raw: string): string {
  if (raw.length > LIMITS.maxChangelog) {
    throw invalidInput('changelog', `changelog must be at most ${LIMITS.maxChangelog} characters.`);
  }
  return raw;
}

/** A version range: `*`, or a range the semver package parses (`^1.2`, `>=1.0.0 <2`, `1.x || 2.x`). */
export function checkRange(raw: string, field = 'dependencies.version_range'): string {
  const r = raw.trim();
  if (!r) throw invalidInput(field, `${field} cannot be empty (use * for any version).`);
  if (r.length > LIMITS.maxVersionRange) {
    throw invalidInput(field, `${field} must be at most ${LIMITS.maxVersionRange} characters.`);
  }
  if (r === '*') return r;
  if (semver.validRange(r) === null) {
    throw invalidInput(field, `${field} must be * or a semver range such as ^1.2.0 or >=1.0 <2, got "${r}".`);
  }
  return r;
}

/** The shape of a dependency list; whether the downloads exist and may be viewed is checked by checkDependencies. */
export function checkDependencyShapes(raw: readonly Dependency[], ownDownloadId: number): Dependency[] {
  const field = 'dependencies';
  if (raw.length > LIMITS.maxDependencies) {
    throw invalidInput(field, `${field} takes at most ${LIMITS.maxDependencies} entries, got ${raw.length}.`);
  }
  const seen = new Set<number>();
  return raw.map((d) => {
    if (!DEPENDENCY_KINDS.includes(d.kind)) {
      throw invalidInput(`${field}.kind`, `${field}.kind must be one of: ${DEPENDENCY_KINDS.join(', ')}.`);
    }
    if (d.downloadId === ownDownloadId) {
      throw invalidInput(`${field}.download_id`, 'A version cannot depend on its own download.');
    }
    if (seen.has(d.downloadId)) {
      throw invalidInput(`${field}.download_id`, `Download ${d.downloadId} is named twice in ${field}.`);
    }
    seen.add(d.downloadId);
    return { downloadId: d.downloadId, versionRange: checkRange(d.versionRange), kind: d.kind };
  });
}

/** Shapes, then every named download exists and the visitor may view it (else invalid_input, nothing stored). */
async function checkDependencies(
  prisma: PrismaClient,
  access: Access,
  raw: readonly Dependency[],
  ownDownloadId: number,
): Promise<Dependency[]> {
  const deps = checkDependencyShapes(raw, ownDownloadId);
  if (deps.length === 0) return deps;
  const rows = await prisma.download.findMany({ where: { id: { in: deps.map((d) => d.downloadId) } } });
  const byId = new Map(rows.map((d) => [d.id, d]));
  for (const d of deps) {
    const row = byId.get(d.downloadId);
    if (!row || !access.canViewDownload(row)) {
      throw invalidInput(
        'dependencies.download_id',
        `dependencies names download ${d.downloadId}, which does not exist.`,
      );
    }
  }
  return deps;
}

/** The stored dependencies of a version (the JSON column), typed. */
export const dependenciesOf = (v: Pick<Version, 'dependencies'>): Dependency[] =>
  Array.isArray(v.dependencies) ? (v.dependencies as unknown as Dependency[]) : [];

// ───────────── semver matching

/** The parsed semver of a version string (a leading `v` allowed), or null: such versions match only `*`. */
export function semverOf(versionString: string): string | null {
  return semver.valid(versionString.trim(), { loose: false });
}

/** Whether a version string satisfies a range: `*` takes every version, other ranges only semver versions. */
export function satisfies(versionString: string, range: string): boolean {
  if (range === '*') return true;
  const v = semverOf(versionString);
  return v !== null && semver.satisfies(v, range, { includePrerelease: true });
}

/** Newest first: by release date, then by id (the order of lists, of "newest" and of the current version). */
export function newestFirst(a: Pick<Version, 'releaseDate' | 'id'>, b: Pick<Version, 'releaseDate' | 'id'>): number {
  return b.releaseDate.getTime() - a.releaseDate.getTime() || b.id - a.id;
}

// ───────────── reads

async function canEdit(access: Access, team: TeamLookup, d: Download): Promise<boolean> {
  return access.canEditDownload(d, false) || access.canEditDownload(d, await team.isTeamMember(d.id));
}

/**
 * A version the visitor may see: 404 when unknown, 403 when its download is hidden from them; a deleted version is
 * shown only to visitors who may edit the download (404 for the others, as a deleted file).
 */
export async function viewableVersion(
  prisma: PrismaClient,
  access: Access,
  team: TeamLookup,
  id: number,
  extra: Omit<Prisma.VersionFindUniqueArgs, 'where'> = {},
): Promise<VersionWithDownload> {
  const v = (await prisma.version.findUnique({
    ...extra,
    where: { id },
    include: { ...(extra as { include?: object }).include, download: { include: { category: true } } },
  })) as unknown as VersionWithDownload | null;
  if (!v) throw notFound('version', id);
  if (!access.canViewDownload(v.download)) throw noPermission('view this download');
  if (v.state === 'deleted' && !(await canEdit(access, team, v.download))) throw notFound('version', id);
  return v;
}

async function editableVersion(prisma: PrismaClient, access: Access, team: TeamLookup, id: number) {
  const v = await viewableVersion(prisma, access, team, id);
  if (!(await canEdit(access, team, v.download))) throw noPermission('edit the versions of this download');
  return v;
}

export interface VersionListArgs extends PageRequest {
  downloadId?: number | null;
  channel?: Channel | null;
  compatibleWith?: readonly string[] | null;
}

/**
 * One page of visible versions, newest first. download_id is required except for super-user keys; its download
 * must exist (404) and be viewable (403). Deleted versions are never listed.
 */
export async function listVersions(
  prisma: PrismaClient,
  access: Access,
  args: VersionListArgs,
  extra: Omit<Prisma.VersionFindManyArgs, 'where' | 'orderBy' | 'skip' | 'take'> = {},
): Promise<Page<Version>> {
  if (args.downloadId == null && !access.isSuper) throw requiredMissing(['download_id']);
  if (args.downloadId != null) await viewableDownload(prisma, access, args.downloadId);
  const where: Prisma.VersionWhereInput = { state: 'visible' };
  if (args.downloadId != null) where.downloadId = args.downloadId;
  if (args.channel) where.channel = args.channel;
  const compat = checkCompatibleWith(args.compatibleWith ?? []);
  if (compat.length > 0) where.compatibleWith = { hasEvery: compat };
  const w = pageWindow(args);
  const [total, rows] = await Promise.all([
    prisma.version.count({ where }),
    prisma.version.findMany({
      ...extra,
      where,
      orderBy: [{ releaseDate: 'desc' }, { id: 'desc' }],
      skip: w.skip,
      take: w.take,
      include: { ...(extra as { include?: object }).include, download: true },
    }) as unknown as Promise<(Version & { download: Download })[]>,
  ]);
  return { nodes: rows.filter((v) => access.canViewDownload(v.download)), pagination: paginationOf(w, total) };
}

// ───────────── the current version

/**
 * Sets the download's current version, inside the writing transaction (the download's row locked): the pinned one
 * while it is pinned and still visible, else the newest visible release (by release date), else none.
 */
export async function settleCurrentVersion(tx: Prisma.TransactionClient, downloadId: number, now: Date) {
  const d = await tx.download.findUniqueOrThrow({ where: { id: downloadId }, include: { currentVersion: true } });
  if (d.currentVersionPinned && d.currentVersion?.state === 'visible') return d;
  const newest = await tx.version.findFirst({
    where: { downloadId, state: 'visible', channel: 'release' },
    orderBy: [{ releaseDate: 'desc' }, { id: 'desc' }],
    select: { id: true },
  });
  const currentVersionId = newest?.id ?? null;
  if (currentVersionId === d.currentVersionId && !d.currentVersionPinned) return d;
  return tx.download.update({
    where: { id: downloadId },
    data: { currentVersionId, currentVersionPinned: false, lastUpdate: now },
  });
}

/** The download's row lock: versions of one download are written one at a time (see createVersion). */
const lockDownload = (tx: Prisma.TransactionClient, id: number) =>
  tx.$executeRaw`SELECT 1 FROM download WHERE id = ${id}::int FOR UPDATE`;

// ───────────── writes

export interface CreateVersionInput {
  downloadId: number;
  versionString?: string | null;
  channel?: Channel | null;
  changelog?: string | null;
  compatibleWith?: readonly string[] | null;
  dependencies?: readonly Dependency[] | null;
}

/**
 * A new version. A release becomes the download's current version (unless an editor pinned another); a beta or
 * alpha does not. last_update moves.
 */
export async function createVersion(prisma: PrismaClient, access: Access, team: TeamLookup, input: CreateVersionInput) {
  const d = (await viewableDownload(prisma, access, input.downloadId, { include: { category: true } })) as Download & {
    category: Category;
  };
  if (!(await canEdit(access, team, d))) throw noPermission('add versions to this download');
  if (!d.category.enableVersioning) {
    throw new ApiError(
      'mc_dm_api_error.versioning_disabled',
      `Category ${d.categoryId} does not use versioning: its downloads keep a single version.`,
      { category_id: d.categoryId },
    );
  }
  const now = new Date();
  const versionString = versionStringFor(d.category, input.versionString, now);
  const data = {
    channel: input.channel ?? 'release',
    changelog: checkChangelog(input.changelog ?? ''),
    compatibleWith: checkCompatibleWith(input.compatibleWith ?? []),
    dependencies: (await checkDependencies(prisma, access, input.dependencies ?? [], d.id)) as unknown as object[],
  };
  return prisma.$transaction(async (tx) => {
    // The download's row lock first: the new version's foreign key takes a share lock on the download, and setting
    // currentVersionId (a unique column) needs the row exclusively, so two versions added at once to one download
    // would each wait for the other (a deadlock) without it. With it they take turns.
    await lockDownload(tx, d.id);
    const version = await tx.version.create({ data: { downloadId: d.id, versionString, releaseDate: now, ...data } });
    await settleCurrentVersion(tx, d.id, now);
    const download = await tx.download.update({ where: { id: d.id }, data: { lastUpdate: now } });
    await recordEvents(tx, [
      { type: 'version.released', objectId: version.id, downloadId: d.id },
      { type: 'download.updated', objectId: d.id, downloadId: d.id },
    ]);
    return { version, download };
  });
}

export interface UpdateVersionInput {
  versionId: number;
  versionString?: string | null;
  channel?: Channel | null;
  changelog?: string | null;
  compatibleWith?: readonly string[] | null;
  dependencies?: readonly Dependency[] | null;
  current?: boolean | null;
}

/**
 * Changes a version's fields (omitted ones are kept). `current: true` pins it as the download's current version
 * (it must be visible); `current: false` unpins, and the current version follows the newest release again.
 */
export async function updateVersion(prisma: PrismaClient, access: Access, team: TeamLookup, input: UpdateVersionInput) {
  const v = await editableVersion(prisma, access, team, input.versionId);
  const now = new Date();
  const data: Prisma.VersionUpdateInput = {};
  if (input.versionString != null) data.versionString = versionStringFor(v.download.category, input.versionString, now);
  if (input.channel != null) data.channel = input.channel;
  if (input.changelog != null) data.changelog = checkChangelog(input.changelog);
  if (input.compatibleWith != null) data.compatibleWith = checkCompatibleWith(input.compatibleWith);
  if (input.dependencies != null) {
    data.dependencies = (await checkDependencies(
      prisma,
      access,
      input.dependencies,
      v.downloadId,
    )) as unknown as object[];
  }
  if (input.current === true && v.state !== 'visible') {
    throw invalidInput('current', 'A deleted version cannot be the current version: restore it first.');
  }
  return prisma.$transaction(async (tx) => {
    await lockDownload(tx, v.downloadId);
    const version = await tx.version.update({ where: { id: v.id }, data });
    if (input.current === true) {
      await tx.download.update({
        where: { id: v.downloadId },
        data: { currentVersionId: v.id, currentVersionPinned: true, lastUpdate: now },
      });
    } else if (input.current === false) {
      await tx.download.update({ where: { id: v.downloadId }, data: { currentVersionPinned: false } });
    }
    await settleCurrentVersion(tx, v.downloadId, now);
    const download = await tx.download.update({ where: { id: v.downloadId }, data: { lastUpdate: now } });
    await recordEvents(tx, [{ type: 'download.updated', objectId: v.downloadId, downloadId: v.downloadId }]);
    return { version, download };
  });
}

export interface DeleteVersionInput {
  versionId: number;
  hard?: boolean | null;
}

/**
 * Soft (state deleted, files kept) or hard (the row, its files and their blobs gone: the mc_dm_download:delete_hard
 * scope and hardDeleteAny). Deleting the current version moves current_version_id to the newest remaining visible
 * release. Answers the storage keys to remove after the commit.
 */
export async function deleteVersion(
  prisma: PrismaClient,
  access: Access,
  team: TeamLookup,
  input: DeleteVersionInput,
): Promise<{ removedBlobs: string[]; download: Download }> {
  const v = await editableVersion(prisma, access, team, input.versionId);
  if (input.hard) {
    requireScopes(access.visitor, ['mc_dm_download:delete_hard']);
    if (!access.canHardDeleteDownload(v.download)) throw noPermission('permanently delete versions of this download');
  }
  const now = new Date();
  return prisma.$transaction(async (tx) => {
    await lockDownload(tx, v.downloadId);
    // Two deletes at once: the second finds the row gone under the lock and answers 404.
    const current = await tx.version.findUnique({ where: { id: v.id } });
    if (!current) throw notFound('version', v.id);
    let removedBlobs: string[] = [];
    if (input.hard) {
      const files = await tx.file.findMany({ where: { versionId: v.id }, select: { storageKey: true } });
      removedBlobs = files.map((f) => f.storageKey).filter((k): k is string => !!k);
      await tx.version.delete({ where: { id: v.id } });
    } else if (current.state !== 'deleted') {
      await tx.version.update({ where: { id: v.id }, data: { state: 'deleted' } });
    }
    const download = await settleCurrentVersion(tx, v.downloadId, now);
    await recordEvents(tx, [{ type: 'download.updated', objectId: v.downloadId, downloadId: v.downloadId }]);
    return { removedBlobs, download };
  });
}

/** A soft-deleted version visible again; the current version follows (a newer release becomes current). */
export async function restoreVersion(prisma: PrismaClient, access: Access, team: TeamLookup, versionId: number) {
  const v = await editableVersion(prisma, access, team, versionId);
  if (v.state !== 'deleted') {
    throw new ApiError('mc_dm_api_error.version_not_deleted', `Version ${versionId} is not deleted.`, {
      version_id: versionId,
    });
  }
  const now = new Date();
  return prisma.$transaction(async (tx) => {
    await lockDownload(tx, v.downloadId);
    const version = await tx.version.update({ where: { id: v.id }, data: { state: 'visible' } });
    const download = await settleCurrentVersion(tx, v.downloadId, now);
    await recordEvents(tx, [{ type: 'download.updated', objectId: v.downloadId, downloadId: v.downloadId }]);
    return { version, download };
  });
}
