// How the admin CLI prints: aligned plain-text tables for people, JSON for scripts.
import type { Explained, KeyRow, ListPage, PrefixRow, UserRow } from './operator.js';
import type { NamedRule } from '../modules/accounts/index.js';

export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_h, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** Unix seconds as `2026-11-23 10:57:00 UTC`; null as `never`. */
export function time(unix: number | null): string {
  if (unix === null) return 'never';
  return `${new Date(unix * 1000).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

function footer(p: ListPage<unknown>, what: string): string {
  if (p.total === 0) return `No ${what}.`;
  return p.lastPage > 1
    ? `Page ${p.page} of ${p.lastPage} (${p.total} ${what}); --page N for more.`
    : `${p.total} ${what}.`;
}

export function users(p: ListPage<UserRow>): string {
  const rows = p.rows.map((u) => [
    u.id,
    u.username,
    [u.isAdmin && 'admin', u.isModerator && 'moderator'].filter(Boolean).join(',') || '-',
    u.groups.join(','),
  ]);
  return `${rows.length ? `${table(['ID', 'USERNAME', 'STAFF', 'GROUPS'], rows)}\n` : ''}${footer(p, 'users')}`;
}

export function user(u: UserRow): string {
  // "staff" as in `users list`: what the administrator and moderator flags make of the user
  const staff = [u.isAdmin && 'administrator', u.isModerator && 'moderator'].filter(Boolean);
  return `User ${u.id} "${u.username}": groups ${u.groups.join(', ')}${staff.length > 0 ? `; staff: ${staff.join(', ')}` : ''}.`;
}

const scopes = (s: string[]) => (s.length === 6 ? 'all' : s.join(','));

export function keys(p: ListPage<KeyRow>): string {
  const rows = p.rows.map((k) => [
    k.id,
    k.type,
    k.userId ?? '-',
    k.isActive ? 'active' : 'revoked',
    time(k.lastUsedAt),
    time(k.createdAt),
    scopes(k.scopes),
    k.title || '-',
  ]);
  return `${rows.length ? `${table(['ID', 'TYPE', 'USER', 'STATE', 'LAST USED', 'CREATED', 'SCOPES', 'TITLE'], rows)}\n` : ''}${footer(p, 'keys')}`;
}

export function newKey(k: { key: string; apiKey: KeyRow }): string {
  return [
    `Created ${k.apiKey.type} key ${k.apiKey.id}${k.apiKey.userId ? ` for user ${k.apiKey.userId}` : ''} with scopes ${scopes(k.apiKey.scopes)}.`,
    'The key is shown only this once (only its hash is stored); send it in the Forum-Api-Key header:',
    k.key,
  ].join('\n');
}

function rule(r: NamedRule | null): string {
  if (!r) return 'the user is in no group';
  if (r.level === 'category') return `${r.groupName}: ${r.value.toUpperCase()} override on category ${r.categoryId}`;
  return r.value === 'allow' ? `${r.groupName}: global grant` : `${r.groupName}: not granted globally, no override`;
}

export function explained(e: Explained): string {
  const who = e.user.id === 0 ? 'The guest visitor' : `User ${e.user.id} "${e.user.username}"`;
  const where = e.category ? `in category ${e.category.id} "${e.category.title}"` : 'globally (no category)';
  const rows = e.permissions.map((p) => {
    const others = p.rules.filter((r) => r.groupId !== p.decidedBy?.groupId);
    return [p.permission, p.granted ? 'yes' : 'NO', rule(p.decidedBy), others.map(rule).join('; ') || '-'];
  });
  const notes = [
    e.user.isAdmin
      ? 'Admin flag set: admin rights for categories, users and keys, whatever these permissions say.'
      : '',
    'A super-user key passes every check regardless. Adding a download needs both view and add.',
  ].filter(Boolean);
  return [`${who} ${where}:`, table(['PERMISSION', 'GRANTED', 'DECIDED BY', 'OTHER GROUPS'], rows), ...notes].join(
    '\n',
  );
}

export function prefixes(list: PrefixRow[]): string {
  if (list.length === 0) return 'No prefixes.';
  return table(
    ['ID', 'TITLE', 'CATEGORIES'],
    list.map((p) => [p.id, p.title, p.categoryIds.join(',') || '-']),
  );
}
