// Loads the permission tables (every group's grants and overrides, and the category tree): three small queries.
// They change rarely, so the service keeps them in a short-lived cache (see PermissionCache) rather than
// reading them on every request.
import type { PrismaClient } from '../generated/prisma/client.js';
import { TtlCache } from '../cache.js';
import { LocalChangeFeed, type ChangeFeed } from '../db/changes.js';
import { PermissionResolver, type PermissionData } from './resolve.js';

export async function loadPermissionData(prisma: PrismaClient): Promise<PermissionData> {
  const [grants, overrides, categories] = await Promise.all([
    prisma.groupPermission.findMany(),
    prisma.categoryPermission.findMany(),
    prisma.category.findMany({ select: { id: true, parentId: true } }),
  ]);
  const data: PermissionData = { grants: new Map(), overrides: new Map(), parents: new Map() };
  for (const g of grants) {
    let set = data.grants.get(g.groupId);
    if (!set) {
      set = new Set();
      data.grants.set(g.groupId, set);
    }
    set.add(g.permission);
  }
  for (const o of overrides) {
    let byGroup = data.overrides.get(o.categoryId);
    if (!byGroup) {
      byGroup = new Map();
      data.overrides.set(o.categoryId, byGroup);
    }
    let byPerm = byGroup.get(o.groupId);
    if (!byPerm) {
      byPerm = new Map();
      byGroup.set(o.groupId, byPerm);
    }
    byPerm.set(o.permission, o.value);
  }
  for (const c of categories) data.parents.set(c.id, c.parentId);
  return data;
}

/**
 * The permission tables, shared by all requests of this process for `ttlMs`. Writes (categories, permissions) call
 * invalidate(), which clears this instance's copy at once and, through the change feed, every other instance's.
 */
export class PermissionCache {
  private readonly cache: TtlCache<'all', PermissionData>;
  constructor(
    private readonly prisma: PrismaClient,
    ttlMs: number,
    private readonly feed: ChangeFeed = new LocalChangeFeed(),
  ) {
    this.cache = new TtlCache(ttlMs);
    feed.onChange((c) => {
      if (c.kind === 'permissions' || c.kind === 'all') this.cache.clear();
    });
  }
  async resolverFor(groupIds: number[]): Promise<PermissionResolver> {
    return new PermissionResolver(groupIds, await this.cache.get('all', () => loadPermissionData(this.prisma)));
  }
  invalidate(): void {
    this.feed.publish({ kind: 'permissions' });
  }
}
