// The operator's mutations (contract §7). Users and keys: admin rights and any write scope.
// Permissions and prefixes: admin rights and mc_dm_category:write.
import { builder, unix } from '../../graphql/builder.js';
import * as admin from './rules.js';
import { okPayloadOf, payloadOf } from '../../graphql/payloads.js';
import { CategoryRef } from '../categories/index.js';
import { NodeRef, registerNode } from '../../graphql/node.js';
import { notFound, noPermission } from '../../errors.js';
import { firstArg, firstOf } from '../../graphql/pagination.js';

const CATEGORY_WRITE = ['mc_dm_category:write'];

export const UserRef = builder.prismaObject('User', {
  description:
    'A forum member: the owner of downloads, the author of comments, a team member. Its name and staff flags are public; its groups are shown to administrators.',
  interfaces: [NodeRef],
  fields: (t) => ({
    userId: t.exposeInt('id', { description: "The numeric user id (the REST API's `user_id`)." }),
    username: t.exposeString('username', { description: 'The unique display name.' }),
    isAdmin: t.exposeBoolean('isAdmin', {
      description: 'An administrator: holds admin rights for categories, users and keys.',
    }),
    isModerator: t.exposeBoolean('isModerator', { description: 'A moderator: sees moderated and deleted content.' }),
    groups: t.stringList({
      nullable: true,
      description:
        'Group names, primary group first, then secondary groups: the first `first` of them. Administrators and super-user keys only (null for others).',
      authScopes: { admin: true },
      args: { first: firstArg(t.arg, 'groups') },
      resolve: async (u, args, ctx) => {
        const first = firstOf(args.first);
        const rows = await ctx.prisma.group.findMany({
          where: { OR: [{ id: u.primaryGroupId }, { members: { some: { userId: u.id } } }] },
        });
        return rows
          .sort((a, b) => Number(b.id === u.primaryGroupId) - Number(a.id === u.primaryGroupId) || a.id - b.id)
          .slice(0, first)
          .map((g) => g.name);
      },
    }),
  }),
});

const ApiKeyTypeEnum = builder.enumType('ApiKeyType', {
  description: 'Whom requests with a key act as. Whatever the type, each operation also needs its scope.',
  values: {
    GUEST: { value: 'guest', description: "Acts as the guest visitor (userId 0), with the guest group's permissions." },
    USER: { value: 'user', description: "Acts as its bound user, with that user's groups and flags." },
    SUPER: {
      value: 'super',
      description:
        'A super-user key: passes every permission and admin check. Acts as the user named in the Forum-Api-User header, or as the guest without it.',
    },
  } as const,
});

export const ApiKeyRef = builder.prismaObject('ApiKey', {
  description:
    'An API key as stored: its type, scopes and state. The key itself is never stored, only shown once by createApiKey.',
  interfaces: [NodeRef],
  fields: (t) => ({
    apiKeyId: t.exposeInt('id', { description: 'The numeric key id, for revokeApiKey.' }),
    type: t.expose('type', { type: ApiKeyTypeEnum, description: 'Whom requests with this key act as.' }),
    userId: t.exposeInt('userId', {
      nullable: true,
      description: 'The bound user of a USER key; null for GUEST and SUPER keys.',
    }),
    user: t.relation('user', { nullable: true, description: 'The bound user of a USER key.' }),
    scopes: t.exposeStringList('scopes', { description: 'The scopes the key holds (a subset of the six API scopes).' }),
    title: t.exposeString('title', { description: 'A label chosen when the key was created.' }),
    isActive: t.exposeBoolean('isActive', {
      description: 'False once revoked. Requests with a revoked or expired key answer api_key_inactive.',
    }),
    createdAt: t.int({ description: 'When the key was created, in Unix seconds.', resolve: (k) => unix(k.createdAt) }),
    lastUsedAt: t.int({
      nullable: true,
      description:
        'When a request last authenticated with the key, in Unix seconds; null if never. Recorded at most once a minute per key and server instance, so it may lag by up to a minute.',
      resolve: (k) => (k.lastUsedAt ? unix(k.lastUsedAt) : null),
    }),
    revokedAt: t.int({
      nullable: true,
      description: 'When the key was revoked, in Unix seconds; null while active.',
      resolve: (k) => (k.revokedAt ? unix(k.revokedAt) : null),
    }),
  }),
});

