// File rules (spec "Files", contract §6): create from an upload or an external URL through the processors,
// list/get visibility, metadata updates with one primary per version, soft and hard delete.
import { LIMITS } from '../../config.js';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import type { Prisma, PrismaClient, File, Version, Download, Category } from '../../generated/prisma/client.js';
import type { Access } from '../../permissions/access.js';
import type { Config } from '../../config.js';
import type { Storage } from '../../files/storage/index.js';
import { requireScopes } from '../../auth/scopes.js';
import { ApiError, invalidInput, noPermission, notFound, requiredMissing } from '../../errors.js';
import { pageWindow, paginationOf, type Direction, type Page, type PageRequest } from '../../db/lists.js';
import { ingest, type Ingested } from '../../files/ingest.js';
import { runProcessors, type Rejection } from '../../files/processors.js';
import { adapterFor, ExternalUrlError, filenameFromUrl, parseExternalUrl } from '../../files/external/index.js';
import { checkProbeAllowance, recordFailedProbe } from '../../files/external/probe-limit.js';
import mime from 'mime-types';
import { isWholeNumberIn, wholeNumberRange } from '../../input/numbers.js';
import { prismaAfter, prismaOrderBy, type KeysetSpec } from '../../db/keyset.js';
import type { Database } from '../../db/database.js';
import type { Slice } from '../../db/slices.js';
import { countFiles, fileById, filePage, fileQueryCovered } from './store.js';
import { recordEvents } from '../../db/outbox.js';

export const FILE_ORDERS = {
  display_order: 'displayOrder',
  file_size: 'fileSize',
  download_count: 'downloadCount',
} as const;
export type FileOrder = keyof typeof FILE_ORDERS;

type VersionWithParents = Version & { download: Download & { category: Category } };
type FileWithParents = File & { version: VersionWithParents };

export interface FileDeps {
  prisma: PrismaClient;
  access: Access;
  storage: Storage;
  config: Config;
  isTeamMember(downloadId: number): Promise<boolean>;
}

/** An uploaded file on its way in: REST has already streamed it to a temporary file, GraphQL streams it here. */
export interface IncomingFile {
  filename: string;
  ingest(tmpDir: string, maxBytes: number): Promise<Ingested>;
}

const MAX_LABEL = LIMITS.maxFileLabel;
const MAX_FILENAME = LIMITS.maxFilename;

async function versionFor(prisma: PrismaClient, id: number): Promise<VersionWithParents> {
  const v = await prisma.version.findUnique({ where: { id }, include: { download: { include: { category: true } } } });
  if (!v) throw notFound('version', id);
  return v;
}

async function canManage(deps: FileDeps, d: Download): Promise<boolean> {
  // Team membership only matters when the visitor may not manage the files without it (it may cost a query).
  return deps.access.canManageFiles(d, false) || deps.access.canManageFiles(d, await deps.isTeamMember(d.id));
}

/**
 * Failed (quarantined) and soft-deleted rows, and the files of a soft-deleted version (when the row carries its
 * version), are shown only to visitors who may manage the download's files.
 */
export async function fileVisibleTo(
  deps: FileDeps,
  f: Pick<File, 'isDeleted' | 'validationStatus'> & { version?: Pick<Version, 'state'> },
  d: Download,
): Promise<boolean> {
  if (!deps.access.canViewDownload(d)) return false;
  if (f.isDeleted || f.validationStatus === 'failed' || f.version?.state === 'deleted') return canManage(deps, d);
  return true;
}

export interface FileListArgs extends PageRequest {
  versionId?: number | null;
  order?: FileOrder | null;
  direction?: Direction | null;
}

/**
 * The rows a file list covers: versionId is required except for super-user keys, the version's download must be
 * viewable (else 403), and soft-deleted files are never listed.
 */
export async function fileListWhere(
  deps: FileDeps,
  args: Pick<FileListArgs, 'versionId'>,
): Promise<Prisma.FileWhereInput> {
  if (args.versionId == null && !deps.access.isSuper) throw requiredMissing(['version_id']);
  const where: Prisma.FileWhereInput = { isDeleted: false };
  if (args.versionId != null) {
    const v = await versionFor(deps.prisma, args.versionId);
    if (!deps.access.canViewDownload(v.download)) throw noPermission("view this download's files");
    where.versionId = v.id;
  }
  return where;
}

