// What every resolver receives: the database, the configuration, and the visitor the key acts as.
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Config } from '../config.js';
import type { BuiltInGroupIds } from '../auth/visitor.js';
import { Access, type Visitor } from '../permissions/access.js';
import type { PermissionCache } from '../permissions/load.js';
import type { AuthCache } from '../auth/visitor.js';
import type { Storage } from '../files/storage/index.js';
import type { Database } from '../db/database.js';
import type { Events } from '../events.js';
import type { CursorSeal } from '../db/keyset.js';
import { OPERATION_SLOT, type Carrier } from '../db/operation-scope.js';
import { operationDatabase, operationPrisma } from '../db/operation-bound.js';
import { RequestCache } from '@pothos/plugin-scope-auth';

export interface Services {
  prisma: PrismaClient;
  /**
   * The database's driver, for the hand-written SQL reads (each module's store.ts: one statement outside Prisma,
   * src/db/database.ts `query`) and the hot writes' transactions (`transaction`).
   */
  db: Pick<Database, 'query' | 'kind' | 'transaction'>;
  config: Config;
  groups: BuiltInGroupIds;
  storage: Storage;
  /** Permission tables shared by requests; invalidate() after writing categories or permissions. */
  permissions: PermissionCache;
  auth: AuthCache;
  /** Subscription events (src/events.ts): publish after a write commits. */
  events: Events;
  /** Seals and opens connection cursors with the secret every instance shares (src/db/keyset.ts). */
  cursors: CursorSeal;
  /** Views of downloads, counted in memory and flushed in batches (src/modules/downloads/views.ts); absent: none. */
  views?: { record(v: { userId: number; apiKeyId: number }, d: { id: number; userId: number }): void };
}

export interface Context extends Services {
  /** The operation the context runs, once boundTo set it: its database's and Prisma's statements are bound to it. */
  [OPERATION_SLOT]: Carrier;
  visitor: Visitor;
  /** The visitor's permission checks, loaded once per request on first use. */
  access(): Promise<Access>;
  /**
   * `check` applied to the visitor's permission checks: at once when they have loaded, else when they have. For the
   * per-row fields (canView, canEdit…): a list of 100 rows asks hundreds of them, and a promise each cost time.
   */
  withAccess<T>(check: (access: Access) => T | Promise<T>): T | Promise<T>;
  /** Removes blobs whose rows a hard delete removed (after the transaction committed). */
  removeBlobs(keys: readonly string[]): Promise<void>;
  /** Whether the visitor is on a download's team (one query per request, on first use). */
  team: { isTeamMember(downloadId: number): Promise<boolean> };
}

export function createContext(services: Services, visitor: Visitor): Context {
  // The operation this context runs (boundTo, src/db/operation-scope.ts): what its database and its Prisma client send
  // is bound to it, so that its deadline cancels it.
  const slot: Carrier = {};
  const db = operationDatabase(services.db, slot);
  let access: Promise<Access> | undefined;
  let loaded: Access | undefined;
  const load = () =>
    (access ??= (
      visitor.isSuper
        ? Promise.resolve(new Access(visitor, null))
        : services.permissions.resolverFor(visitor.groupIds).then((r) => new Access(visitor, r))
    ).then((a) => (loaded = a)));
  let teams: Promise<Set<number>> | undefined;
  const team = {
    async isTeamMember(downloadId: number) {
      if (visitor.userId === 0) return false;
      // Through the driver, not Prisma: a user key's every answer with a canEdit in it asks this once.
      teams ??= db
        .query<{ downloadId: number }>('SELECT "downloadId" FROM team_member WHERE "userId" = $1::int', [
          visitor.userId,
        ])
        .then((rows) => new Set(rows.map((r) => r.downloadId)));
      return (await teams).has(downloadId);
    },
  };
  // Every service by name rather than `...services`: on Node 20, an object spread followed by keys the source does not
  // have takes V8's slow path, about 5 µs here for every request (a literal: 0.02 µs). The type lists every key of
  // Services, optional ones included, so a service added later cannot be left out.
  const context: { [K in keyof Required<Services>]: Services[K] } & Omit<Context, keyof Services> = {
    prisma: operationPrisma(services.prisma, slot),
    db,
    config: services.config,
    groups: services.groups,
    storage: services.storage,
    permissions: services.permissions,
    auth: services.auth,
    events: services.events,
    cursors: services.cursors,
    views: services.views,
    [OPERATION_SLOT]: slot,
    visitor,
    team,
    removeBlobs: (keys) => (keys.length ? services.storage.remove(keys) : Promise.resolve()),
    access: load,
    withAccess: (check) => (loaded ? check(loaded) : load().then(check)),
  };
  return context;
}

/**
 * Whose operation this is, for the fair shares, the response allowance and the statements per key: the key, and the
 * user a super-user key acts as.
 */
export function clientOf(context: unknown): string {
  const visitor = (context as { visitor?: { apiKeyId: number; userId: number } } | undefined)?.visitor;
  return visitor ? `${visitor.apiKeyId}:${visitor.userId}` : 'anonymous';
}

/**
 * Lets go of what the schema's plugins keep for `context` once an operation on it has its whole result: the scope
 * checks' cache (@pothos/plugin-scope-auth), which holds the context and so the whole request. It is kept in a map
 * that lives as long as the schema, keyed by the context; left in until the context is collected, V8's
 * young-generation collector kept every such entry's value alive through the next collection even once the request
 * was over, and so copied each request's objects and then moved them into the old generation, where only a full
 * collection frees them (bench/README.md, garbage collection). A field resolved later on the same context (a deferred
 * part) only makes the cache again.
 */
export function endOperation(context: unknown): void {
  if (typeof context === 'object' && context !== null) RequestCache.clearForContext(context);
}
