// The hand-written reads of authentication: a key by its hash, a user with their group memberships. Every request
// reads them (through the AuthCache of visitor.ts, a few seconds at a time); through Prisma each load cost its query
// compiler a millisecond and more of CPU. Rows come back in Prisma's model shapes (src/db/rows.ts).
import type { ApiKey, GroupMembership, User } from '../generated/prisma/client.js';
import type { Database } from '../db/database.js';
import { firstRow, jsonOf, revive } from '../db/rows.js';

type Db = Pick<Database, 'query'>;

/** The key whose hash is `hash`, or null. */
export async function keyByHash(db: Db, hash: string): Promise<ApiKey | null> {
  const r = await firstRow(db, `SELECT ${jsonOf('ApiKey', 'k')} AS k FROM api_key k WHERE k."keyHash" = $1`, [hash]);
  return r ? revive<ApiKey>('ApiKey', r.k) : null;
}

/** User `id` with their group memberships (by group id), or null. */
export async function userWithMemberships(
  db: Db,
  id: number,
): Promise<(User & { memberships: GroupMembership[] }) | null> {
  const r = await firstRow(
    db,
    `SELECT ${jsonOf('User', 'u')} AS u,
            coalesce((SELECT json_agg(${jsonOf('GroupMembership', 'm')} ORDER BY m."groupId")
                      FROM user_group_membership m WHERE m."userId" = u.id), '[]') AS m
       FROM "user" u WHERE u.id = $1::int`,
    [id],
  );
  if (!r) return null;
  const user = revive<User & { memberships: GroupMembership[] }>('User', r.u);
  user.memberships = (r.m as Record<string, unknown>[]).map((m) => revive<GroupMembership>('GroupMembership', m));
  return user;
}