/** The order of a page-numbered files list as a keyset spec (ties by id). */
export function fileOrderSpec(
  order: FileOrder | null | undefined,
  direction: Direction | null | undefined,
): KeysetSpec {
  const o = order ?? 'display_order';
  return {
    list: 'files',
    order: o,
    direction: direction ?? 'desc',
    column: { name: FILE_ORDERS[o], kind: o === 'file_size' ? 'bigint' : 'int' },
  };
}

type FileRows = { total: number; rows: (File & { version: Version & { download: Download } })[]; deps: FileDeps };

/**
 * The files of a list (`slice` of them, with the list's total), each with its version and download, after the list's
 * rules (fileListWhere). `deps` comes back knowing the visitor's team membership where the read learnt it: pass it
 * to fileVisibleTo. `query` is what the operation asks to load with each file: the common shapes are read with one
 * hand-written statement (store.ts), others by Prisma.
 */
export async function fileSlice(
  deps: FileDeps & { db: Pick<Database, 'query'> },
  args: Pick<FileListArgs, 'versionId'>,
  slice: Slice,
  query: Omit<Prisma.FileFindManyArgs, 'where' | 'orderBy' | 'skip' | 'take'> = {},
): Promise<FileRows> {
  if (args.versionId == null && !deps.access.isSuper) throw requiredMissing(['version_id']);
  if (fileQueryCovered(query as never)) {
    const page = await filePage(
      deps.db,
      args.versionId != null ? { versionId: args.versionId } : {},
      slice,
      deps.access.visitor.userId,
    );
    if (args.versionId == null) return { ...page, deps };
    if (!page.parent) throw notFound('version', args.versionId);
    if (!deps.access.canViewDownload(page.parent.download)) throw noPermission("view this download's files");
    const downloadId = page.parent.downloadId;
    const isTeamMember = (id: number) =>
      id === downloadId ? Promise.resolve(page.isTeamMember) : deps.isTeamMember(id);
    return { total: page.total, rows: page.rows, deps: { ...deps, isTeamMember } };
  }
  const where = await fileListWhere(deps, args);
  const w = slice.window ?? { size: slice.take, backward: false, cursor: null };
  const withParents = (query as { select?: object }).select
    ? query
    : { ...query, include: { ...(query as { include?: object }).include, version: { include: { download: true } } } };
  const [total, rows] = await Promise.all([
    countFiles(deps.prisma, where),
    deps.prisma.file.findMany({
      ...withParents,
      where: { AND: [where, prismaAfter(slice.spec, w)] },
      orderBy: prismaOrderBy(slice.spec, w) as never,
      skip: slice.skip,
      take: slice.take,
    }) as unknown as Promise<(File & { version: Version & { download: Download } })[]>,
  ]);
  return { total, rows, deps };
}

export async function listFiles(
  deps: FileDeps & { db: Pick<Database, 'query'> },
  args: FileListArgs,
  extra: Omit<Prisma.FileFindManyArgs, 'where' | 'orderBy' | 'skip' | 'take'> = {},
): Promise<Page<File>> {
  const w = pageWindow(args);
  const {
    total,
    rows,
    deps: seen,
  } = await fileSlice(
    deps,
    args,
    { spec: fileOrderSpec(args.order, args.direction), skip: w.skip, take: w.take },
    extra,
  );
  const nodes: File[] = [];
  for (const f of rows) if (await fileVisibleTo(seen, f, f.version.download)) nodes.push(f);
  return { nodes, pagination: paginationOf(w, total) };
}

export async function viewableFile(
  deps: FileDeps,
  id: number,
  extra: Omit<Prisma.FileFindUniqueArgs, 'where'> = {},
): Promise<FileWithParents> {
  const f = (await deps.prisma.file.findUnique({
    ...extra,
    where: { id },
    include: {
      ...(extra as { include?: object }).include,
      version: { include: { download: { include: { category: true } } } },
    },
  })) as unknown as FileWithParents | null;
  return mayViewFile(deps, id, f);
}

