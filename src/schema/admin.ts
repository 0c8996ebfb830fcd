// The operator's mutations (contract §7). Users and keys: admin rights and any write scope.
// Permissions and prefixes: admin rights and mc_dm_category:write.
import { builder } from './builder.js';
import * as admin from '../domain/admin.js';
import { OkPayload, payloadOf } from './payloads.js';

const CATEGORY_WRITE = ['mc_dm_category:write'];

const UserRef = builder.prismaObject('User', {
  fields: (t) => ({
    userId: t.exposeInt('id'),
    username: t.exposeString('username'),
    isAdmin: t.exposeBoolean('isAdmin'),
    isModerator: t.exposeBoolean('isModerator'),
    groups: t.stringList({
      description: 'Primary group first, then secondary groups.',
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
  fields: (t) => ({
    apiKeyId: t.exposeInt('id'),
    type: t.expose('type', { type: ApiKeyTypeEnum }),
    userId: t.exposeInt('userId', { nullable: true }),
    scopes: t.exposeStringList('scopes'),
    title: t.exposeString('title'),
    isActive: t.exposeBoolean('isActive'),
  }),
});

const PermissionValueEnum = builder.enumType('PermissionValue', {
  values: { ALLOW: { value: 'allow' }, DENY: { value: 'deny' }, INHERIT: { value: 'inherit' } } as const,
});

const PrefixRef = builder.prismaObject('Prefix', {
  fields: (t) => ({ prefixId: t.exposeInt('id'), title: t.exposeString('title') }),
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

const OPERATOR = { admin: true, anyWrite: true } as const;
const CATEGORY_ADMIN = { scope: CATEGORY_WRITE, admin: true };

builder.mutationFields((t) => ({
  createUser: t.field({
    type: CreateUserPayload, authScopes: OPERATOR,
    args: { input: t.arg({ type: CreateUserInput, required: true }) },
    resolve: async (_r, { input }, ctx) => ({ user: await admin.createUser(ctx.prisma, input) }),
  }),
  createApiKey: t.field({
    type: CreateApiKeyPayload, authScopes: OPERATOR,
    args: { input: t.arg({ type: CreateApiKeyInput, required: true }) },
    resolve: (_r, { input }, ctx) => admin.createApiKey(ctx.prisma, input),
  }),
  revokeApiKey: t.field({
    type: RevokeApiKeyPayload, authScopes: OPERATOR,
    args: { input: t.arg({ type: RevokeApiKeyInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      const apiKey = ctx.events.apiKeyRevoked(await admin.revokeApiKey(ctx.prisma, input.apiKeyId));
      ctx.auth.keys.delete(apiKey.keyHash);
      return { apiKey };
    },
  }),
  setGroupPermission: t.field({
    type: OkPayload, authScopes: CATEGORY_ADMIN,
    args: { input: t.arg({ type: SetGroupPermissionInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      await admin.setGroupPermission(ctx.prisma, input.group, input.permission, input.value);
      ctx.permissions.invalidate();
      return { ok: true };
    },
  }),
  setCategoryPermission: t.field({
    type: OkPayload, authScopes: CATEGORY_ADMIN,
    args: { input: t.arg({ type: SetCategoryPermissionInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      await admin.setCategoryPermission(ctx.prisma, input.categoryId, input.group, input.permission, input.value);
      ctx.permissions.invalidate();
      return { ok: true };
    },
  }),
  createPrefix: t.field({
    type: CreatePrefixPayload, authScopes: CATEGORY_ADMIN,
    args: { input: t.arg({ type: CreatePrefixInput, required: true }) },
    resolve: async (_r, { input }, ctx) => ({ prefix: await admin.createPrefix(ctx.prisma, input.title) }),
  }),
  assignPrefix: t.field({
    type: OkPayload, authScopes: CATEGORY_ADMIN,
    args: { input: t.arg({ type: AssignPrefixInput, required: true }) },
    resolve: async (_r, { input }, ctx) => {
      await admin.assignPrefix(ctx.prisma, input.prefixId, input.categoryId);
      return { ok: true };
    },
  }),
}));
