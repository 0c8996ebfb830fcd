// The operator's mutations (contract §7). Users and keys: admin rights and any write scope.
// Permissions and prefixes: admin rights and mc_dm_category:write.
import { builder } from './builder.js';
import * as admin from '../domain/admin.js';
import { okPayloadOf, payloadOf } from './payloads.js';
import { CategoryRef } from './category.js';
import { NodeRef, registerNode } from './node.js';
import { notFound, noPermission } from '../errors.js';

const CATEGORY_WRITE = ['mc_dm_category:write'];

export const UserRef = builder.prismaObject('User', {
  description: 'A forum member: the owner of downloads, the author of comments, a team member. Its name and staff flags are public; its groups are shown to administrators.',
  interfaces: [NodeRef],
  fields: (t) => ({
    userId: t.exposeInt('id', { description: 'The numeric user id (the REST API\'s `user_id`).' }),
    username: t.exposeString('username', { description: 'The unique display name.' }),
    isAdmin: t.exposeBoolean('isAdmin', { description: 'An administrator: holds admin rights for categories, users and keys.' }),
    isModerator: t.exposeBoolean('isModerator', { description: 'A moderator: sees moderated and deleted content.' }),
    groups: t.stringList({
      nullable: true,
      description: 'Group names, primary group first, then secondary groups. Administrators and super-user keys only (null for others).',
      authScopes: { admin: true },
      resolve: async (u, _a, ctx) => {
        const rows = await ctx.prisma.group.findMany({
          where: { OR: [{ id: u.primaryGroupId }, { members: { some: { userId: u.id } } }] },
        });
        return rows.sort((a, b) => Number(b.id === u.primaryGroupId) - Number(a.id === u.primaryGroupId) || a.id - b.id).map((g) => g.name);
      },
    }),
  }),
});

const ApiKeyTypeEnum = builder.enumType('ApiKeyType', {
  values: { GUEST: { value: 'guest' }, USER: { value: 'user' }, SUPER: { value: 'super' } } as const,
});

const ApiKeyRef = builder.prismaObject('ApiKey', {
  description: 'An API key as stored: its type, scopes and state. The key itself is never stored, only shown once by createApiKey.',
  interfaces: [NodeRef],
  fields: (t) => ({
    apiKeyId: t.exposeInt('id', { description: 'The numeric key id, for revokeApiKey.' }),
    type: t.expose('type', { type: ApiKeyTypeEnum, description: 'Whom requests with this key act as.' }),
    userId: t.exposeInt('userId', { nullable: true, description: 'The bound user of a USER key; null for GUEST and SUPER keys.' }),
    user: t.relation('user', { nullable: true, description: 'The bound user of a USER key.' }),
    scopes: t.exposeStringList('scopes', { description: 'The scopes the key holds (a subset of the six API scopes).' }),
    title: t.exposeString('title', { description: 'A label chosen when the key was created.' }),
    isActive: t.exposeBoolean('isActive', { description: 'False once revoked (or expired): requests with it answer api_key_inactive.' }),
  }),
});

const PermissionValueEnum = builder.enumType('PermissionValue', {
  values: { ALLOW: { value: 'allow' }, DENY: { value: 'deny' }, INHERIT: { value: 'inherit' } } as const,
});

export const PrefixRef = builder.prismaObject('Prefix', {
  description: 'A label shown before a download\'s title ("Beta", "Stable"); a category offers the prefixes assigned to it.',
  interfaces: [NodeRef],
  fields: (t) => ({
    prefixId: t.exposeInt('id', { description: 'The numeric prefix id (the REST API\'s `prefix_id`).' }),
    title: t.exposeString('title', { description: 'The label text.' }),
  }),
});