/** viewableFile for reads: the common shapes of `query` through one hand-written statement. */
export async function readFile(
  deps: FileDeps & { db: Pick<Database, 'query'> },
  id: number,
  query: Omit<Prisma.FileFindUniqueArgs, 'where'> = {},
): Promise<FileWithParents> {
  if (!fileQueryCovered(query as never)) return viewableFile(deps, id, query);
  const read = await fileById(deps.db, id, deps.access.visitor.userId);
  if (!read) throw notFound('file', id);
  const downloadId = read.file.version.downloadId;
  return mayViewFile(
    { ...deps, isTeamMember: (d) => (d === downloadId ? Promise.resolve(read.isTeamMember) : deps.isTeamMember(d)) },
    id,
    read.file,
  );
}

async function mayViewFile(deps: FileDeps, id: number, f: FileWithParents | null): Promise<FileWithParents> {
  if (!f) throw notFound('file', id);
  if (!deps.access.canViewDownload(f.version.download)) throw noPermission('view this file');
  if (!(await fileVisibleTo(deps, f, f.version.download))) throw notFound('file', id);
  return f;
}

export interface CreateFileInput {
  versionId: number;
  file?: IncomingFile | null;
  externalUrl?: string | null;
  linkOnly?: boolean | null;
  displayLabel?: string | null;
  isPrimary?: boolean | null;
  displayOrder?: number | null;
  /** With externalUrl: keep a `failed` row when the probe fails (default: no row). */
  keepFailed?: boolean | null;
}

function label(raw: string | null | undefined): string {
  const l = (raw ?? '').trim();
  if (l.length > MAX_LABEL)
    throw invalidInput('display_label', `display_label must be at most ${MAX_LABEL} characters.`);
  return l;
}

function uint(field: string, v: number | null | undefined): number {
  if (v == null) return 0;
  if (!isWholeNumberIn(v, 0)) throw invalidInput(field, `${field} must be ${wholeNumberRange(0)}, got ${v}.`);
  return v;
}

const lockVersion = (tx: Prisma.TransactionClient, versionId: number) =>
  tx.$executeRaw`SELECT pg_advisory_xact_lock(72640334, ${versionId}::int)`;
/**
 * The download's row lock: every file added to any version of the download takes it, so the download-wide byte cap
 * is counted by one writer at a time (a version's lock alone would let two versions' uploads pass together). NO KEY
 * UPDATE blocks neither readers nor rows that reference the download. Taken before the version's lock, always.
 */
async function lockDownload(tx: Prisma.TransactionClient, downloadId: number): Promise<void> {
  const rows = await tx.$queryRaw<unknown[]>`SELECT id FROM download WHERE id = ${downloadId}::int FOR NO KEY UPDATE`;
  // A hard delete of the download committed while this upload ran: there is nothing left to add the file to.
  if (rows.length === 0) throw notFound('download', downloadId);
}

async function checkFileCount(db: Prisma.TransactionClient | PrismaClient, v: VersionWithParents): Promise<void> {
  // Rows that failed validation wait in quarantine for moderators; they do not take a place.
  const n = await db.file.count({ where: { versionId: v.id, isDeleted: false, validationStatus: { not: 'failed' } } });
  const max = v.download.category.allowMultiFile ? v.download.category.maxFilesPerVersion : 1;
  if (n >= max) {
    throw new ApiError(
      'mc_dm_api_error.too_many_files',
      v.download.category.allowMultiFile
        ? `This version already holds ${n} file(s), the most its category allows (${max}).`
        : 'This category allows one file per version, and this version has it.',
      { max_files_per_version: max },
    );
  }
}

/** Puts the first file of a version forward as primary; `isPrimary` demotes the previous one. */
async function settlePrimary(
  tx: Prisma.TransactionClient,
  versionId: number,
  fileId: number,
  requested: boolean | null | undefined,
): Promise<void> {
  const current = await tx.file.findFirst({
    where: { versionId, isPrimary: true, isDeleted: false, id: { not: fileId } },
  });
  if (requested || (!current && requested !== false)) {
    if (current)
      await tx.file.updateMany({
        where: { versionId, isPrimary: true, id: { not: fileId } },
        data: { isPrimary: false },
      });
    await tx.file.update({ where: { id: fileId }, data: { isPrimary: true } });
  }
}

async function storedBytes(
  db: Prisma.TransactionClient | PrismaClient,
  v: VersionWithParents,
): Promise<{ version: bigint; download: bigint }> {
  // One statement after another (not Promise.all): inside a transaction they share one connection anyway.
  const inVersion = await db.file.aggregate({
    where: { versionId: v.id, isDeleted: false, validationStatus: { not: 'failed' } },
    _sum: { fileSize: true },
  });
  const inDownload = await db.file.aggregate({
    where: { version: { downloadId: v.downloadId }, isDeleted: false, validationStatus: { not: 'failed' } },
    _sum: { fileSize: true },
  });
  return { version: inVersion._sum.fileSize ?? 0n, download: inDownload._sum.fileSize ?? 0n };
}

