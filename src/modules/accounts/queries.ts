// The operator's reads: users, API keys, groups, and a user's effective permissions with the rule that decided each.
// Like the admin mutations, they need admin rights (a super-user key or an administrator) and any write scope.
import { LIMITS } from '../../config.js';
import { builder } from '../../graphql/builder.js';
import { firstArg, firstOf, listOf, pageArgs } from '../../graphql/pagination.js';
import { pageWindow } from '../../db/lists.js';
import { ApiKeyRef, GroupRef, PrefixRef, UserRef } from './schema.js';
import * as reads from './reads.js';

const OPERATOR = { admin: true, anyWrite: true } as const;

const UserList = listOf('User', UserRef);
const ApiKeyList = listOf('ApiKey', ApiKeyRef);

const PermissionLevelEnum = builder.enumType('PermissionLevel', {
  description: 'Where the rule that decided a permission is set.',
  values: {
    GLOBAL: { value: 'global', description: "The group's global setting (no category override on the way up)." },
    CATEGORY: {
      value: 'category',
      description: 'An override on a category: the one asked about or its nearest ancestor with one.',
    },
  } as const,
});

const PermissionRuleValueEnum = builder.enumType('PermissionRuleValue', {
  description: "What a group's rule says about a permission.",
  values: {
    ALLOW: { value: 'allow', description: 'The group holds the permission (a global grant, or an ALLOW override).' },
    DENY: { value: 'deny', description: 'A DENY override on a category refuses it to the group there and below.' },
    UNSET: {
      value: 'unset',
      description: 'No override on the way up and no global grant: the group does not hold it.',
    },
  } as const,
});

const PermissionRuleRef = builder.objectRef<reads.NamedRule>('PermissionRule').implement({
  description: 'The rule one group follows for one permission in one place.',
  fields: (t) => ({
    groupId: t.exposeInt('groupId', { description: "The group's numeric id." }),
    groupName: t.exposeString('groupName', {
      description: "The group's name (as used by setGroupPermission and setCategoryPermission).",
    }),
    level: t.field({
      type: PermissionLevelEnum,
      description: 'GLOBAL setting or CATEGORY override.',
      resolve: (r) => r.level,
    }),
    categoryId: t.int({
      nullable: true,
      description: 'The category holding the override (the one asked about or an ancestor); null for GLOBAL.',
      resolve: (r) => r.categoryId,
    }),
    value: t.field({ type: PermissionRuleValueEnum, description: 'What the rule says.', resolve: (r) => r.value }),
  }),
});

const EffectivePermissionRef = builder.objectRef<reads.PermissionExplanation>('EffectivePermission').implement({
  description:
    "Whether a user holds one permission, and why. A user holds a permission when any of their groups' rules allows it.",
  fields: (t) => ({
    permission: t.exposeString('permission', { description: 'The permission name (view, add, editOwn, …).' }),
    granted: t.exposeBoolean('granted', { description: 'Whether the user holds it there.' }),
    decidedBy: t.field({
      type: PermissionRuleRef,
      nullable: true,
      description:
        "The rule that decided: when granted, the first group whose rule allows; when refused, the first DENY override among the user's groups, else the primary group's (unset) global setting.",
      resolve: (p) => p.decidedBy,
    }),
    rules: t.field({
      type: [PermissionRuleRef],
      description: "Each group's rule, primary group first: the rules of the user's first `first` groups.",
      args: { first: firstArg(t.arg, 'rules') },
      resolve: (p, args) => p.rules.slice(0, firstOf(args.first)),
    }),
  }),
});

builder.queryFields((t) => {
  const { page, perPage } = pageArgs(t.arg);
  return {
    users: t.field({
      type: UserList,
      nullable: true,
      authScopes: OPERATOR,
      description: 'Forum users by id, optionally filtered by name. Needs admin rights and any write scope.',
      args: {
        page,
        perPage,
        search: t.arg.string({ required: false, description: 'Only users whose name contains this text (any case).' }),
      },
      resolve: (_r, args, ctx) => reads.listUsers(ctx.prisma, args),
    }),
    apiKeys: t.field({
      type: ApiKeyList,
      nullable: true,
      authScopes: OPERATOR,
      description:
        'API keys by id, with their last use (never the keys themselves). Needs admin rights and any write scope; super-user keys are listed to super-user keys only.',
      args: {
        page,
        perPage,
        userId: t.arg.int({ required: false, description: 'Only the USER keys bound to this user.' }),
        active: t.arg.boolean({
          required: false,
          description: 'true: only active keys; false: only revoked ones; omitted: both.',
        }),
      },
      resolve: async (_r, args, ctx) => reads.listApiKeys(ctx.prisma, await ctx.access(), args),
    }),
    groups: t.field({
      type: [GroupRef],
      nullable: true,
      authScopes: OPERATOR,
      description: `User groups with their global permissions, by id, one page (\`page\`, \`perPage\`: default ${LIMITS.defaultPageSize}, at most ${LIMITS.maxPageSize}) at a time. Needs admin rights and any write scope.`,
      args: { page, perPage },
      resolve: (_r, args, ctx) => reads.listGroups(ctx.prisma, pageWindow(args)),
    }),
    prefixes: t.field({
      type: [PrefixRef],
      nullable: true,
      authScopes: OPERATOR,
      description: `Download title prefixes with the categories offering them, by id, one page (\`page\`, \`perPage\`: default ${LIMITS.defaultPageSize}, at most ${LIMITS.maxPageSize}) at a time. Needs admin rights and any write scope.`,
      args: { page, perPage },
      resolve: (_r, args, ctx) => reads.listPrefixes(ctx.prisma, pageWindow(args)),
    }),
    effectivePermissions: t.field({
      type: [EffectivePermissionRef],
      nullable: true,
      authScopes: OPERATOR,
      description:
        'Every permission of a user, globally or in one category, with the group rule that decided it: the answer to "why can\'t this user add here?". Group permissions only: a super-user key passes every check, and admin rights come from the user\'s admin flag. Needs admin rights and any write scope. Errors: mc_dm_api_error.user_not_found, mc_dm_api_error.category_not_found.',
      args: {
        userId: t.arg.int({ required: true, description: 'The user; 0 asks about the guest visitor.' }),
        categoryId: t.arg.int({
          required: false,
          description: 'The category; omitted asks about the global settings.',
        }),
      },
      resolve: async (_r, args, ctx) =>
        (await reads.effectivePermissions(ctx.prisma, args.userId, args.categoryId)).permissions,
    }),
  };
});
