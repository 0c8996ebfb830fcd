// The operator's GraphQL mutations (contract §7): users, keys, permissions, prefixes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';
import { SCOPES } from '../src/permissions/names.js';

const CREATE_USER = `mutation($i: CreateUserInput!) { createUser(input: $i) { user { userId username isAdmin isModerator groups } } }`;
const CREATE_KEY = `mutation($i: CreateApiKeyInput!) { createApiKey(input: $i) { key apiKey { apiKeyId type scopes userId title isActive } } }`;
const SET_GROUP = `mutation($i: SetGroupPermissionInput!) { setGroupPermission(input: $i) { ok } }`;
const SET_CATEGORY = `mutation($i: SetCategoryPermissionInput!) { setCategoryPermission(input: $i) { ok } }`;
const CREATE_PREFIX = `mutation($i: CreatePrefixInput!) { createPrefix(input: $i) { prefix { prefixId title } } }`;
const ASSIGN_PREFIX = `mutation($i: AssignPrefixInput!) { assignPrefix(input: $i) { ok } }`;

forEachDatabase((kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('createUser', () => {
    it('puts the user in registered, plus moderator/administrator when flagged, plus named groups', async () => {
      const a = await t.gqlOk(CREATE_USER, { i: { username: 'carol' } });
      expect(a.createUser.user).toMatchObject({
        username: 'carol',
        isAdmin: false,
        isModerator: false,
        groups: ['registered'],
      });
      const b = await t.gqlOk(CREATE_USER, {
        i: { username: 'dave', isModerator: true, isAdmin: true, groups: ['guest'] },
      });
      expect(b.createUser.user.groups).toEqual(['registered', 'guest', 'moderator', 'administrator']);
    });

    it('refuses duplicates, unknown groups and empty names, creating nothing', async () => {
      const before = await t.prisma.user.count();
      expect((await t.gql(CREATE_USER, { i: { username: 'carol' } })).codes).toEqual([
        'mc_dm_api_error.username_taken',
      ]);
      expect((await t.gql(CREATE_USER, { i: { username: 'erin', groups: ['wizards'] } })).codes).toEqual([
        'mc_dm_api_error.group_not_found',
      ]);
      expect((await t.gql(CREATE_USER, { i: { username: '  ' } })).codes).toEqual(['required_input_missing']);
      expect((await t.gql(CREATE_USER, { i: {} })).codes).toEqual(['invalid_input']);
      expect(await t.prisma.user.count()).toBe(before);
    });

    it('needs admin rights and a write scope', async () => {
      const plain = await t.user(`plain_${kind}`);
      expect((await t.gql(CREATE_USER, { i: { username: 'x1' } }, plain.key)).codes).toEqual([
        'do_not_have_permission',
      ]);
      const adminReadOnly = await t.user(`ro_admin_${kind}`, {
        isAdmin: true,
        scopes: ['mc_dm_category:read', 'mc_dm_download:read'],
      });
      // A key without any write scope lacks a scope: api_scope_missing, as for every other scope requirement.
      expect((await t.gql(CREATE_USER, { i: { username: 'x2' } }, adminReadOnly.key)).codes).toEqual([
        'api_scope_missing',
      ]);
      const admin = await t.user(`admin_${kind}`, { isAdmin: true, scopes: ['mc_dm_download:write'] });
      expect((await t.gql(CREATE_USER, { i: { username: 'x3' } }, admin.key)).errors).toBeUndefined();
    });
  });

  describe('createApiKey / revokeApiKey', () => {
    it('creates keys of each type; "all" expands to the six scopes', async () => {
      const u = await t.gqlOk(CREATE_USER, { i: { username: `keyholder_${kind}` } });
      const userKey = await t.gqlOk(CREATE_KEY, {
        i: { type: 'USER', userId: u.createUser.user.userId, scopes: ['all'], title: 'CI' },
      });
      expect(userKey.createApiKey.apiKey).toMatchObject({
        type: 'USER',
        scopes: [...SCOPES],
        userId: u.createUser.user.userId,
        title: 'CI',
        isActive: true,
      });
      const guest = await t.gqlOk(CREATE_KEY, {
        i: { type: 'GUEST', scopes: ['mc_dm_category:read', 'mc_dm_category:read'] },
      });
      expect(guest.createApiKey.apiKey).toMatchObject({ type: 'GUEST', scopes: ['mc_dm_category:read'], userId: null });
      const superKey = await t.gqlOk(CREATE_KEY, { i: { type: 'SUPER', scopes: ['mc_dm_download:read'] } });
      const r = await t.rest('GET', '/api/mc-dm-categories/', { key: superKey.createApiKey.key });
      expect(r.body.errors[0].code).toBe('api_scope_missing');
    });

    it('refuses bad requests', async () => {
      const before = await t.prisma.apiKey.count();
      expect((await t.gql(CREATE_KEY, { i: { type: 'USER', scopes: ['all'] } })).codes).toEqual([
        'required_input_missing',
      ]);
      expect((await t.gql(CREATE_KEY, { i: { type: 'USER', userId: 99999, scopes: ['all'] } })).codes).toEqual([
        'mc_dm_api_error.user_not_found',
      ]);
      expect((await t.gql(CREATE_KEY, { i: { type: 'GUEST', userId: 1, scopes: ['all'] } })).codes).toEqual([
        'invalid_input',
      ]);
      expect((await t.gql(CREATE_KEY, { i: { type: 'SUPER', scopes: ['root'] } })).codes).toEqual(['invalid_input']);
      expect((await t.gql(CREATE_KEY, { i: { type: 'SUPER', scopes: [] } })).codes).toEqual(['invalid_input']);
      expect((await t.gql(CREATE_KEY, { i: { type: 'ROOT', scopes: ['all'] } })).codes).toEqual(['invalid_input']);
      expect(await t.prisma.apiKey.count()).toBe(before);
      expect(
        (await t.gql(`mutation { revokeApiKey(input: { apiKeyId: 99999 }) { apiKey { apiKeyId } } }`)).codes,
      ).toEqual(['mc_dm_api_error.api_key_not_found']);
    });
  });

  describe('group and category permissions', () => {
    it('setGroupPermission changes what a group holds everywhere', async () => {
      const guestKey = await t.key('GUEST', ['mc_dm_category:read']);
      const cat = await t.gqlOk(`mutation { createCategory(input: { title: "Perm" }) { category { categoryId } } }`);
      const id = cat.createCategory.category.categoryId;
      expect((await t.rest('GET', `/api/mc-dm-categories/${id}/`, { key: guestKey })).status).toBe(200);
      expect(
        (await t.gqlOk(SET_GROUP, { i: { group: 'guest', permission: 'view', value: 'DENY' } })).setGroupPermission,
      ).toEqual({ ok: true });
      expect((await t.rest('GET', `/api/mc-dm-categories/${id}/`, { key: guestKey })).status).toBe(403);
      await t.gqlOk(SET_GROUP, { i: { group: 'guest', permission: 'view', value: 'ALLOW' } });
      expect((await t.rest('GET', `/api/mc-dm-categories/${id}/`, { key: guestKey })).status).toBe(200);
    });

    it('setCategoryPermission overrides per category and INHERIT removes the override', async () => {
      const u = await t.user(`adder_${kind}`);
      const cat = await t.gqlOk(`mutation { createCategory(input: { title: "Adds" }) { category { categoryId } } }`);
      const id = cat.createCategory.category.categoryId;
      const canAdd = async () =>
        (await t.gqlOk(`{ category(categoryId: ${id}) { canAddDownload } }`, {}, u.key)).category.canAddDownload;
      expect(await canAdd()).toBe(true);
      await t.gqlOk(SET_CATEGORY, { i: { categoryId: id, group: 'registered', permission: 'add', value: 'DENY' } });
      expect(await canAdd()).toBe(false);
      await t.gqlOk(SET_CATEGORY, { i: { categoryId: id, group: 'registered', permission: 'add', value: 'INHERIT' } });
      expect(await canAdd()).toBe(true);
      expect(await t.prisma.categoryPermission.count({ where: { categoryId: id } })).toBe(0);
    });

    it('refuses unknown permissions, groups and categories', async () => {
      expect((await t.gql(SET_GROUP, { i: { group: 'guest', permission: 'fly', value: 'ALLOW' } })).codes).toEqual([
        'invalid_input',
      ]);
      expect((await t.gql(SET_GROUP, { i: { group: 'nobody', permission: 'view', value: 'ALLOW' } })).codes).toEqual([
        'mc_dm_api_error.group_not_found',
      ]);
      expect(
        (await t.gql(SET_CATEGORY, { i: { categoryId: 99999, group: 'guest', permission: 'view', value: 'DENY' } }))
          .codes,
      ).toEqual(['mc_dm_api_error.category_not_found']);
      expect(
        (await t.gql(SET_CATEGORY, { i: { categoryId: 1, group: 'guest', permission: 'view', value: 'MAYBE' } })).codes,
      ).toEqual(['invalid_input']);
    });

    it('needs admin rights and mc_dm_category:write', async () => {
      const mod = await t.user(`mod_${kind}`, { isModerator: true });
      expect(
        (await t.gql(SET_GROUP, { i: { group: 'guest', permission: 'view', value: 'ALLOW' } }, mod.key)).codes,
      ).toEqual(['do_not_have_permission']);
      const noScope = await t.key('SUPER', ['mc_dm_download:write']);
      const r = await t.gql(SET_GROUP, { i: { group: 'guest', permission: 'view', value: 'ALLOW' } }, noScope);
      expect(r.codes).toEqual(['api_scope_missing']);
    });
  });

  describe('prefixes', () => {
    it('creates a prefix and assigns it to a category, idempotently', async () => {
      const p = await t.gqlOk(CREATE_PREFIX, { i: { title: ' Beta ' } });
      expect(p.createPrefix.prefix.title).toBe('Beta');
      const cat = await t.gqlOk(
        `mutation { createCategory(input: { title: "Prefixed" }) { category { categoryId } } }`,
      );
      const i = { prefixId: p.createPrefix.prefix.prefixId, categoryId: cat.createCategory.category.categoryId };
      expect((await t.gqlOk(ASSIGN_PREFIX, { i })).assignPrefix).toEqual({ ok: true });
      await t.gqlOk(ASSIGN_PREFIX, { i });
      expect(await t.prisma.categoryPrefix.count({ where: i })).toBe(1);
    });

    it('simultaneous assignments of one pair, and simultaneous grants of one permission, all succeed', async () => {
      // Found by test/authz-matrix.test.ts on PostgreSQL: concurrent assignPrefix calls answered 500 (a unique violation).
      const p = await t.gqlOk(CREATE_PREFIX, { i: { title: 'Race' } });
      const cat = await t.gqlOk(`mutation { createCategory(input: { title: "Race" }) { category { categoryId } } }`);
      const i = { prefixId: p.createPrefix.prefix.prefixId, categoryId: cat.createCategory.category.categoryId };
      const assigned = await Promise.all(Array.from({ length: 12 }, () => t.gql(ASSIGN_PREFIX, { i })));
      expect(assigned.map((r) => r.codes)).toEqual(Array.from({ length: 12 }, () => []));
      expect(await t.prisma.categoryPrefix.count({ where: i })).toBe(1);
      await t.prisma.group.create({ data: { name: `race_${kind}` } });
      const grants = await Promise.all(
        Array.from({ length: 12 }, () =>
          t.gql(SET_GROUP, { i: { group: `race_${kind}`, permission: 'view', value: 'ALLOW' } }),
        ),
      );
      expect(grants.map((r) => r.codes)).toEqual(Array.from({ length: 12 }, () => []));
      expect(
        await t.prisma.groupPermission.count({ where: { group: { name: `race_${kind}` }, permission: 'view' } }),
      ).toBe(1);
    });

    it('refuses empty titles and unknown ids', async () => {
      expect((await t.gql(CREATE_PREFIX, { i: { title: '' } })).codes).toEqual(['required_input_missing']);
      expect((await t.gql(ASSIGN_PREFIX, { i: { prefixId: 99999, categoryId: 1 } })).codes).toEqual([
        'mc_dm_api_error.prefix_not_found',
      ]);
      const p = await t.gqlOk(CREATE_PREFIX, { i: { title: 'Alpha' } });
      expect(
        (await t.gql(ASSIGN_PREFIX, { i: { prefixId: p.createPrefix.prefix.prefixId, categoryId: 99999 } })).codes,
      ).toEqual(['mc_dm_api_error.category_not_found']);
    });
  });
});
