// The update check (contract "Releases"): for each hash a launcher holds, the version its file belongs to and the
// newest version of the same download that matches the launcher's channel and compatibility. One hand-written
// statement whatever the number of hashes (store.ts updateCheck): the files with their versions and
// downloads' permission columns, and the newest matching version of each of those downloads.
import type { Download, Version } from '../../generated/prisma/client.js';
import type { Database } from '../../db/database.js';
import { LIMITS } from '../../config.js';
import { invalidInput, requiredMissing } from '../../errors.js';
import { fileVisibleTo, parseFileHash, type FileDeps } from '../files/index.js';
import { CHANNELS, checkCompatibleWith, type Channel } from './rules.js';
import { updateCheck, type UpdateCheckFile } from './store.js';

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

type FileRow = UpdateCheckFile;

/**
 * One entry per known hash (in the order sent, repeats once), for files the visitor may view whose version is
 * visible (or, deleted, to visitors who may edit it). Unknown hashes are absent; `latest` is null when no visible
 * version of the download matches the filters.
 */
export async function checkUpdates(
  deps: Pick<FileDeps, 'prisma' | 'access' | 'isTeamMember'> & { db: Pick<Database, 'query'> },
  args: UpdateCheckArgs,
): Promise<UpdateCheck[]> {
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
  const { files, latest } = await updateCheck(
    deps.db,
    { sha1: of('sha1'), sha256: of('sha256'), sha512: of('sha512') },
    channelsFrom(args.channel),
    compat,
  );
  const newest = new Map(latest.map((v) => [v.downloadId, v]));

  // Each hash names the newest file with it that the visitor may view (the rows come newest first).
  const byHash = new Map<string, FileRow>();
  const fileDeps = deps as Pick<FileDeps, 'prisma' | 'access' | 'isTeamMember'> as FileDeps;
  for (const f of files) {
    const h = f.matched;
    if (byHash.has(h)) continue;
    const d = f.version.download;
    if (!deps.access.canViewDownload(d)) continue;
    // A quarantined file or a deleted version asks whether the visitor may manage the files (it may cost a query);
    // the rows carry no deleted file (the statement leaves them out).
    const hidden = f.validationStatus === 'failed' || f.version.state === 'deleted';
    if (hidden && !(await fileVisibleTo(fileDeps, f, d))) continue;
    if (f.version.state !== 'visible' && !(await canEdit(deps, d))) continue;
    byHash.set(h, f);
  }
  const out: UpdateCheck[] = [];
  for (const [value, w] of wanted) {
    const f = byHash.get(value);
    if (!f) continue;
    const { download: _d, ...current } = f.version;
    out.push({ hash: w.raw, current, latest: newest.get(f.version.downloadId) ?? null });
  }
  return out;
}

async function canEdit(deps: Pick<FileDeps, 'access' | 'isTeamMember'>, d: Download): Promise<boolean> {
  return deps.access.canEditDownload(d, false) || deps.access.canEditDownload(d, await deps.isTeamMember(d.id));
}