export const GroupRef = builder.prismaObject('Group', {
  description: 'A user group. Permissions are granted to groups, globally and per category; a user holds a permission when any of their groups does.',
  interfaces: [NodeRef],
  fields: (t) => ({
    groupId: t.exposeInt('id', { description: 'The numeric group id.' }),
    name: t.exposeString('name', { description: 'The unique name used by the admin mutations (guest, registered, moderator, administrator, …).' }),
    isBuiltIn: t.exposeBoolean('isBuiltIn', { description: 'One of the four groups the service creates.' }),
    permissions: t.stringList({
      description: 'The permissions the group holds globally, by name, sorted (category overrides are not included).',
      select: { permissions: { select: { permission: true } } },
      resolve: (g) => g.permissions.map((p) => p.permission).sort(),
    }),
  }),
});

registerNode('Group', [], async (ctx, id) => {
  if (!(await ctx.access()).hasAdminRights) throw noPermission('see user groups');
  const group = await ctx.prisma.group.findUnique({ where: { id } });
  if (!group) throw notFound('group', id);
  return group;
});
registerNode('User', [], async (ctx, id) => {
  const user = await ctx.prisma.user.findUnique({ where: { id } });
  if (!user) throw notFound('user', id);
  return user;
});
registerNode('Prefix', [], async (ctx, id) => {
  const prefix = await ctx.prisma.prefix.findUnique({ where: { id } });
  if (!prefix) throw notFound('prefix', id);
  return prefix;
});
registerNode('ApiKey', [], async (ctx, id) => {
  if (!(await ctx.access()).hasAdminRights) throw noPermission('see API keys');
  const key = await ctx.prisma.apiKey.findUnique({ where: { id } });
  if (!key) throw notFound('api_key', id);
  return key;
});


const CreateUserInput = builder.inputType('CreateUserInput', {
  fields: (t) => ({
    username: t.string({ required: true }),
    isAdmin: t.boolean({ required: false }),
    isModerator: t.boolean({ required: false }),
    groups: t.stringList({ required: false, description: 'Extra group names besides `registered`.' }),
  }),
});
const CreateApiKeyInput = builder.inputType('CreateApiKeyInput', {
  fields: (t) => ({
    type: t.field({ type: ApiKeyTypeEnum, required: true }),
    userId: t.int({ required: false, description: 'The bound user, for USER keys only.' }),
    scopes: t.stringList({ required: true, description: 'Scope names, or ["all"].' }),
    title: t.string({ required: false }),
  }),
});
const RevokeApiKeyInput = builder.inputType('RevokeApiKeyInput', { fields: (t) => ({ apiKeyId: t.int({ required: true }) }) });
const SetGroupPermissionInput = builder.inputType('SetGroupPermissionInput', {
  fields: (t) => ({
    group: t.string({ required: true }),
    permission: t.string({ required: true }),
    value: t.field({ type: PermissionValueEnum, required: true }),
  }),
});
const SetCategoryPermissionInput = builder.inputType('SetCategoryPermissionInput', {
  fields: (t) => ({
    categoryId: t.int({ required: true }),
    group: t.string({ required: true }),
    permission: t.string({ required: true }),
    value: t.field({ type: PermissionValueEnum, required: true }),
  }),
});
const CreatePrefixInput = builder.inputType('CreatePrefixInput', { fields: (t) => ({ title: t.string({ required: true }) }) });
const AssignPrefixInput = builder.inputType('AssignPrefixInput', {
  fields: (t) => ({ prefixId: t.int({ required: true }), categoryId: t.int({ required: true }) }),
});

const CreateUserPayload = payloadOf('CreateUserPayload', 'user', UserRef);
const CreateApiKeyPayload = builder.objectRef<Awaited<ReturnType<typeof admin.createApiKey>>>('CreateApiKeyPayload').implement({
  fields: (t) => ({
    key: t.exposeString('key', { description: 'The key itself. It is shown only this once; only its hash is stored.' }),
    apiKey: t.field({ type: ApiKeyRef, resolve: (p) => p.apiKey }),
  }),
});
const RevokeApiKeyPayload = payloadOf('RevokeApiKeyPayload', 'apiKey', ApiKeyRef);
const CreatePrefixPayload = payloadOf('CreatePrefixPayload', 'prefix', PrefixRef);