const PermissionValueEnum = builder.enumType('PermissionValue', {
  description:
    "A group's setting for one permission, globally or in one category. A visitor holds a permission when any of their groups is allowed it.",
  values: {
    ALLOW: {
      value: 'allow',
      description:
        'Grants the permission: globally, or in the category and its subcategories (unless they override it). The granter must hold the permission there, unless using a super-user key.',
    },
    DENY: {
      value: 'deny',
      description:
        'In a category: refuses the permission there and in its subcategories, whatever the parent or global setting says. Globally: withdraws the grant, as INHERIT does.',
    },
    INHERIT: {
      value: 'inherit',
      description:
        'In a category: removes the override, so the parent category (or, at the top, the global setting) decides. Globally: withdraws the grant.',
    },
  } as const,
});

export const PrefixRef = builder.prismaObject('Prefix', {
  description:
    'A label shown before a download\'s title ("Beta", "Stable"); a category offers the prefixes assigned to it.',
  interfaces: [NodeRef],
  fields: (t) => ({
    prefixId: t.exposeInt('id', { description: "The numeric prefix id (the REST API's `prefix_id`)." }),
    title: t.exposeString('title', { description: 'The label text.' }),
    categoryIds: t.intList({
      description: 'The categories that offer this prefix (assignPrefix), by id: the first `first` of them.',
      args: { first: firstArg(t.arg, 'category ids') },
      select: (args) => ({
        categories: {
          select: { categoryId: true },
          orderBy: { categoryId: 'asc' as const },
          take: firstOf(args.first),
        },
      }),
      resolve: (p) => p.categories.map((c) => c.categoryId),
    }),
  }),
});

