// Operator actions (contract §7): users, API keys, group and category permissions, prefixes.
import type { PrismaClient, ApiKeyType } from '../../generated/prisma/client.js';
import { ApiError, invalidInput, notFound, requiredMissing } from '../../errors.js';
import { isPermission, isScope, SCOPES, type Permission } from '../../permissions/names.js';
import { generateKey, hashKey } from '../../auth/keys.js';
import { assertCanCreateUser, assertCanGrant, assertCanMintKey, assertCanRevokeKey } from './grants.js';
import type { Access } from '../../permissions/access.js';

export interface CreateUserInput {
  username: string;
  isAdmin?: boolean | null;
  isModerator?: boolean | null;
  groups?: readonly string[] | null;
}

async function groupByName(prisma: PrismaClient, name: string) {
  const group = await prisma.group.findUnique({ where: { name } });
  if (!group)
    throw new ApiError('mc_dm_api_error.group_not_found', `No user group is named "${name}".`, { group: name });
  return group;
}

/**
 * A new user: primary group `registered`; secondary groups `moderator` / `administrator` when flagged,
 * plus any named in `groups`.
 */
export async function createUser(prisma: PrismaClient, actor: Access, input: CreateUserInput) {
  assertCanCreateUser(actor.visitor, Boolean(input.isAdmin) || (input.groups ?? []).includes('administrator'));
  const username = input.username.trim();
  if (!username) throw requiredMissing(['username']);
  if (username.length > 50) throw invalidInput('username', 'username must be at most 50 characters.');
  const names = new Set(input.groups ?? []);
  if (input.isModerator) names.add('moderator');
  if (input.isAdmin) names.add('administrator');
  names.delete('registered');
  const registered = await groupByName(prisma, 'registered');
  const secondary = [];
  for (const n of names) secondary.push(await groupByName(prisma, n));
  if (await prisma.user.findUnique({ where: { username } })) {
    throw new ApiError('mc_dm_api_error.username_taken', `The username "${username}" is already taken.`, { username });
  }
  return prisma.user.create({
    data: {
      username,
      isAdmin: input.isAdmin ?? false,
      isModerator: input.isModerator ?? false,
      primaryGroupId: registered.id,
      memberships: { create: secondary.map((g) => ({ groupId: g.id })) },
    },
  });
}

/**
 * Replaces a user's secondary groups with `groups` (the primary group, `registered`, stays). The staff flags follow
 * the groups, as createUser sets them: in `administrator` ⇔ isAdmin, in `moderator` ⇔ isModerator. Only a super-user
 * key may make or unmake an administrator, or change another administrator's groups.
 */
export async function setUserGroups(prisma: PrismaClient, actor: Access, userId: number, groups: readonly string[]) {
  const user = await prisma.user.findUnique({ where: { id: userId } });
  if (!user) throw notFound('user', userId);
  const names = new Set(groups.map((g) => g.trim()).filter(Boolean));
  const isAdmin = names.has('administrator');
  if (!actor.isSuper && (user.isAdmin || isAdmin) && user.id !== actor.visitor.userId) {
    throw new ApiError(
      'do_not_have_permission',
      "Only a super-user key can change an administrator's groups or make a user an administrator.",
    );
  }
  if (!actor.isSuper && user.isAdmin && !isAdmin) {
    throw new ApiError('do_not_have_permission', 'Only a super-user key can take administrator rights away.');
  }
  const primary = await prisma.group.findUniqueOrThrow({ where: { id: user.primaryGroupId } });
  names.delete(primary.name);
  const secondary = [];
  for (const n of names) secondary.push(await groupByName(prisma, n));
  return prisma.user.update({
    where: { id: userId },
    data: {
      isAdmin,
      isModerator: names.has('moderator'),
      memberships: { deleteMany: {}, create: secondary.map((g) => ({ groupId: g.id })) },
    },
  });
}

export interface CreateApiKeyInput {
  type: ApiKeyType;
  userId?: number | null;
  scopes: readonly string[];
  title?: string | null;
}