/**
 * The version and download byte caps, counted again under the download's lock: the processors counted before the
 * bytes arrived, and an upload that finished meanwhile may have taken the room. Refused with nothing kept.
 */
async function checkRoom(tx: Prisma.TransactionClient, v: VersionWithParents, size: bigint): Promise<void> {
  const used = await storedBytes(tx, v);
  const { maxVersionSize, maxDownloadSize } = v.download.category;
  const reason =
    used.version + size > maxVersionSize
      ? `The version would hold ${used.version + size} bytes; this category allows at most ${maxVersionSize} bytes per version.`
      : used.download + size > maxDownloadSize
        ? `The download would hold ${used.download + size} bytes; this category allows at most ${maxDownloadSize} bytes per download.`
        : null;
  if (reason)
    throw new ApiError('mc_dm_api_error.processor_rejected', `The file was rejected by the size check: ${reason}`, {
      processor: 'size',
      reason,
    });
}

/**
 * The checks an upload must pass before a byte of it is stored: the version exists, the visitor may manage its
 * files, and the version has room for one more. createFile runs them again (and the count and the byte caps once
 * more under the download's lock); the REST adapter runs them as soon as the fields before the file part have arrived.
 */
export async function checkUploadTarget(deps: FileDeps, versionId: number): Promise<VersionWithParents> {
  const v = await versionFor(deps.prisma, versionId);
  if (!deps.access.canViewDownload(v.download) || !(await canManage(deps, v.download)))
    throw noPermission('manage the files of this download');
  await checkFileCount(deps.prisma, v);
  return v;
}

/**
 * Creates a file: checks, then streams the bytes (upload or probed URL) through the processors into storage.
 * A processor's rejection keeps a `failed` row with its blob in quarantine and answers 422 processor_rejected.
 */
export async function createFile(deps: FileDeps, input: CreateFileInput): Promise<File> {
  const { prisma, storage, config } = deps;
  const v = await versionFor(prisma, input.versionId);
  if (!deps.access.canViewDownload(v.download) || !(await canManage(deps, v.download)))
    throw noPermission('manage the files of this download');
  const url = input.externalUrl?.trim() ? input.externalUrl.trim() : null;
  if (input.file && url)
    throw new ApiError('mc_dm_api_error.upload_exclusive', 'Send either a file or an external_url, not both.');
  if (!input.file && !url)
    throw new ApiError('mc_dm_api_error.upload_required', 'Send a file (multipart) or an external_url.');
  const meta = { displayLabel: label(input.displayLabel), displayOrder: uint('display_order', input.displayOrder) };
  await checkFileCount(prisma, v);

  if (url && input.linkOnly) {
    const parsed = parseOrForbid(url);
    return insertFile(deps, v, input.isPrimary, {
      ...meta,
      filename: safeFilename(filenameFromUrl(parsed)),
      externalUrl: parsed.toString(),
      isExternallyLinked: true,
      isLinkOnly: true,
      externalSourceType: adapterFor(parsed).id,
      validationStatus: 'skipped',
      mimeType: mime.lookup(parsed.pathname) || 'application/octet-stream',
    });
  }

  let filename: string;
  let ingested: Ingested;
  let external: Partial<Prisma.FileUncheckedCreateInput> = {};
  if (url) {
    const parsed = parseOrForbid(url);
    const adapter = adapterFor(parsed);
    const keyId = deps.access.visitor.apiKeyId;
    await checkProbeAllowance(config, keyId);
    external = {
      externalUrl: parsed.toString(),
      isExternallyLinked: true,
      externalSourceType: adapter.id,
      validationAttempts: 1,
      lastAttemptDate: new Date(),
    };
    try {
      const fetched = await adapter.fetch(parsed, {
        allowPrivate: config.externalUrlAllowPrivate,
        timeoutMs: 10_000,
        maxRedirects: 5,
        idleMs: config.externalUrlIdleSeconds * 1000,
        deadlineMs: config.externalUrlDeadlineSeconds * 1000,
      });
      filename = safeFilename(fetched.filename);
      ingested = await ingest(fetched.body, storage.tmpDir, config.maxUploadBytes, 'external_url');
    } catch (err) {
      if (err instanceof ExternalUrlError && err.kind === 'forbidden') throw forbidden(err.message);
      if (err instanceof ApiError) throw err; // over the server limit
      const reason = err instanceof Error ? err.message : String(err);
      await recordFailedProbe(config, keyId);
      // A failed probe leaves nothing behind unless the caller asks for the row (to see it re-checked later).
      if (input.keepFailed) {
        await insertFile(deps, v, false, {
          ...meta,
          ...external,
          filename: safeFilename(filenameFromUrl(parsed)),
          validationStatus: 'failed',
          validationError: reason,
          isAvailable: false,
        });
      }
      throw new ApiError('mc_dm_api_error.external_url_unreachable', `The URL could not be fetched: ${reason}`, {
        url: parsed.toString(),
        reason,
      });
    }
  } else {
    filename = safeFilename(input.file!.filename);
    ingested = await input.file!.ingest(storage.tmpDir, config.maxUploadBytes);
  }

  try {
    const used = await storedBytes(prisma, v);
    const outcome = await runProcessors({
      filename,
      ingested,
      limits: v.download.category,
      versionBytes: used.version,
      downloadBytes: used.download,
    });
    const common = {
      ...meta,
      validationAttempts: 1,
      lastAttemptDate: new Date(),
      ...external,
      filename,
      fileSize: BigInt(ingested.size),
      fileHash: ingested.hash,
      sha1: ingested.sha1,
      sha512: ingested.sha512,
      mimeType: outcome.mimeType,
    };
    if (outcome.rejection) return await reject(deps, v, ingested, common, outcome.rejection);
    const key = `blobs/${v.downloadId}/${v.id}/${crypto.randomUUID()}`;
    await storage.put(key, ingested.tmpPath);
    try {
      return await insertFile(deps, v, input.isPrimary, { ...common, storageKey: key, validationStatus: 'passed' });
    } catch (err) {
      await storage.remove([key]);
      throw err;
    }
  } finally {
    await fs.rm(ingested.tmpPath, { force: true });
  }
}

