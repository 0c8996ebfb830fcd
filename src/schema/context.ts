// What every resolver receives: the database, the configuration, and the visitor the key acts as.
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Config } from '../config.js';
import type { BuiltInGroupIds } from '../auth/visitor.js';
import { Access, type Visitor } from '../permissions/access.js';
import { loadPermissionResolver } from '../permissions/load.js';

export interface Services {
  prisma: PrismaClient;
  config: Config;
  groups: BuiltInGroupIds;
}

export interface Context extends Services {
  visitor: Visitor;
  /** The visitor's permission checks, loaded once per request on first use. */
  access(): Promise<Access>;
}

export function createContext(services: Services, visitor: Visitor): Context {
  let access: Promise<Access> | undefined;
  return {
    ...services,
    visitor,
    access: () => (access ??= visitor.isSuper
      ? Promise.resolve(new Access(visitor, null))
      : loadPermissionResolver(services.prisma, visitor.groupIds).then((r) => new Access(visitor, r))),
  };
}
