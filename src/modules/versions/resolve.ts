// Dependency resolution (contract "Releases"): the versions a version needs, transitively, each the best version of
// its download that matches every range met so far, with conflicts and cycles reported. Breadth first, one level at a
// time (one hand-written statement per level for the candidate versions of every download the level names and
// those downloads' permission columns: store.ts resolutionCandidates), bounded by
// LIMITS.maxResolveDepth levels and LIMITS.maxResolvedVersions versions; a download is resolved once, so it never loops.
import type { Version } from '../../generated/prisma/client.js';
import type { Database } from '../../db/database.js';
import type { Access } from '../../permissions/access.js';
import { LIMITS } from '../../config.js';
import { CHANNELS, dependenciesOf, newestFirst, satisfies, type Dependency } from './rules.js';
import { resolutionCandidates } from './store.js';

export type ConflictReason =
  | 'unsatisfiable'
  | 'unavailable'
  | 'version_conflict'
  | 'incompatible'
  | 'depth_limit'
  | 'size_limit';

export interface DependencyConflict {
  /** The version whose dependency could not be met. */
  versionId: number;
  downloadId: number;
  versionRange: string;
  reason: ConflictReason;
}

export interface DependencyResolution {
  versions: Version[];
  conflicts: DependencyConflict[];
  cycles: number[][];
}

type Candidate = Version;

/** Releases before betas before alphas; newest first within a channel. */
function preferred(a: Version, b: Version): number {
  return CHANNELS.indexOf(a.channel) - CHANNELS.indexOf(b.channel) || newestFirst(a, b);
}

/**
 * Resolves `root`'s dependencies for a visitor. REQUIRED dependencies are followed; OPTIONAL and EMBEDDED ones are
 * not; INCOMPATIBLE ones are conflicts when the resolved set (root included) holds a version in their range. For each
 * download the chosen version is the preferred (release first, then newest) visible version the visitor may
 * download that satisfies the range and lists every `compatibleWith` value. A later range the chosen version does
 * not satisfy is a `version_conflict`; a required edge back to a version on its own path is a cycle (reported as the
 * version ids from the one depended on down to the one depending on it).
 */
export async function resolveDependencies(
  db: Pick<Database, 'query'>,
  access: Access,
  root: Version,
  compatibleWith: readonly string[],
): Promise<DependencyResolution> {
  const chosen = new Map<number, Version>([[root.downloadId, root]]);
  const parent = new Map<number, number | null>([[root.id, null]]);
  const versions: Version[] = [];
  const conflicts: DependencyConflict[] = [];
  const cycles: number[][] = [];
  const incompatible: { from: Version; dep: Dependency }[] = [];
  const conflict = (c: DependencyConflict) => {
    if (conflicts.length < LIMITS.maxResolveConflicts) conflicts.push(c);
  };
  const unavailable = new Set<number>();
  let level: Version[] = [root];
  let full = false;
  for (let depth = 1; level.length > 0; depth++) {
    const edges = level.flatMap((from) => dependenciesOf(from).map((dep) => ({ from, dep })));
    for (const e of edges) if (e.dep.kind === 'incompatible') incompatible.push(e);
    const required = edges.filter((e) => e.dep.kind === 'required');
    if (required.length === 0) break;
    if (depth > LIMITS.maxResolveDepth) {
      for (const { from, dep } of required) {
        if (!chosen.has(dep.downloadId)) conflict({ versionId: from.id, ...depOf(dep), reason: 'depth_limit' });
      }
      break;
    }
    const wanted = [...new Set(required.map((e) => e.dep.downloadId).filter((id) => !chosen.has(id)))];
    const { candidates, downloads } = await candidatesOf(db, wanted, compatibleWith);
    const downloadOf = new Map(downloads.map((d) => [d.id, d]));
    const next: Version[] = [];
    for (const { from, dep } of required) {
      const have = chosen.get(dep.downloadId);
      if (have) {
        if (!satisfies(have.versionString, dep.versionRange)) {
          conflict({ versionId: from.id, ...depOf(dep), reason: 'version_conflict' });
        } else {
          const path = pathTo(parent, from.id);
          const at = path.indexOf(have.id);
          if (at >= 0 && cycles.length < LIMITS.maxResolveCycles) cycles.push(path.slice(at));
        }
        continue;
      }
      if (unavailable.has(dep.downloadId)) {
        conflict({ versionId: from.id, ...depOf(dep), reason: 'unavailable' });
        continue;
      }
      const rows = candidates.get(dep.downloadId) ?? [];
      const d = downloadOf.get(dep.downloadId);
      // Gone, or one the visitor may not view or download from: the same answer (nothing about it leaks).
      if (!d || !access.canDownload(d)) {
        unavailable.add(dep.downloadId);
        conflict({ versionId: from.id, ...depOf(dep), reason: 'unavailable' });
        continue;
      }
      // Every range on this download met at this level, so that two dependents asking at once get a common version.
      const ranges = required.filter((e) => e.dep.downloadId === dep.downloadId).map((e) => e.dep.versionRange);
      const pick =
        rows.find((v) => ranges.every((r) => satisfies(v.versionString, r))) ??
        rows.find((v) => satisfies(v.versionString, dep.versionRange));
      if (!pick) {
        conflict({ versionId: from.id, ...depOf(dep), reason: 'unsatisfiable' });
        continue;
      }
      if (versions.length >= LIMITS.maxResolvedVersions) {
        full = true;
        conflict({ versionId: from.id, ...depOf(dep), reason: 'size_limit' });
        continue;
      }
      const version = pick;
      chosen.set(dep.downloadId, version);
      parent.set(version.id, from.id);
      versions.push(version);
      next.push(version);
    }
    if (full) break;
    level = next;
  }
  for (const { from, dep } of incompatible) {
    const have = chosen.get(dep.downloadId);
    if (have && satisfies(have.versionString, dep.versionRange)) {
      conflict({ versionId: from.id, ...depOf(dep), reason: 'incompatible' });
    }
  }
  return { versions, conflicts, cycles };
}

const depOf = (d: Dependency) => ({ downloadId: d.downloadId, versionRange: d.versionRange });

/** The version ids from the root down to `id`. */
function pathTo(parent: Map<number, number | null>, id: number): number[] {
  const path: number[] = [];
  for (let at: number | null | undefined = id; at != null; at = parent.get(at)) path.unshift(at);
  return path;
}

/**
 * The visible versions of each download listing every `compatibleWith` value, preferred first, and the downloads.
 */
async function candidatesOf(
  db: Pick<Database, 'query'>,
  downloadIds: readonly number[],
  compatibleWith: readonly string[],
) {
  const { versions, downloads } = await resolutionCandidates(db, downloadIds, compatibleWith);
  const candidates = new Map<number, Candidate[]>();
  for (const v of versions.sort(preferred)) {
    const list = candidates.get(v.downloadId) ?? [];
    list.push(v);
    candidates.set(v.downloadId, list);
  }
  return { candidates, downloads };
}