/** Returns the stored row and the key itself, which is shown this once and never stored. */
export async function createApiKey(prisma: PrismaClient, actor: Access, input: CreateApiKeyInput) {
  if (input.type === 'user' && input.userId == null) throw requiredMissing(['userId']);
  if (input.type !== 'user' && input.userId != null) {
    throw invalidInput(
      'userId',
      'Only user keys are bound to a user; super-user keys choose one per request with Forum-Api-User.',
    );
  }
  const bound = input.userId != null ? await prisma.user.findUnique({ where: { id: input.userId } }) : null;
  if (input.userId != null && !bound) throw notFound('user', input.userId);
  const scopes = normalizeScopes(input.scopes);
  assertCanMintKey(actor.visitor, input.type, scopes, bound);
  const key = generateKey();
  const apiKey = await prisma.apiKey.create({
    data: {
      keyHash: hashKey(key),
      type: input.type,
      userId: input.userId ?? null,
      scopes,
      title: input.title?.trim() ?? '',
    },
  });
  return { key, apiKey };
}

export function normalizeScopes(requested: readonly string[]): string[] {
  if (requested.includes('all')) return [...SCOPES];
  if (requested.length === 0) throw invalidInput('scopes', `Give at least one scope: ${SCOPES.join(', ')}, or "all".`);
  for (const s of requested) {
    if (!isScope(s)) throw invalidInput('scopes', `Unknown scope "${s}". Scopes are ${SCOPES.join(', ')}, or "all".`);
  }
  return [...new Set(requested)];
}

export async function revokeApiKey(prisma: PrismaClient, actor: Access, apiKeyId: number) {
  const existing = await prisma.apiKey.findUnique({ where: { id: apiKeyId }, include: { user: true } });
  if (!existing) throw notFound('api_key', apiKeyId);
  assertCanRevokeKey(actor.visitor, existing, existing.user);
  if (!existing.isActive) return existing;
  return prisma.apiKey.update({ where: { id: apiKeyId }, data: { isActive: false, revokedAt: new Date() } });
}

export type PermissionSetting = 'allow' | 'deny' | 'inherit';

function permission(name: string): Permission {
  if (!isPermission(name)) throw invalidInput('permission', `Unknown permission "${name}".`);
  return name;
}

/** A group's global value: ALLOW grants; DENY and INHERIT both withdraw the grant (there is nothing above it). */
export async function setGroupPermission(
  prisma: PrismaClient,
  actor: Access,
  groupName: string,
  perm: string,
  value: PermissionSetting,
) {
  const p = permission(perm);
  const group = await groupByName(prisma, groupName);
  assertCanGrant(actor, p, value);
  if (value === 'allow') {
    // ON CONFLICT DO NOTHING: two simultaneous grants must not race into a unique violation (an upsert with nothing to
    // update is a read then an insert).
    await prisma.groupPermission.createMany({ data: [{ groupId: group.id, permission: p }], skipDuplicates: true });
  } else {
    await prisma.groupPermission.deleteMany({ where: { groupId: group.id, permission: p } });
  }
}

/** A per-category override: ALLOW or DENY decide in this category and below; INHERIT removes the override. */
export async function setCategoryPermission(
  prisma: PrismaClient,
  actor: Access,
  categoryId: number,
  groupName: string,
  perm: string,
  value: PermissionSetting,
) {
  const p = permission(perm);
  const group = await groupByName(prisma, groupName);
  if (!(await prisma.category.findUnique({ where: { id: categoryId }, select: { id: true } })))
    throw notFound('category', categoryId);
  assertCanGrant(actor, p, value, categoryId);
  const where = { categoryId_groupId_permission: { categoryId, groupId: group.id, permission: p } };
  if (value === 'inherit') {
    await prisma.categoryPermission.deleteMany({ where: { categoryId, groupId: group.id, permission: p } });
  } else {
    await prisma.categoryPermission.upsert({
      where,
      create: { categoryId, groupId: group.id, permission: p, value },
      update: { value },
    });
  }
}

export async function createPrefix(prisma: PrismaClient, title: string) {
  const t = title.trim();
  if (!t) throw requiredMissing(['title']);
  if (t.length > 50) throw invalidInput('title', 'A prefix title must be at most 50 characters.');
  return prisma.prefix.create({ data: { title: t } });
}

export async function assignPrefix(prisma: PrismaClient, prefixId: number, categoryId: number) {
  if (!(await prisma.prefix.findUnique({ where: { id: prefixId } }))) throw notFound('prefix', prefixId);
  if (!(await prisma.category.findUnique({ where: { id: categoryId }, select: { id: true } })))
    throw notFound('category', categoryId);
  // ON CONFLICT DO NOTHING, so that simultaneous assignments of one pair all succeed (an upsert with nothing to update
  // is a read then an insert, and the second insert would violate the unique key).
  await prisma.categoryPrefix.createMany({ data: [{ categoryId, prefixId }], skipDuplicates: true });
}
