// From request headers to the visitor a request acts as (contract §2).
import type { PrismaClient, ApiKey, User, GroupMembership } from '../generated/prisma/client.js';
import { TtlCache } from '../cache.js';
import { LocalChangeFeed, type ChangeFeed } from '../db/changes.js';
import { ApiError } from '../errors.js';
import type { Visitor } from '../permissions/access.js';
import { hashKey } from './keys.js';
import { keyByHash, userWithMemberships } from './store.js';
import type { Database } from '../db/database.js';
import { MAX_INT } from '../input/numbers.js';

/** How often one instance records a key's last use. */
export const USE_RECORD_MS = 60_000;

export interface BuiltInGroupIds {
  guest: number;
  registered: number;
  moderator: number;
  administrator: number;
}

/**
 * Keys and users as requests see them, cached for a few seconds: every request reads them, hardly any changes them.
 * A change (a key revoked) is applied here at once and reaches the other instances through the change feed.
 */
export class AuthCache {
  readonly keys: TtlCache<string, ApiKey | null>;
  readonly users: TtlCache<number, (User & { memberships: GroupMembership[] }) | null>;
  constructor(
    ttlMs: number,
    private readonly feed: ChangeFeed = new LocalChangeFeed(),
  ) {
    this.keys = new TtlCache(ttlMs);
    this.users = new TtlCache(ttlMs);
    feed.onChange((c) => {
      if (c.kind === 'key') this.keys.delete(c.hash);
      else if (c.kind === 'user') this.users.delete(c.userId);
      else if (c.kind === 'all') {
        this.keys.clear();
        this.users.clear();
      }
    });
  }

  private readonly lastRecorded = new Map<number, number>();

  /**
   * Records that a key authenticated (api_key.lastUsedAt), at most once per key per USE_RECORD_MS on this instance, so
   * that reads do not become writes. Fire and forget: a failed write is dropped and never fails the request.
   */
  noteUse(prisma: PrismaClient, keyId: number, now = Date.now()): void {
    const last = this.lastRecorded.get(keyId);
    if (last !== undefined && now - last < USE_RECORD_MS) return;
    if (this.lastRecorded.size >= 10_000) this.lastRecorded.clear(); // bounded: at worst a few extra writes
    this.lastRecorded.set(keyId, now);
    prisma.apiKey.updateMany({ where: { id: keyId }, data: { lastUsedAt: new Date(now) } }).catch(() => {});
  }

  /** A key's row changed (revoked, re-scoped): every instance reads it again. */
  keyChanged(hash: string): void {
    this.feed.publish({ kind: 'key', hash });
  }
  /** A user's row or groups changed. */
  userChanged(userId: number): void {
    this.feed.publish({ kind: 'user', userId });
  }
}

/** What a visitor is read with: Prisma for the occasional write (a key's last use), the driver for the reads. */
export interface AuthReads {
  prisma: PrismaClient;
  db: Pick<Database, 'query'>;
}

export async function visitorFromHeaders(
  { prisma, db }: AuthReads,
  headers: Headers,
  groups: BuiltInGroupIds,
  cache: AuthCache = new AuthCache(0),
): Promise<Visitor> {
  const key = headers.get('forum-api-key');
  if (!key)
    throw new ApiError('no_api_key_in_request', 'No API key was included in the request (header Forum-Api-Key).');
  const hash = hashKey(key);
  const row = await cache.keys.get(hash, () => keyByHash(db, hash));
  if (!row) cache.keys.delete(hash); // unknown keys are not remembered: one may be created a moment later
  if (!row) throw new ApiError('api_key_not_found', 'The API key in the request was not found.');
  if (!row.isActive || (row.expiresAt && row.expiresAt.getTime() <= Date.now())) {
    throw new ApiError('api_key_inactive', 'The API key in the request has been revoked or has expired.');
  }
  cache.noteUse(prisma, row.id);
  const asUserHeader = headers.get('forum-api-user');
  if (asUserHeader !== null && row.type !== 'super') {
    throw new ApiError('api_user_header_not_allowed', 'Only super-user keys may send the Forum-Api-User header.');
  }

  let userId: number | null = null;
  if (row.type === 'user') userId = row.userId;
  if (row.type === 'super' && asUserHeader !== null) {
    if (!/^\d+$/.test(asUserHeader.trim()) || Number(asUserHeader.trim()) > MAX_INT) {
      throw new ApiError(
        'invalid_api_user',
        `Forum-Api-User must be a user id (a whole number up to ${MAX_INT}), got "${asUserHeader.slice(0, 40)}".`,
        { user_id: asUserHeader.slice(0, 40) },
      );
    }
    userId = Number(asUserHeader.trim());
    if (userId === 0) userId = null; // acting as the guest
  }

  if (userId === null) return built(row, null, groups.guest);
  const id = userId;
  const user = await cache.users.get(id, () => userWithMemberships(db, id));
  if (!user) {
    cache.users.delete(id);
    if (row.type === 'user')
      throw new ApiError('api_key_inactive', 'The user this API key belongs to no longer exists.');
    throw new ApiError('invalid_api_user', `No user with id ${userId} exists (header Forum-Api-User).`, {
      user_id: userId,
    });
  }
  return built(row, user, groups.guest);
}

type UserRow = User & { memberships: GroupMembership[] };

/**
 * The visitors made from each key row the cache holds (by the user acted as, 0 for the guest), made once per row and
 * user row: the rows are replaced, not changed, when they are read again, so one visitor serves every request of a
 * row's lifetime in the cache. Nothing changes a visitor once made.
 */
const visitors = new WeakMap<ApiKey, Map<number, { user: UserRow | null; guestGroup: number; visitor: Visitor }>>();

function built(row: ApiKey, user: UserRow | null, guestGroup: number): Visitor {
  let byUser = visitors.get(row);
  if (!byUser) {
    byUser = new Map();
    visitors.set(row, byUser);
  }
  const id = user?.id ?? 0;
  const kept = byUser.get(id);
  if (kept && kept.user === user && kept.guestGroup === guestGroup) return kept.visitor;
  // One literal shape for both (no spread of common fields: a spread followed by new keys takes V8's slow path, and
  // the visitor is read on every request).
  const isSuper = row.type === 'super';
  const scopes = new Set(row.scopes) as ReadonlySet<string>;
  const apiKeyId = row.id;
  const visitor: Visitor = user
    ? {
        isSuper,
        scopes,
        apiKeyId,
        userId: user.id,
        username: user.username,
        isAdmin: user.isAdmin,
        isModerator: user.isModerator,
        groupIds: [user.primaryGroupId, ...user.memberships.map((m) => m.groupId)],
      }
    : {
        isSuper,
        scopes,
        apiKeyId,
        userId: 0,
        username: 'Guest',
        isAdmin: false,
        isModerator: false,
        groupIds: [guestGroup],
      };
  if (byUser.size >= 100) byUser.clear(); // a super key acting as many users: bounded
  byUser.set(id, { user, guestGroup, visitor });
  return visitor;
}
