// The operator's GraphQL reads: users, apiKeys (with last use), groups, effectivePermissions; and setUserGroups.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';
import { AuthCache, USE_RECORD_MS } from '../src/auth/visitor.js';

const USERS = `query($search: String, $page: Int, $perPage: Int) { users(search: $search, page: $page, perPage: $perPage) { nodes { userId username isAdmin groups } pagination { total page perPage lastPage } } }`;
const KEYS = `query($userId: Int, $active: Boolean) { apiKeys(userId: $userId, active: $active, perPage: 100) { nodes { apiKeyId type userId title isActive createdAt lastUsedAt revokedAt } pagination { total } } }`;
const GROUPS = `{ groups { groupId name isBuiltIn permissions } }`;
const EFFECTIVE = `query($u: Int!, $c: Int) { effectivePermissions(userId: $u, categoryId: $c) { permission granted decidedBy { groupName level categoryId value } rules { groupName level categoryId value } } }`;
const SET_GROUPS = `mutation($i: SetUserGroupsInput!) { setUserGroups(input: $i) { user { userId isAdmin isModerator groups } } }`;

forEachDatabase((kind) => {
  let t: TestApp;
  let alice: { userId: number; key: string };
  let admin: { userId: number; key: string };
  beforeAll(async () => {
    t = await startTestApp(kind);
    alice = await t.user(`alice_${kind}`);
    admin = await t.user(`boss_${kind}`, { isAdmin: true, scopes: ['mc_dm_category:read', 'mc_dm_category:write'] });
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('authorization', () => {
    it('refuses visitors without admin rights, and administrators whose key holds no write scope', async () => {
      const readOnlyAdmin = await t.user(`ro_${kind}`, {
        isAdmin: true,
        scopes: ['mc_dm_category:read', 'mc_dm_download:read'],
      });
      for (const q of [USERS, KEYS, GROUPS]) {
        expect((await t.gql(q, {}, alice.key)).codes).toEqual(['do_not_have_permission']);
        expect((await t.gql(q, {}, readOnlyAdmin.key)).codes).toEqual(['api_scope_missing']);
      }
      const r = await t.gql(EFFECTIVE, { u: alice.userId }, alice.key);
      expect(r.codes).toEqual(['do_not_have_permission']);
      expect(r.data.effectivePermissions).toBeNull();
      expect((await t.gql(USERS, {}, null)).codes).toEqual(['no_api_key_in_request']);
    });

    it('lets an administrator with a write scope read users, groups and keys', async () => {
      expect((await t.gql(USERS, {}, admin.key)).errors).toBeUndefined();
      expect((await t.gql(GROUPS, {}, admin.key)).errors).toBeUndefined();
      expect((await t.gql(KEYS, {}, admin.key)).errors).toBeUndefined();
    });
  });

  describe('users', () => {
    it('lists users by id with their groups, filtered by a case-insensitive name search, page by page', async () => {
      const all = (await t.gqlOk(USERS)).users;
      expect(all.nodes.map((u: any) => u.username)).toEqual(expect.arrayContaining([`alice_${kind}`, `boss_${kind}`]));
      const ids = all.nodes.map((u: any) => u.userId);
      expect(ids).toEqual([...ids].sort((a: number, b: number) => a - b));
      const found = (await t.gqlOk(USERS, { search: `ALICE_${kind.toUpperCase()}` })).users;
      expect(found.nodes).toEqual([
        { userId: alice.userId, username: `alice_${kind}`, isAdmin: false, groups: ['registered'] },
      ]);
      expect(found.pagination).toEqual({ total: 1, page: 1, perPage: 20, lastPage: 1 });
      const page2 = (await t.gqlOk(USERS, { page: 2, perPage: 1 })).users;
      expect(page2.nodes).toHaveLength(1);
      expect(page2.nodes[0].userId).toBe(ids[1]);
      expect((await t.gql(USERS, { page: 0 })).codes).toEqual(['invalid_input']);
    });
  });

  describe('apiKeys', () => {
    it('shows when a key was created and last used, and filters by user and state', async () => {
      const fresh = await t.key('USER', ['mc_dm_category:read'], alice.userId);
      let keys = (await t.gqlOk(KEYS, { userId: alice.userId })).apiKeys.nodes;
      expect(keys.every((k: any) => k.userId === alice.userId && k.type === 'USER')).toBe(true);
      const row = keys[keys.length - 1];
      expect(row.lastUsedAt).toBeNull();
      expect(Math.abs(row.createdAt - Date.now() / 1000)).toBeLessThan(120);

      expect((await t.rest('GET', '/api/mc-dm-categories/', { key: fresh })).status).toBe(200);
      await expect
        .poll(
          async () =>
            (await t.gqlOk(KEYS, { userId: alice.userId })).apiKeys.nodes.find((k: any) => k.apiKeyId === row.apiKeyId)
              .lastUsedAt,
          // the last use is a counter: a kept answer may show it up to the read cache's counter lag late
          { timeout: 5000 },
        )
        .toBeGreaterThan(0);

      await t.gqlOk(`mutation($id: Int!) { revokeApiKey(input: { apiKeyId: $id }) { apiKey { apiKeyId } } }`, {
        id: row.apiKeyId,
      });
      keys = (await t.gqlOk(KEYS, { userId: alice.userId, active: false })).apiKeys.nodes;
      expect(keys.map((k: any) => k.apiKeyId)).toEqual([row.apiKeyId]);
      expect(keys[0].revokedAt).toBeGreaterThan(0);
      expect(
        (await t.gqlOk(KEYS, { userId: alice.userId, active: true })).apiKeys.nodes.map((k: any) => k.apiKeyId),
      ).not.toContain(row.apiKeyId);
    });

    it('records use at most once a minute per key, without writing on every read', async () => {
      const key = await t.key('GUEST', ['mc_dm_category:read']);
      expect((await t.rest('GET', '/api/mc-dm-categories/', { key })).status).toBe(200);
      const row = await (async () => {
        for (let i = 0; i < 50; i++) {
          const r = await t.prisma.apiKey.findFirst({
            where: { type: 'guest', lastUsedAt: { not: null } },
            orderBy: { id: 'desc' },
          });
          if (r) return r;
          await new Promise((res) => setTimeout(res, 20));
        }
        throw new Error('lastUsedAt was never recorded');
      })();
      const old = new Date(Date.now() - 3_600_000);
      await t.prisma.apiKey.update({ where: { id: row.id }, data: { lastUsedAt: old } });
      for (let i = 0; i < 3; i++) expect((await t.rest('GET', '/api/mc-dm-categories/', { key })).status).toBe(200);
      await new Promise((res) => setTimeout(res, 100));
      expect((await t.prisma.apiKey.findUniqueOrThrow({ where: { id: row.id } })).lastUsedAt).toEqual(old);
    });

    it('hides super-user keys from an administrator acting through an ordinary key', async () => {
      const bySuper = (await t.gqlOk(KEYS)).apiKeys.nodes;
      expect(bySuper.some((k: any) => k.type === 'SUPER')).toBe(true);
      const byAdmin = (await t.gql(KEYS, {}, admin.key)).data.apiKeys;
      expect(byAdmin.nodes.length).toBeGreaterThan(0);
      expect(byAdmin.nodes.some((k: any) => k.type === 'SUPER')).toBe(false);
      expect(byAdmin.pagination.total).toBe(bySuper.filter((k: any) => k.type !== 'SUPER').length);
    });
  });

  describe('groups', () => {
    it('lists the four built-in groups with their global permissions', async () => {
      const { groups } = await t.gqlOk(GROUPS);
      expect(groups.map((g: any) => g.name)).toEqual(['guest', 'registered', 'moderator', 'administrator']);
      expect(groups[0]).toMatchObject({ isBuiltIn: true, permissions: ['download', 'view', 'viewComments'] });
    });
  });

  describe('effectivePermissions', () => {
    it('names the override on an ancestor category that refuses "add", and the global grant elsewhere', async () => {
      const top = (await t.gqlOk(`mutation { createCategory(input: { title: "Top" }) { category { categoryId } } }`))
        .createCategory.category.categoryId;
      const child = (
        await t.gqlOk(
          `mutation($p: Int) { createCategory(input: { title: "Child", parentCategoryId: $p }) { category { categoryId } } }`,
          { p: top },
        )
      ).createCategory.category.categoryId;
      await t.gqlOk(
        `mutation($c: Int!) { setCategoryPermission(input: { categoryId: $c, group: "registered", permission: "add", value: DENY }) { ok } }`,
        { c: top },
      );

      const inChild = (await t.gqlOk(EFFECTIVE, { u: alice.userId, c: child })).effectivePermissions;
      expect(inChild.map((p: any) => p.permission)).toContain('hardDeleteAny');
      expect(inChild.find((p: any) => p.permission === 'add')).toEqual({
        permission: 'add',
        granted: false,
        decidedBy: { groupName: 'registered', level: 'CATEGORY', categoryId: top, value: 'DENY' },
        rules: [{ groupName: 'registered', level: 'CATEGORY', categoryId: top, value: 'DENY' }],
      });
      expect(inChild.find((p: any) => p.permission === 'view')).toMatchObject({
        granted: true,
        decidedBy: { level: 'GLOBAL', value: 'ALLOW', categoryId: null },
      });
      expect(inChild.find((p: any) => p.permission === 'editAny')).toMatchObject({
        granted: false,
        decidedBy: { groupName: 'registered', level: 'GLOBAL', value: 'UNSET' },
      });

      const global = (await t.gqlOk(EFFECTIVE, { u: alice.userId })).effectivePermissions;
      expect(global.find((p: any) => p.permission === 'add')).toMatchObject({
        granted: true,
        decidedBy: { level: 'GLOBAL', value: 'ALLOW' },
      });
      // The answer matches what the service does: alice cannot add in the child category.
      const add = await t.rest('POST', '/api/mc-dm-downloads/', {
        key: alice.key,
        form: { category_id: child, title: 'x' },
      });
      expect(add.status).toBe(403);

      const guest = (await t.gqlOk(EFFECTIVE, { u: 0, c: child })).effectivePermissions;
      expect(guest.find((p: any) => p.permission === 'add')).toMatchObject({
        granted: false,
        decidedBy: { groupName: 'guest', level: 'GLOBAL', value: 'UNSET' },
      });
    });

    it('answers not_found for an unknown user or category', async () => {
      expect((await t.gql(EFFECTIVE, { u: 999999 })).codes).toEqual(['mc_dm_api_error.user_not_found']);
      expect((await t.gql(EFFECTIVE, { u: alice.userId, c: 999999 })).codes).toEqual([
        'mc_dm_api_error.category_not_found',
      ]);
    });
  });

  describe('setUserGroups', () => {
    it('replaces the secondary groups; the moderator flag follows the group', async () => {
      const u = await t.user(`mod_${kind}`);
      const r = (await t.gqlOk(SET_GROUPS, { i: { userId: u.userId, groups: ['moderator'] } })).setUserGroups.user;
      expect(r).toEqual({ userId: u.userId, isAdmin: false, isModerator: true, groups: ['registered', 'moderator'] });
      const back = (await t.gqlOk(SET_GROUPS, { i: { userId: u.userId, groups: [] } })).setUserGroups.user;
      expect(back).toMatchObject({ isModerator: false, groups: ['registered'] });
    });

    it('refuses unknown users and groups, and administrator changes without a super-user key, changing nothing', async () => {
      const u = await t.user(`target_${kind}`);
      expect((await t.gql(SET_GROUPS, { i: { userId: 999999, groups: [] } })).codes).toEqual([
        'mc_dm_api_error.user_not_found',
      ]);
      expect((await t.gql(SET_GROUPS, { i: { userId: u.userId, groups: ['moderator', 'wizards'] } })).codes).toEqual([
        'mc_dm_api_error.group_not_found',
      ]);
      expect(
        (await t.gql(SET_GROUPS, { i: { userId: u.userId, groups: ['administrator'] } }, admin.key)).codes,
      ).toEqual(['do_not_have_permission']);
      expect((await t.gql(SET_GROUPS, { i: { userId: u.userId, groups: [] } }, alice.key)).codes).toEqual([
        'do_not_have_permission',
      ]);
      const after = (await t.gqlOk(USERS, { search: `target_${kind}` })).users.nodes[0];
      expect(after).toMatchObject({ isAdmin: false, groups: ['registered'] });
      // An administrator may change an ordinary user's groups.
      expect(
        (await t.gql(SET_GROUPS, { i: { userId: u.userId, groups: ['moderator'] } }, admin.key)).errors,
      ).toBeUndefined();
    });
  });
});

describe('AuthCache.noteUse', () => {
  it('writes once per key per interval, and swallows a failed write', async () => {
    const writes: number[] = [];
    const prisma = {
      apiKey: {
        updateMany: async ({ where }: any) => {
          writes.push(where.id);
          throw new Error('database down');
        },
      },
    } as never;
    const cache = new AuthCache(0);
    const t0 = 1_000_000;
    cache.noteUse(prisma, 1, t0);
    cache.noteUse(prisma, 1, t0 + 1000);
    cache.noteUse(prisma, 2, t0 + 1000);
    cache.noteUse(prisma, 1, t0 + USE_RECORD_MS);
    await new Promise((res) => setTimeout(res, 10));
    expect(writes).toEqual([1, 2, 1]);
  });
});
