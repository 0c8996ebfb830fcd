// What every resolver receives: the database, the configuration, and the visitor the key acts as.
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Config } from '../config.js';
import type { BuiltInGroupIds } from '../auth/visitor.js';
import { Access, type Visitor } from '../permissions/access.js';
import type { PermissionCache } from '../permissions/load.js';
import type { AuthCache } from '../auth/visitor.js';
import type { Storage } from '../files/storage/index.js';
import type { Reads } from '../db/reads.js';
import type { Events } from '../events.js';

export interface Services {
  prisma: PrismaClient;
  /** Hand-written SQL for the hottest reads (src/db/reads.ts). */
  reads: Reads;
  config: Config;
  groups: BuiltInGroupIds;
  storage: Storage;
  /** Permission tables shared by requests; invalidate() after writing categories or permissions. */
  permissions: PermissionCache;
  auth: AuthCache;
  /** Subscription events (src/events.ts): publish after a write commits. */
  events: Events;
}

export interface Context extends Services {
  visitor: Visitor;
  /** The visitor's permission checks, loaded once per request on first use. */
  access(): Promise<Access>;
  /** Removes blobs whose rows a hard delete removed (after the transaction committed). */
  removeBlobs(keys: readonly string[]): Promise<void>;
  /** Whether the visitor is on a download's team (one query per request, on first use). */
  team: { isTeamMember(downloadId: number): Promise<boolean> };
}

export function createContext(services: Services, visitor: Visitor): Context {
  let access: Promise<Access> | undefined;
  let teams: Promise<Set<number>> | undefined;
  const team = {
    async isTeamMember(downloadId: number) {
      if (visitor.userId === 0) return false;
      teams ??= services.prisma.teamMember.findMany({ where: { userId: visitor.userId }, select: { downloadId: true } })
        .then((rows) => new Set(rows.map((r) => r.downloadId)));
      return (await teams).has(downloadId);
    },
  };
  return {
    ...services,
    visitor,
    team,
    removeBlobs: (keys) => (keys.length ? services.storage.remove(keys) : Promise.resolve()),
    access: () => (access ??= visitor.isSuper
      ? Promise.resolve(new Access(visitor, null))
      : services.permissions.resolverFor(visitor.groupIds).then((r) => new Access(visitor, r))),
  };
}
