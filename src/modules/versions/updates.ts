// The update check (contract "Releases"): for each hash a launcher holds, the version its file belongs to and the
// newest version of the same download that matches the launcher's channel and compatibility. Three statements
// whatever the number of hashes: the files, the newest version id per download, those versions.
import type { Prisma, Download, File, PrismaClient, Version } from '../../generated/prisma/client.js';
import { LIMITS } from '../../config.js';
import { invalidInput, requiredMissing } from '../../errors.js';
import { fileVisibleTo, parseFileHash, type FileDeps } from '../files/index.js';
import { CHANNELS, checkCompatibleWith, type Channel } from './rules.js';

export interface UpdateCheck {
  hash: string;
  current: Version;
  latest: Version | null;
}

export interface UpdateCheckArgs {
  hashes: readonly string[];
  channel?: Channel | null;
  compatibleWith?: readonly string[] | null;
}

/** The channels a launcher on `channel` takes: that one and the more stable ones (none given: every channel). */
export function channelsFrom(channel: Channel | null | undefined): Channel[] {
  if (!channel) return [...CHANNELS];
  return CHANNELS.slice(0, CHANNELS.indexOf(channel) + 1);
}

type FileRow = File & { version: Version & { download: Download } };

/**
 * One entry per known hash (in the order sent, repeats once), for files the visitor may view whose version is
 * visible (or, deleted, to visitors who may edit it). Unknown hashes are absent; `latest` is null when no visible
 * version of the download matches the filters.
 */
export async function checkUpdates(
  deps: Pick<FileDeps, 'prisma' | 'access' | 'isTeamMember'>,
  args: UpdateCheckArgs,
): Promise<UpdateCheck[]> {
  const { prisma } = deps;
  if (args.hashes.length === 0) throw requiredMissing(['hashes']);
  if (args.hashes.length > LIMITS.maxUpdateHashes) {
    throw invalidInput(
      'hashes',
      `At most ${LIMITS.maxUpdateHashes} hashes per update check, got ${args.hashes.length}.`,
    );
  }
  const compat = checkCompatibleWith(args.compatibleWith ?? []);
  const wanted = new Map<string, { raw: string; algorithm: 'sha1' | 'sha256' | 'sha512' }>();
  for (const raw of args.hashes) {
    const h = parseFileHash(raw, 'hashes');
    if (!wanted.has(h.value)) wanted.set(h.value, { raw: raw.trim(), algorithm: h.algorithm });
  }
  const of = (a: string) => [...wanted].filter(([, w]) => w.algorithm === a).map(([v]) => v);
  const or: Prisma.FileWhereInput[] = [];
  if (of('sha1').length) or.push({ sha1: { in: of('sha1') } });
  if (of('sha256').length) or.push({ fileHash: { in: of('sha256') } });
  if (of('sha512').length) or.push({ sha512: { in: of('sha512') } });
  // Only what the rules read: the hashes and the file's state, its version whole (the answer's `current`), and the
  // download's permission columns (a download row carries its description: read 500 of them and the check doubles).
  const files = (await prisma.file.findMany({
    where: { isDeleted: false, OR: or },
    select: {
      id: true,
      fileHash: true,
      sha1: true,
      sha512: true,
      isDeleted: true,
      validationStatus: true,
      versionId: true,
      version: { include: { download: { select: { id: true, categoryId: true, userId: true, state: true } } } },
    },
    orderBy: { id: 'desc' },
  })) as unknown as FileRow[];

  // Each hash names the newest file with it that the visitor may view.
  const byHash = new Map<string, FileRow>();
  for (const f of files) {
    for (const h of [f.fileHash, f.sha1, f.sha512]) {
      if (!h || !wanted.has(h) || byHash.has(h)) continue;
      if (!(await fileVisibleTo(deps as FileDeps, f, f.version.download))) continue;
      if (f.version.state !== 'visible' && !(await canEdit(deps, f.version.download))) continue;
      byHash.set(h, f);
    }
  }
  const downloadIds = [...new Set([...byHash.values()].map((f) => f.version.downloadId))];
  const latest = await newestVersions(prisma, downloadIds, channelsFrom(args.channel), compat);
  const out: UpdateCheck[] = [];
  for (const [value, w] of wanted) {
    const f = byHash.get(value);
    if (!f) continue;
    const { download: _d, ...current } = f.version;
    out.push({ hash: w.raw, current, latest: latest.get(f.version.downloadId) ?? null });
  }
  return out;
}

async function canEdit(deps: Pick<FileDeps, 'access' | 'isTeamMember'>, d: Download): Promise<boolean> {
  return deps.access.canEditDownload(d, false) || deps.access.canEditDownload(d, await deps.isTeamMember(d.id));
}

/**
 * The newest visible version (release date, then id) of each download among `channels` listing every entry of
 * `compat`, by download id. One statement picks the ids (DISTINCT ON, served by the download/release-date index),
 * one reads the rows.
 */
export async function newestVersions(
  prisma: PrismaClient,
  downloadIds: readonly number[],
  channels: readonly Channel[],
  compat: readonly string[],
): Promise<Map<number, Version>> {
  if (downloadIds.length === 0) return new Map();
  const ids = await prisma.$queryRaw<{ id: number }[]>`
    SELECT DISTINCT ON (v."downloadId") v.id
    FROM version v
    WHERE v."downloadId" = ANY(${[...downloadIds]}::int[])
      AND v.state = 'visible'
      AND v.channel::text = ANY(${[...channels]}::text[])
      AND v."compatibleWith" @> ${[...compat]}::text[]
    ORDER BY v."downloadId", v."releaseDate" DESC, v.id DESC`;
  if (ids.length === 0) return new Map();
  const rows = await prisma.version.findMany({ where: { id: { in: ids.map((r) => r.id) } } });
  return new Map(rows.map((v) => [v.downloadId, v]));
}