function parseOrForbid(url: string): URL {
  try {
    return parseExternalUrl(url);
  } catch (err) {
    throw forbidden((err as Error).message);
  }
}

const forbidden = (reason: string) =>
  new ApiError('mc_dm_api_error.external_url_forbidden', `This URL cannot be used: ${reason}`, { reason });

/** A name safe to store and to send back in Content-Disposition. */
export function safeFilename(raw: string): string {
  const base = raw.split(/[\\/]/).pop() ?? '';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is stripped from filenames
  let clean = base.replace(/[\0-\x1f\x7f"]/g, '').trim();
  if (clean.length > MAX_FILENAME) {
    const ext = /\.[^.]{1,16}$/.exec(clean)?.[0] ?? '';
    clean = clean.slice(0, MAX_FILENAME - ext.length) + ext;
  }
  return clean || 'file';
}

async function reject(
  deps: FileDeps,
  v: VersionWithParents,
  ingested: Ingested,
  common: Partial<Prisma.FileUncheckedCreateInput>,
  r: Rejection,
): Promise<never> {
  const key = `quarantine/${v.downloadId}/${v.id}/${crypto.randomUUID()}`;
  await deps.storage.put(key, ingested.tmpPath);
  let row: File;
  try {
    row = await insertFile(deps, v, false, {
      ...common,
      filename: common.filename!,
      storageKey: key,
      isQuarantined: true,
      isAvailable: false,
      validationStatus: 'failed',
      validationError: `${r.processor}: ${r.reason}`,
      validationAttempts: (common.validationAttempts as number | undefined) ?? 1,
      lastAttemptDate: new Date(),
    });
  } catch (err) {
    await deps.storage.remove([key]); // no row (the download went meanwhile): no quarantined blob either
    throw err;
  }
  throw new ApiError(
    'mc_dm_api_error.processor_rejected',
    `The file was rejected by the ${r.processor} check: ${r.reason}`,
    { processor: r.processor, reason: r.reason, file_id: row.id },
  );
}

async function insertFile(
  deps: FileDeps,
  v: VersionWithParents,
  isPrimary: boolean | null | undefined,
  data: Omit<Prisma.FileUncheckedCreateInput, 'versionId'>,
): Promise<File> {
  return deps.prisma.$transaction(async (tx) => {
    // The caps are decided here, after the locks and before the row is committed; a refusal rolls back, and
    // createFile removes the blob it stored and the temporary file. Failed rows take no room and skip them.
    await lockDownload(tx, v.downloadId);
    await lockVersion(tx, v.id);
    if (data.validationStatus !== 'failed') {
      await checkFileCount(tx, v);
      if (data.fileSize != null) await checkRoom(tx, v, BigInt(data.fileSize));
    }
    const f = await tx.file.create({ data: { ...data, versionId: v.id, isPrimary: false } });
    if (data.validationStatus !== 'failed') {
      await settlePrimary(tx, v.id, f.id, isPrimary);
      await tx.download.update({ where: { id: v.downloadId }, data: { lastUpdate: new Date() } });
    }
    // A file whose checks ran (passed or failed) is also validated; a link kept unchecked (skipped) only added.
    const checked = data.validationStatus === 'passed' || data.validationStatus === 'failed';
    await recordEvents(tx, [
      { type: 'file.added', objectId: f.id, downloadId: v.downloadId },
      ...(checked ? [{ type: 'file.validated' as const, objectId: f.id, downloadId: v.downloadId }] : []),
    ]);
    return tx.file.findUniqueOrThrow({ where: { id: f.id } });
  });
}

export interface UpdateFileInput {
  fileId: number;
  displayLabel?: string | null;
  isPrimary?: boolean | null;
  displayOrder?: number | null;
}

export async function updateFile(deps: FileDeps, input: UpdateFileInput): Promise<File> {
  const f = await viewableFile(deps, input.fileId);
  if (!(await canManage(deps, f.version.download))) throw noPermission('manage the files of this download');
  if (f.isDeleted) throw notFound('file', f.id);
  const data: Prisma.FileUpdateInput = {};
  if (input.displayLabel != null) data.displayLabel = label(input.displayLabel);
  if (input.displayOrder != null) data.displayOrder = uint('display_order', input.displayOrder);
  if (input.isPrimary != null && input.isPrimary !== f.isPrimary) {
    if (input.isPrimary && f.validationStatus === 'failed')
      throw invalidInput('is_primary', 'A file that failed validation cannot be the primary file.');
    if (!input.isPrimary) data.isPrimary = false;
  }
  return deps.prisma.$transaction(async (tx) => {
    await lockVersion(tx, f.versionId);
    // A hard delete may have won the lock first: the file is gone, not a server error.
    const current = await tx.file.findUnique({ where: { id: f.id } });
    if (!current || current.isDeleted) throw notFound('file', f.id);
    if (Object.keys(data).length) await tx.file.update({ where: { id: f.id }, data });
    if (input.isPrimary && !current.isPrimary) {
      await tx.file.updateMany({
        where: { versionId: f.versionId, isPrimary: true, id: { not: f.id } },
        data: { isPrimary: false },
      });
      await tx.file.update({ where: { id: f.id }, data: { isPrimary: true } });
    }
    return tx.file.findUniqueOrThrow({ where: { id: f.id } });
  });
}

export interface DeleteFileInput {
  fileId: number;
  hard?: boolean | null;
}

/** Soft: is_deleted=1, blob kept, no re-promotion. Hard: row and blob gone; the next file by display_order becomes primary. */
export async function deleteFile(deps: FileDeps, input: DeleteFileInput): Promise<{ removedBlobs: string[] }> {
  const f = await viewableFile(deps, input.fileId);
  const d = f.version.download;
  if (!(await canManage(deps, d))) throw noPermission('manage the files of this download');
  if (!input.hard) {
    // updateMany: a hard delete that got there first leaves nothing to mark, and that is no error.
    if (!f.isDeleted)
      await deps.prisma.file.updateMany({
        where: { id: f.id, isDeleted: false },
        data: { isDeleted: true, deletedAt: new Date() },
      });
    return { removedBlobs: [] };
  }
  requireScopes(deps.access.visitor, ['mc_dm_download:delete_hard']);
  if (!deps.access.canHardDeleteDownload(d)) throw noPermission('permanently delete files of this download');
  await deps.prisma.$transaction(async (tx) => {
    await lockVersion(tx, f.versionId);
    // Two deletes at once: the second finds the row gone under the lock and answers 404, not a server error.
    const current = await tx.file.findUnique({ where: { id: f.id } });
    if (!current) throw notFound('file', f.id);
    await tx.file.delete({ where: { id: f.id } });
    if (current.isPrimary && !current.isDeleted) {
      const next = await tx.file.findFirst({
        where: { versionId: f.versionId, isDeleted: false, validationStatus: { not: 'failed' } },
        orderBy: [{ displayOrder: 'asc' }, { id: 'asc' }],
      });
      if (next) await tx.file.update({ where: { id: next.id }, data: { isPrimary: true } });
    }
  });
  return { removedBlobs: f.storageKey ? [f.storageKey] : [] };
}

/**
 * The file whose bytes (or link) a visitor asks for, once every rule that lets them have it holds: the file exists and
 * is not deleted, the visitor may view its download and download from it, and it passed validation.
 */
export async function fileToServe(db: Pick<Database, 'query'>, access: Access, id: number) {
  // One hand-written statement (the file, its version and download): Prisma's query compiler cost more CPU than the
  // rest of serving a counted download (1.3-1.6 ms against 0.1 ms for the statement, bench/README.md).
  const f = (await fileById(db, id, access.visitor.userId))?.file;
  if (!f || f.isDeleted) throw notFound('file', id);
  const d = f.version.download;
  if (!access.canViewDownload(d)) throw noPermission('view this file');
  // A soft-deleted version's files are served only to those who may manage them (as they are shown).
  if (f.version.state === 'deleted' && !access.canManageFiles(d)) throw notFound('file', id);
  if (!access.canDownload(d)) throw noPermission('download this file');
  if (f.validationStatus === 'failed' || f.isQuarantined) {
    throw new ApiError(
      'mc_dm_api_error.file_not_available',
      'This file failed validation and is held for moderators.',
      {
        file_id: id,
      },
    );
  }
  return f;
}

/**
 * One download of a file, counted on the file, its version and its download together, and in today's (UTC) row of
 * the download's daily statistics: one statement (atomic on its own), so a counted download costs one round trip
 * and holds no transaction open between statements. The rows are updated in the same order by every count.
 */
export async function countFileDownload(
  db: Pick<Database, 'query'>,
  f: { id: number; versionId: number; version: { downloadId: number } },
): Promise<void> {
  await db.query(COUNT_FILE_DOWNLOAD, [f.id, f.versionId, f.version.downloadId]);
}

/**
 * The counts, and the read cache's version bumps they make (src/db/cache-versions.ts): the statement writes the rows
 * its tables' version triggers would write for a change of counters only ("<table>#counts", for the table and for
 * the download; the download's also for its category, as -id), and marks itself (dcs.counted: its own
 * statement_timestamp() and one entry per trigger it fires) so that those triggers skip their comparison of the rows before and after, two thirds of
 * the statement's time in the server (migration 20270201000000_counted_download_bumps). A table whose row was not
 * there to count (a file deleted meanwhile) bumps nothing, as its trigger would not.
 *
 * The rows are locked in the order the main query first reads its sub-statements (a sub-statement no one reads runs
 * at the end): the download, today's statistics, the file, the version. Every count must take them in one order, or
 * two counts of one file wait on each other's rows (they did, for 20 s, when the file and version came first here and
 * last in the statement of the release before, both counting on one database as during a rolling upgrade).
 */
const COUNT_FILE_DOWNLOAD = `WITH "m" AS (SELECT set_config('dcs.counted', statement_timestamp()::text
      || '|download|download_daily_stats|download_daily_stats|file|version|', true) AS "at"),
    "f" AS (UPDATE "file" SET "downloadCount" = "downloadCount" + 1
      WHERE "id" = $1::int AND (SELECT "at" FROM "m") IS NOT NULL RETURNING "versionId"),
    "v" AS (UPDATE "version" SET "downloadCount" = "downloadCount" + 1
      WHERE "id" = $2::int AND (SELECT "at" FROM "m") IS NOT NULL RETURNING "downloadId"),
    "d" AS (UPDATE "download" SET "downloadCount" = "downloadCount" + 1
      WHERE "id" = $3::int AND (SELECT "at" FROM "m") IS NOT NULL RETURNING "id", "categoryId"),
    "s" AS (INSERT INTO "download_daily_stats" ("downloadId", "day", "downloads")
      SELECT $3::int, (now() AT TIME ZONE 'UTC')::date, 1 FROM "d"
      ON CONFLICT ("downloadId", "day") DO UPDATE SET "downloads" = "download_daily_stats"."downloads" + 1
      RETURNING 1)
  INSERT INTO "cache_bumps" ("table_name", "download_id")
  SELECT 'download#counts', NULL::int FROM "d"
  UNION ALL SELECT 'download#counts', "id" FROM "d"
  UNION ALL SELECT 'download#counts', -"categoryId" FROM "d"
  UNION ALL SELECT 'download_daily_stats#counts', NULL FROM "s"
  UNION ALL SELECT 'file#counts', NULL FROM "f"
  UNION ALL SELECT 'file#counts', COALESCE((SELECT v."downloadId" FROM "version" v WHERE v."id" = f."versionId"), 0)
    FROM "f" f
  UNION ALL SELECT 'version#counts', NULL FROM "v"
  UNION ALL SELECT 'version#counts', "downloadId" FROM "v"`;

// ───────────── lookup by hash

const HASH_LENGTHS = { sha1: 40, sha256: 64, sha512: 128 } as const;
type HashAlgorithm = keyof typeof HASH_LENGTHS;

/** `<algo>:<hex>` checked and lower-cased; anything else answers invalid_input naming the value. */
export function parseFileHash(raw: string, field = 'hash'): { algorithm: HashAlgorithm; value: string } {
  const m = /^(sha1|sha256|sha512):([0-9a-fA-F]+)$/.exec(raw.trim());
  const algorithm = m?.[1] as HashAlgorithm | undefined;
  if (!m || !algorithm || m[2]!.length !== HASH_LENGTHS[algorithm]) {
    throw invalidInput(
      field,
      `${field} must be sha1:<40 hex digits>, sha256:<64 hex digits> or sha512:<128 hex digits>, got "${raw.slice(0, 140)}".`,
    );
  }
  return { algorithm, value: `${algorithm}:${m[2]!.toLowerCase()}` };
}

/**
 * The files whose SHA-1, SHA-256 or SHA-512 is one of `hashes` and that the visitor may view, each with its version
 * and download, newest first; at most LIMITS.maxHashes of them. Unknown hashes are simply absent.
 */
export async function filesByHash(
  deps: FileDeps,
  hashes: readonly string[],
  extra: Omit<Prisma.FileFindManyArgs, 'where' | 'orderBy' | 'take'> = {},
): Promise<FileWithParents[]> {
  if (hashes.length === 0) throw requiredMissing(['hash']);
  if (hashes.length > LIMITS.maxHashes) {
    throw invalidInput('hash', `At most ${LIMITS.maxHashes} hashes per lookup, got ${hashes.length}.`);
  }
  const wanted: Record<HashAlgorithm, string[]> = { sha1: [], sha256: [], sha512: [] };
  for (const raw of hashes) {
    const h = parseFileHash(raw);
    wanted[h.algorithm].push(h.value);
  }
  const or: Prisma.FileWhereInput[] = [];
  if (wanted.sha1.length) or.push({ sha1: { in: wanted.sha1 } });
  if (wanted.sha256.length) or.push({ fileHash: { in: wanted.sha256 } });
  if (wanted.sha512.length) or.push({ sha512: { in: wanted.sha512 } });
  const rows = (await deps.prisma.file.findMany({
    ...extra,
    where: { isDeleted: false, OR: or },
    include: {
      ...(extra as { include?: object }).include,
      version: { include: { download: { include: { category: true } } } },
    },
    orderBy: { id: 'desc' },
    // Files the visitor may not view are dropped after the read: read a margin more, so they rarely shorten the answer.
    take: LIMITS.maxHashes * 2,
  })) as unknown as FileWithParents[];
  const visible: FileWithParents[] = [];
  for (const f of rows) {
    if (visible.length === LIMITS.maxHashes) break;
    if (await fileVisibleTo(deps, f, f.version.download)) visible.push(f);
  }
  return visible;
}

/** One page (`page`, `perPage`) of rows already read whole, such as the answer of a lookup by hash. */
export function pageOf<T>(rows: T[], args: PageRequest): Page<T> {
  const w = pageWindow(args);
  return { nodes: rows.slice(w.skip, w.skip + w.take), pagination: paginationOf(w, rows.length) };
}
