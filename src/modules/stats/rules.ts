// Daily statistics of a download: the range a read covers, checked, and who may read them. Plain functions.
import { LIMITS } from '../../config.js';
import { invalidInput, noPermission } from '../../errors.js';
import type { Download } from '../../generated/prisma/client.js';
import type { Access } from '../../permissions/access.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A YYYY-MM-DD day as a UTC midnight in ms, or invalid_input naming `field` (a malformed or impossible day). */
export function parseDay(raw: string, field: string): number {
  const m = DAY.exec(raw);
  const ms = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : Number.NaN;
  if (!m || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== raw) {
    throw invalidInput(field, `${field} must be a day written YYYY-MM-DD, got "${raw.slice(0, 40)}".`);
  }
  return ms;
}

export const dayString = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

export interface StatsRange {
  /** First and last day, YYYY-MM-DD, both included. */
  from: string;
  to: string;
  days: number;
}

/**
 * The days a read covers: `to` defaults to today (UTC), `from` to LIMITS.defaultStatsDays days ending at `to`.
 * invalid_input names `from` when it is after `to`, and the field the visitor sent when the range is longer than
 * LIMITS.maxStatsDays days (`from` when `to` was left to its default).
 */
export function statsRange(
  from: string | null | undefined,
  to: string | null | undefined,
  now = Date.now(),
): StatsRange {
  const toMs = to == null ? Math.floor(now / DAY_MS) * DAY_MS : parseDay(to, 'to');
  const fromMs = from == null ? toMs - (LIMITS.defaultStatsDays - 1) * DAY_MS : parseDay(from, 'from');
  if (fromMs > toMs) throw invalidInput('from', `from (${dayString(fromMs)}) is after to (${dayString(toMs)}).`);
  const days = Math.round((toMs - fromMs) / DAY_MS) + 1;
  if (days > LIMITS.maxStatsDays) {
    throw invalidInput(
      to == null ? 'from' : 'to',
      `At most ${LIMITS.maxStatsDays} days per read of statistics, got ${days}.`,
    );
  }
  return { from: dayString(fromMs), to: dayString(toMs), days };
}

/** Statistics are read by those who may edit the download: editAny, or editOwn as its owner or a team member. */
export async function requireStatsReader(
  access: Access,
  team: { isTeamMember(downloadId: number): Promise<boolean> },
  d: Download,
): Promise<void> {
  if (access.canEditDownload(d)) return;
  if (access.canViewDownload(d) && access.canEditDownload(d, await team.isTeamMember(d.id))) return;
  throw noPermission("read this download's statistics");
}
