// Loads the permission tables (every group's grants and overrides, and the category tree): three small queries.
// They change rarely, so the service keeps them in a short-lived cache (see PermissionCache) rather than
// reading them on every request.
import type { PrismaClient } from '../generated/prisma/client.js';
import { TtlCache } from '../cache.js';
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
    if (!set) data.grants.set(g.groupId, (set = new Set()));
    set.add(g.permission);
  }
  for (const o of overrides) {
    let byGroup = data.overrides.get(o.categoryId);
    if (!byGroup) data.overrides.set(o.categoryId, (byGroup = new Map()));
    let byPerm = byGroup.get(o.groupId);
    if (!byPerm) byGroup.set(o.groupId, (byPerm = new Map()));
    byPerm.set(o.permission, o.value);
  }
  for (const c of categories) data.parents.set(c.id, c.parentId);
  return data;
}

/**
 * The permission tables, shared by all requests of this process for `ttlMs`. Writes through this instance
 * (categories, permissions) call invalidate(); changes made through another instance show within ttlMs.
 */
export class PermissionCache {
  private readonly cache: TtlCache<'all', PermissionData>;
  constructor(private readonly prisma: PrismaClient, ttlMs: number) { this.cache = new TtlCache(ttlMs); }
  async resolverFor(groupIds: number[]): Promise<PermissionResolver> {
    return new PermissionResolver(groupIds, await this.cache.get('all', () => loadPermissionData(this.prisma)));
  }
  invalidate(): void { this.cache.clear(); }
}