const SetGroupPermissionPayload = okPayloadOf('SetGroupPermissionPayload', {
  group: { type: GroupRef, description: 'The group, with its global permissions after the change.' },
});
const SetCategoryPermissionPayload = okPayloadOf('SetCategoryPermissionPayload', {
  category: { type: CategoryRef, description: 'The category whose override changed.' },
});
const AssignPrefixPayload = okPayloadOf('AssignPrefixPayload', {
  prefix: { type: PrefixRef, description: 'The prefix assigned.' },
  category: { type: CategoryRef, description: 'The category that now offers it.' },
});

const OPERATOR = { admin: true, anyWrite: true } as const;
const CATEGORY_ADMIN = { scope: CATEGORY_WRITE, admin: true };

builder.mutationFields((t) => ({
  createUser: t.field({
    nullable: true,
    type: CreateUserPayload, authScopes: OPERATOR,
    args: { input: t.arg({ type: CreateUserInput, required: true }) },
    resolve: async (_r, { input }, ctx) => ({ user: await admin.createUser(ctx.prisma, await ctx.access(), input) }),
  }),
  createApiKey: t.field({
    nullable: true,
    type: CreateApiKeyPayload, authScopes: OPERATOR,
    args: { input: t.arg({ type: CreateApiKeyInput, required: true }) },
    resolve: async (_r, { input }, ctx) => admin.createApiKey(ctx.prisma, await ctx.access(), input),
  }),
  revokeApiKey: t.field({
    nullable: true,
    type: RevokeApiKeyPayload, authScopes: OPERATOR,
    args: { input: t.arg({ type: RevokeApiKeyInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      const apiKey = await admin.revokeApiKey(ctx.prisma, await ctx.access(), input.apiKeyId);
      ctx.auth.keys.delete(apiKey.keyHash);
      return { apiKey };
    },
  }),
  setGroupPermission: t.field({
    nullable: true,
    type: SetGroupPermissionPayload, authScopes: CATEGORY_ADMIN,
    args: { input: t.arg({ type: SetGroupPermissionInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      await admin.setGroupPermission(ctx.prisma, await ctx.access(), input.group, input.permission, input.value);
      ctx.permissions.invalidate();
      return { ok: true as const, group: await ctx.prisma.group.findUniqueOrThrow({ where: { name: input.group } }) };
    },
  }),
  setCategoryPermission: t.field({
    nullable: true,
    type: SetCategoryPermissionPayload, authScopes: CATEGORY_ADMIN,
    args: { input: t.arg({ type: SetCategoryPermissionInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      await admin.setCategoryPermission(ctx.prisma, await ctx.access(), input.categoryId, input.group, input.permission, input.value);
      ctx.permissions.invalidate();
      return { ok: true as const, category: await ctx.prisma.category.findUniqueOrThrow({ where: { id: input.categoryId } }) };
    },
  }),
  createPrefix: t.field({
    nullable: true,
    type: CreatePrefixPayload, authScopes: CATEGORY_ADMIN,
    args: { input: t.arg({ type: CreatePrefixInput, required: true }) },
    resolve: async (_r, { input }, ctx) => ({ prefix: await admin.createPrefix(ctx.prisma, input.title) }),
  }),
  assignPrefix: t.field({
    nullable: true,
    type: AssignPrefixPayload, authScopes: CATEGORY_ADMIN,
    args: { input: t.arg({ type: AssignPrefixInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      await admin.assignPrefix(ctx.prisma, input.prefixId, input.categoryId);
      const [prefix, category] = await Promise.all([
        ctx.prisma.prefix.findUniqueOrThrow({ where: { id: input.prefixId } }),
        ctx.prisma.category.findUniqueOrThrow({ where: { id: input.categoryId } }),
      ]);
      return { ok: true as const, prefix, category };
    },
  }),
}));
