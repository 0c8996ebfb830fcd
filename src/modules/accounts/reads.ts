// What an operator looks up: users, API keys, groups, prefixes, and a user's effective permissions with the rule that
// decided each. The GraphQL admin queries and the admin CLI both read through here, so they show the same thing.
import type { PrismaClient, Prisma } from '../../generated/prisma/client.js';
import { notFound } from '../../errors.js';
import type { Access } from '../../permissions/access.js';
import { loadPermissionData } from '../../permissions/load.js';
import { PERMISSIONS } from '../../permissions/names.js';
import { PermissionResolver, type Rule } from '../../permissions/resolve.js';
import { pageWindow, paginationOf, type PageRequest, type PageWindow } from '../../db/lists.js';

export interface UserFilter extends PageRequest {
  search?: string | null;
}

/** Users by id, optionally those whose name contains `search` (any case). */
export async function listUsers(prisma: PrismaClient, filter: UserFilter) {
  const w = pageWindow(filter);
  const search = filter.search?.trim();
  const where: Prisma.UserWhereInput = search ? { username: { contains: search, mode: 'insensitive' } } : {};
  const [total, nodes] = await Promise.all([
    prisma.user.count({ where }),
    prisma.user.findMany({ where, orderBy: { id: 'asc' }, skip: w.skip, take: w.take }),
  ]);
  return { nodes, pagination: paginationOf(w, total) };
}

export interface ApiKeyFilter extends PageRequest {
  userId?: number | null;
  active?: boolean | null;
}

/**
 * API keys by id. Super-user keys are listed only to a super-user actor: an administrator acting through an ordinary
 * key can neither create nor revoke them, and their titles and use are the key holders' business.
 */
export async function listApiKeys(prisma: PrismaClient, actor: Access, filter: ApiKeyFilter) {
  const w = pageWindow(filter);
  const where: Prisma.ApiKeyWhereInput = {
    ...(filter.userId != null ? { userId: filter.userId } : {}),
    ...(filter.active != null ? { isActive: filter.active } : {}),
    ...(actor.isSuper ? {} : { type: { not: 'super' } }),
  };
  const [total, nodes] = await Promise.all([
    prisma.apiKey.count({ where }),
    prisma.apiKey.findMany({ where, orderBy: { id: 'asc' }, skip: w.skip, take: w.take, include: { user: true } }),
  ]);
  return { nodes, pagination: paginationOf(w, total) };
}

/** Groups by id: one page of them with `window`, else all. */
export function listGroups(prisma: PrismaClient, window?: Pick<PageWindow, 'skip' | 'take'>) {
  return prisma.group.findMany({
    orderBy: { id: 'asc' },
    skip: window?.skip,
    take: window?.take,
    include: { permissions: { select: { permission: true } } },
  });
}

/** Prefixes by id: one page of them with `window`, else all. */
export function listPrefixes(prisma: PrismaClient, window?: Pick<PageWindow, 'skip' | 'take'>) {
  return prisma.prefix.findMany({
    orderBy: { id: 'asc' },
    skip: window?.skip,
    take: window?.take,
    include: { categories: { select: { categoryId: true }, orderBy: { categoryId: 'asc' } } },
  });
}

export interface NamedRule extends Omit<Rule, 'groupId'> {
  groupId: number;
  groupName: string;
}
export interface PermissionExplanation {
  permission: string;
  granted: boolean;
  decidedBy: NamedRule | null;
  rules: NamedRule[];
}

/**
 * For each permission: whether `userId` (0: the guest visitor) holds it globally or in `categoryId`, and which group's
 * rule decided. Read fresh from the database, not from the service's permission cache. Group permissions only: a
 * super-user key passes every check whatever this says, and admin rights come from the user's admin flag.
 */
export async function effectivePermissions(
  prisma: PrismaClient,
  userId: number,
  categoryId?: number | null,
): Promise<{
  user: { id: number; username: string; isAdmin: boolean; isModerator: boolean };
  category: { id: number; title: string } | null;
  permissions: PermissionExplanation[];
}> {
  const [groups, user, category] = await Promise.all([
    prisma.group.findMany({ select: { id: true, name: true } }),
    userId === 0
      ? null
      : prisma.user.findUnique({ where: { id: userId }, include: { memberships: { orderBy: { groupId: 'asc' } } } }),
    categoryId != null
      ? prisma.category.findUnique({ where: { id: categoryId }, select: { id: true, title: true } })
      : null,
  ]);
  if (userId !== 0 && !user) throw notFound('user', userId);
  if (categoryId != null && !category) throw notFound('category', categoryId);
  const names = new Map(groups.map((g) => [g.id, g.name]));
  const groupIds = user
    ? [user.primaryGroupId, ...user.memberships.map((m) => m.groupId).filter((g) => g !== user.primaryGroupId)]
    : groups.filter((g) => g.name === 'guest').map((g) => g.id);
  const resolver = new PermissionResolver(groupIds, await loadPermissionData(prisma));
  const named = (r: Rule): NamedRule => ({ ...r, groupName: names.get(r.groupId) ?? `#${r.groupId}` });
  return {
    user: user
      ? { id: user.id, username: user.username, isAdmin: user.isAdmin, isModerator: user.isModerator }
      : { id: 0, username: 'Guest', isAdmin: false, isModerator: false },
    category,
    permissions: PERMISSIONS.map((p) => {
      const e = resolver.explain(p, categoryId ?? null);
      return {
        permission: p,
        granted: e.granted,
        decidedBy: e.decidedBy && named(e.decidedBy),
        rules: e.rules.map(named),
      };
    }),
  };
}
