// Loads what permission resolution needs for one visitor's groups: three small queries, once per request.
import type { PrismaClient } from '../generated/prisma/client.js';
import { PermissionResolver, type PermissionData } from './resolve.js';

export async function loadPermissionResolver(prisma: PrismaClient, groupIds: number[]): Promise<PermissionResolver> {
  const [grants, overrides, categories] = await Promise.all([
    prisma.groupPermission.findMany({ where: { groupId: { in: groupIds } } }),
    prisma.categoryPermission.findMany({ where: { groupId: { in: groupIds } } }),
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
  return new PermissionResolver(groupIds, data);
}