export const GroupRef = builder.prismaObject('Group', {
  description:
    'A user group. Permissions are granted to groups, globally and per category; a user holds a permission when any of their groups does.',
  interfaces: [NodeRef],
  fields: (t) => ({
    groupId: t.exposeInt('id', { description: 'The numeric group id.' }),
    name: t.exposeString('name', {
      description: 'The unique name used by the admin mutations (guest, registered, moderator, administrator, …).',
    }),
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
  const access = await ctx.access();
  if (!access.hasAdminRights) throw noPermission('see API keys');
  const key = await ctx.prisma.apiKey.findUnique({ where: { id } });
  // Super-user keys are shown to super-user keys only (as in the apiKeys list).
  if (!key || (key.type === 'super' && !access.isSuper)) throw notFound('api_key', id);
  return key;
});

const CreateUserInput = builder.inputType('CreateUserInput', {
  description: 'A new user. Its primary group is `registered`.',
  fields: (t) => ({
    username: t.string({ required: true, description: 'A unique name, 1 to 50 characters after trimming.' }),
    isAdmin: t.boolean({
      required: false,
      description: 'Make the user an administrator (adds the `administrator` group). Only a super-user key may.',
    }),
    isModerator: t.boolean({ required: false, description: 'Make the user a moderator (adds the `moderator` group).' }),
    groups: t.stringList({
      required: false,
      description: 'Extra group names besides `registered`; an unknown name answers mc_dm_api_error.group_not_found.',
    }),
  }),
});
const SetUserGroupsInput = builder.inputType('SetUserGroupsInput', {
  description: 'A user and the secondary groups they should have.',
  fields: (t) => ({
    userId: t.int({ required: true, description: 'The user to change.' }),
    groups: t.stringList({
      required: true,
      description:
        'Every secondary group the user should be in (the primary group `registered` stays); `[]` leaves only the primary group. The user is a moderator or an administrator exactly when `moderator` or `administrator` is listed.',
    }),
  }),
});
const CreateApiKeyInput = builder.inputType('CreateApiKeyInput', {
  description: 'A new API key.',
  fields: (t) => ({
    type: t.field({
      type: ApiKeyTypeEnum,
      required: true,
      description: 'GUEST, USER or SUPER; only a super-user key may create SUPER keys.',
    }),
    userId: t.int({
      required: false,
      description: 'The bound user: required for USER keys, refused (invalid_input) for the others.',
    }),
    scopes: t.stringList({
      required: true,
      description:
        'At least one of mc_dm_category:read, mc_dm_category:write, mc_dm_category:delete_hard, mc_dm_download:read, mc_dm_download:write, mc_dm_download:delete_hard, or ["all"]. Each must be held by the key making the request.',
    }),
    title: t.string({ required: false, description: 'A label to recognise the key by.' }),
  }),
});
const RevokeApiKeyInput = builder.inputType('RevokeApiKeyInput', {
  description: 'Which key to revoke.',
  fields: (t) => ({ apiKeyId: t.int({ required: true, description: 'The numeric key id (ApiKey.apiKeyId).' }) }),
});
const SetGroupPermissionInput = builder.inputType('SetGroupPermissionInput', {
  description: "A group's global setting for one permission.",
  fields: (t) => ({
    group: t.string({ required: true, description: 'The group name, e.g. registered.' }),
    permission: t.string({
      required: true,
      description:
        'A permission name: view, viewComments, download, add, comment, editOwn, editAny, deleteOwn, deleteAny, hardDeleteAny, moveAny, bypassApproval, bypassCommentApproval, viewModerated, viewDeleted, editOwnComment, editAnyComment, deleteOwnComment or deleteAnyComment.',
    }),
    value: t.field({
      type: PermissionValueEnum,
      required: true,
      description: 'ALLOW grants it everywhere; DENY and INHERIT withdraw the global grant.',
    }),
  }),
});
const SetCategoryPermissionInput = builder.inputType('SetCategoryPermissionInput', {
  description: "A group's override of one permission in one category (and its subcategories).",
  fields: (t) => ({
    categoryId: t.int({ required: true, description: 'The category the override applies to.' }),
    group: t.string({ required: true, description: 'The group name, e.g. registered.' }),
    permission: t.string({
      required: true,
      description: 'A permission name, as for setGroupPermission (e.g. view, add, editOwn).',
    }),
    value: t.field({
      type: PermissionValueEnum,
      required: true,
      description: 'ALLOW or DENY set the override; INHERIT removes it.',
    }),
  }),
});
const CreatePrefixInput = builder.inputType('CreatePrefixInput', {
  description: 'A new prefix.',
  fields: (t) => ({
    title: t.string({ required: true, description: 'The label, 1 to 50 characters after trimming.' }),
  }),
});
const AssignPrefixInput = builder.inputType('AssignPrefixInput', {
  description: 'A prefix and the category that should offer it.',
  fields: (t) => ({
    prefixId: t.int({ required: true, description: 'The prefix to offer.' }),
    categoryId: t.int({ required: true, description: 'The category to offer it in (subcategories are not included).' }),
  }),
});

const CreateUserPayload = payloadOf('CreateUserPayload', 'user', UserRef);
const SetUserGroupsPayload = payloadOf('SetUserGroupsPayload', 'user', UserRef);
const CreateApiKeyPayload = builder
  .objectRef<Awaited<ReturnType<typeof admin.createApiKey>>>('CreateApiKeyPayload')
  .implement({
    description: 'What `createApiKey` returns: the key itself, once, and its stored record.',
    fields: (t) => ({
      key: t.exposeString('key', {
        description: 'The key itself. It is shown only this once; only its hash is stored.',
      }),
      apiKey: t.field({ type: ApiKeyRef, description: 'The stored record of the new key.', resolve: (p) => p.apiKey }),
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

const OPERATOR = { anyWrite: true, admin: true } as const;
const CATEGORY_ADMIN = { scope: CATEGORY_WRITE, admin: true };

builder.mutationFields((t) => ({
  createUser: t.field({
    nullable: true,
    description:
      'Creates a forum user. Needs admin rights and any write scope; only a super-user key may create administrators. Errors: required_input_missing (username), invalid_input, mc_dm_api_error.username_taken, mc_dm_api_error.group_not_found, do_not_have_permission.',
    type: CreateUserPayload,
    authScopes: OPERATOR,
    args: { input: t.arg({ type: CreateUserInput, required: true, description: 'The new user.' }) },
    resolve: async (_r, { input }, ctx) => ({ user: await admin.createUser(ctx.prisma, await ctx.access(), input) }),
  }),
  setUserGroups: t.field({
    nullable: true,
    description:
      "Replaces a user's secondary groups; the moderator and administrator flags follow the `moderator` and `administrator` groups. Needs admin rights and any write scope; only a super-user key may make or unmake an administrator or change another administrator's groups. Errors: mc_dm_api_error.user_not_found, mc_dm_api_error.group_not_found, do_not_have_permission.",
    type: SetUserGroupsPayload,
    authScopes: OPERATOR,
    args: { input: t.arg({ type: SetUserGroupsInput, required: true, description: 'The user and their groups.' }) },
    resolve: async (_r, { input }, ctx) => {
      const user = await admin.setUserGroups(ctx.prisma, await ctx.access(), input.userId, input.groups);
      ctx.auth.userChanged(user.id);
      return { user };
    },
  }),
  createApiKey: t.field({
    nullable: true,
    description:
      'Creates an API key and returns it once; only its hash is stored. Needs admin rights and any write scope. A key cannot exceed the one creating it: its scopes must all be held by the requesting key (else api_scope_missing, params.scopes), and only a super-user key may create SUPER keys or keys for another administrator (else do_not_have_permission). Errors also: required_input_missing (userId of a USER key), invalid_input, mc_dm_api_error.user_not_found.',
    type: CreateApiKeyPayload,
    authScopes: OPERATOR,
    args: {
      input: t.arg({ type: CreateApiKeyInput, required: true, description: "The key's type, user and scopes." }),
    },
    resolve: async (_r, { input }, ctx) => admin.createApiKey(ctx.prisma, await ctx.access(), input),
  }),
  revokeApiKey: t.field({
    nullable: true,
    description:
      "Revokes an API key: requests with it then answer api_key_inactive (on other server instances within a few seconds). Revoking a revoked key changes nothing. Needs admin rights and any write scope; only a super-user key may revoke SUPER keys or another administrator's keys. Errors: mc_dm_api_error.api_key_not_found, do_not_have_permission.",
    type: RevokeApiKeyPayload,
    authScopes: OPERATOR,
    args: { input: t.arg({ type: RevokeApiKeyInput, required: true, description: 'The key to revoke.' }) },
    resolve: async (_r, { input }, ctx) => {
      const apiKey = ctx.events.apiKeyRevoked(await admin.revokeApiKey(ctx.prisma, await ctx.access(), input.apiKeyId));
      ctx.auth.keyChanged(apiKey.keyHash);
      return { apiKey };
    },
  }),
  setGroupPermission: t.field({
    nullable: true,
    description:
      "Sets a group's global setting for one permission. Needs mc_dm_category:write and admin rights; ALLOW also needs the requester to hold the permission, unless using a super-user key. Errors: mc_dm_api_error.group_not_found, invalid_input (unknown permission), do_not_have_permission.",
    type: SetGroupPermissionPayload,
    authScopes: CATEGORY_ADMIN,
    args: {
      input: t.arg({
        type: SetGroupPermissionInput,
        required: true,
        description: 'The group, the permission and its value.',
      }),
    },
    resolve: async (_r, { input }, ctx) => {
      await admin.setGroupPermission(ctx.prisma, await ctx.access(), input.group, input.permission, input.value);
      ctx.permissions.invalidate();
      return { ok: true as const, group: await ctx.prisma.group.findUniqueOrThrow({ where: { name: input.group } }) };
    },
  }),
  setCategoryPermission: t.field({
    nullable: true,
    description:
      "Sets or removes a group's override of one permission in a category; it applies to the subcategories too, unless they override it. Needs mc_dm_category:write and admin rights; ALLOW also needs the requester to hold the permission in that category, unless using a super-user key. Errors: mc_dm_api_error.category_not_found, mc_dm_api_error.group_not_found, invalid_input (unknown permission), do_not_have_permission.",
    type: SetCategoryPermissionPayload,
    authScopes: CATEGORY_ADMIN,
    args: {
      input: t.arg({
        type: SetCategoryPermissionInput,
        required: true,
        description: 'The category, the group, the permission and its value.',
      }),
    },
    resolve: async (_r, { input }, ctx) => {
      await admin.setCategoryPermission(
        ctx.prisma,
        await ctx.access(),
        input.categoryId,
        input.group,
        input.permission,
        input.value,
      );
      ctx.permissions.invalidate();
      return {
        ok: true as const,
        category: await ctx.prisma.category.findUniqueOrThrow({ where: { id: input.categoryId } }),
      };
    },
  }),
  createPrefix: t.field({
    nullable: true,
    description:
      'Creates a download title prefix; assignPrefix then offers it in categories. Needs mc_dm_category:write and admin rights. Errors: required_input_missing (title), invalid_input (over 50 characters).',
    type: CreatePrefixPayload,
    authScopes: CATEGORY_ADMIN,
    args: { input: t.arg({ type: CreatePrefixInput, required: true, description: 'The prefix label.' }) },
    resolve: async (_r, { input }, ctx) => ({ prefix: await admin.createPrefix(ctx.prisma, input.title) }),
  }),
  assignPrefix: t.field({
    nullable: true,
    description:
      'Offers a prefix in a category, so downloads there may use it (assigning it twice changes nothing). Needs mc_dm_category:write and admin rights. Errors: mc_dm_api_error.prefix_not_found, mc_dm_api_error.category_not_found.',
    type: AssignPrefixPayload,
    authScopes: CATEGORY_ADMIN,
    args: { input: t.arg({ type: AssignPrefixInput, required: true, description: 'The prefix and the category.' }) },
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
