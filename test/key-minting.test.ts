// Nothing an operator mints or grants exceeds what the acting key holds: every minting key type × its scopes ×
// requested type × requested scopes, through GraphQL (the only face that mints keys), on both databases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';
import { SCOPES } from '../src/permissions/names.js';

const CREATE_KEY = `mutation($i: CreateApiKeyInput!) { createApiKey(input: $i) { key apiKey { apiKeyId type scopes } } }`;
const REVOKE_KEY = `mutation($i: RevokeApiKeyInput!) { revokeApiKey(input: $i) { apiKey { apiKeyId isActive } } }`;
const CREATE_USER = `mutation($i: CreateUserInput!) { createUser(input: $i) { user { userId } } }`;
const SET_GROUP = `mutation($i: SetGroupPermissionInput!) { setGroupPermission(input: $i) { ok } }`;
const SET_CATEGORY = `mutation($i: SetCategoryPermissionInput!) { setCategoryPermission(input: $i) { ok } }`;

type Minter = 'super-all' | 'super-scoped' | 'admin-all' | 'admin-scoped' | 'user-all' | 'guest-all';
type Target = 'GUEST' | 'USER-self' | 'USER-plain' | 'USER-admin' | 'SUPER';
type Ask = 'all' | 'subset' | 'beyond';

/** The scopes each minting key holds. */
const HOLDS: Record<Minter, readonly string[]> = {
  'super-all': SCOPES,
  'super-scoped': ['mc_dm_download:read', 'mc_dm_download:write', 'mc_dm_category:read'],
  'admin-all': SCOPES,
  'admin-scoped': ['mc_dm_download:write'],
  'user-all': SCOPES,
  'guest-all': SCOPES,
};

/**
 * The rules, as a reviewer reads them. Returns the expected error code, or null for success.
 * 1. Only super-user keys and administrators mint keys at all (and they need a write scope).
 * 2. Only super-user keys mint SUPER keys or keys for another administrator.
 * 3. The new key's scopes must be a subset of the minting key's.
 */
function expected(minter: Minter, target: Target, ask: Ask): string | null {
  const isSuper = minter.startsWith('super');
  const isAdmin = minter.startsWith('admin');
  if (!isSuper && !isAdmin) return 'do_not_have_permission';
  if (!isSuper && (target === 'SUPER' || target === 'USER-admin')) return 'do_not_have_permission';
  const requested =
    ask === 'all'
      ? SCOPES
      : ask === 'subset'
        ? HOLDS[minter].slice(0, 1)
        : SCOPES.filter((s) => !HOLDS[minter].includes(s)).slice(0, 1);
  if (requested.length === 0) return null; // nothing beyond an all-scopes key
  return requested.every((s) => HOLDS[minter].includes(s)) ? null : 'api_scope_missing';
}

forEachDatabase((kind) => {
  let t: TestApp;
  const keys = {} as Record<Minter, string>;
  const users = {} as Record<'admin' | 'plain' | 'otherAdmin', number>;
  let minterUser = {} as Record<Minter, number | null>;

  beforeAll(async () => {
    t = await startTestApp(kind);
    keys['super-all'] = await t.key('SUPER', ['all']);
    keys['super-scoped'] = await t.key('SUPER', [...HOLDS['super-scoped']]);
    const admin = await t.user(`mint_admin_${kind}`, { isAdmin: true, scopes: ['all'] });
    keys['admin-all'] = admin.key;
    keys['admin-scoped'] = await t.key('USER', [...HOLDS['admin-scoped']], admin.userId);
    const plain = await t.user(`mint_plain_${kind}`, { scopes: ['all'] });
    keys['user-all'] = plain.key;
    keys['guest-all'] = await t.key('GUEST', ['all']);
    const otherAdmin = await t.user(`mint_other_admin_${kind}`, { isAdmin: true });
    Object.assign(users, { admin: admin.userId, plain: plain.userId, otherAdmin: otherAdmin.userId });
    minterUser = {
      'super-all': null,
      'super-scoped': null,
      'admin-all': admin.userId,
      'admin-scoped': admin.userId,
      'user-all': plain.userId,
      'guest-all': null,
    };
  });
  afterAll(async () => {
    await t?.close();
  });

  function requested(minter: Minter, target: Target, ask: Ask) {
    const scopes =
      ask === 'all'
        ? ['all']
        : ask === 'subset'
          ? HOLDS[minter].slice(0, 1)
          : SCOPES.filter((s) => !HOLDS[minter].includes(s)).slice(0, 1);
    const type = target.split('-')[0]!;
    const userId =
      target === 'USER-self'
        ? (minterUser[minter] ?? users.plain)
        : target === 'USER-plain'
          ? users.plain
          : target === 'USER-admin'
            ? users.otherAdmin
            : undefined;
    return { type, userId, scopes: scopes.length ? scopes : ['all'] };
  }

  const minters: Minter[] = ['super-all', 'super-scoped', 'admin-all', 'admin-scoped', 'user-all', 'guest-all'];
  const targets: Target[] = ['GUEST', 'USER-self', 'USER-plain', 'USER-admin', 'SUPER'];
  const asks: Ask[] = ['all', 'subset', 'beyond'];

  describe('createApiKey: minting key × requested type × requested scopes', () => {
    for (const minter of minters) {
      it(`a ${minter} key mints only what it holds`, async () => {
        for (const target of targets) {
          for (const ask of asks) {
            const input = requested(minter, target, ask);
            const before = await t.prisma.apiKey.count();
            const r = await t.gql(CREATE_KEY, { i: input }, keys[minter]);
            const want = expected(minter, target, ask);
            const label = `${minter} → ${target} ${ask} ${JSON.stringify(input.scopes)}`;
            if (want === null) {
              expect(r.errors, label).toBeUndefined();
              const got: string[] = r.data.createApiKey.apiKey.scopes;
              expect(
                got.every((s) => HOLDS[minter].includes(s)),
                label,
              ).toBe(true);
            } else {
              expect(r.codes, label).toEqual([want]);
              expect(await t.prisma.apiKey.count(), label).toBe(before);
              if (want === 'api_scope_missing') {
                const params = r.errors![0].extensions.params;
                expect(params.scopes.length, label).toBeGreaterThan(0);
                expect(
                  params.scopes.every((s: string) => !HOLDS[minter].includes(s)),
                  label,
                ).toBe(true);
              }
            }
          }
        }
      });
    }
  });

  it('the reported escalation is closed: a scoped SUPER key cannot mint an all-scopes key that hard-deletes a category', async () => {
    const cat = await t.gqlOk(`mutation { createCategory(input: { title: "Guarded" }) { category { categoryId } } }`);
    const id = cat.createCategory.category.categoryId;
    expect(
      (await t.rest('DELETE', `/api/mc-dm-categories/${id}/`, { key: keys['super-scoped'], form: { hard: 1 } })).body
        .errors[0].code,
    ).toBe('api_scope_missing');
    const minted = await t.gql(CREATE_KEY, { i: { type: 'SUPER', scopes: ['all'] } }, keys['super-scoped']);
    expect(minted.codes).toEqual(['api_scope_missing']);
    expect(minted.errors![0].extensions.params.scopes).toEqual([
      'mc_dm_category:write',
      'mc_dm_category:delete_hard',
      'mc_dm_download:delete_hard',
    ]);
    const viaAdmin = await t.gql(CREATE_KEY, { i: { type: 'SUPER', scopes: ['all'] } }, keys['admin-scoped']);
    expect(viaAdmin.codes).toEqual(['do_not_have_permission']);
    expect((await t.rest('GET', `/api/mc-dm-categories/${id}/`)).status).toBe(200);
  });

  describe('revokeApiKey', () => {
    it("an administrator revokes ordinary keys but not super-user keys or another administrator's keys", async () => {
      const superKey = (await t.gqlOk(CREATE_KEY, { i: { type: 'SUPER', scopes: ['mc_dm_category:read'] } }))
        .createApiKey.apiKey.apiKeyId;
      const otherAdminKey = (
        await t.gqlOk(CREATE_KEY, { i: { type: 'USER', userId: users.otherAdmin, scopes: ['mc_dm_category:read'] } })
      ).createApiKey.apiKey.apiKeyId;
      const plainKey = (
        await t.gqlOk(CREATE_KEY, { i: { type: 'USER', userId: users.plain, scopes: ['mc_dm_category:read'] } })
      ).createApiKey.apiKey.apiKeyId;
      const ownKey = (
        await t.gqlOk(CREATE_KEY, { i: { type: 'USER', userId: users.admin, scopes: ['mc_dm_category:read'] } })
      ).createApiKey.apiKey.apiKeyId;
      expect((await t.gql(REVOKE_KEY, { i: { apiKeyId: superKey } }, keys['admin-all'])).codes).toEqual([
        'do_not_have_permission',
      ]);
      expect((await t.gql(REVOKE_KEY, { i: { apiKeyId: otherAdminKey } }, keys['admin-all'])).codes).toEqual([
        'do_not_have_permission',
      ]);
      expect((await t.prisma.apiKey.findUniqueOrThrow({ where: { id: superKey } })).isActive).toBe(true);
      expect((await t.prisma.apiKey.findUniqueOrThrow({ where: { id: otherAdminKey } })).isActive).toBe(true);
      expect(
        (await t.gqlOk(REVOKE_KEY, { i: { apiKeyId: plainKey } }, keys['admin-all'])).revokeApiKey.apiKey.isActive,
      ).toBe(false);
      expect(
        (await t.gqlOk(REVOKE_KEY, { i: { apiKeyId: ownKey } }, keys['admin-all'])).revokeApiKey.apiKey.isActive,
      ).toBe(false);
      expect(
        (await t.gqlOk(REVOKE_KEY, { i: { apiKeyId: superKey } }, keys['super-all'])).revokeApiKey.apiKey.isActive,
      ).toBe(false);
    });
  });

  describe('createUser', () => {
    it('only a super-user key creates administrators', async () => {
      const before = await t.prisma.user.count();
      expect(
        (await t.gql(CREATE_USER, { i: { username: `adm2_${kind}`, isAdmin: true } }, keys['admin-all'])).codes,
      ).toEqual(['do_not_have_permission']);
      expect(
        (await t.gql(CREATE_USER, { i: { username: `adm3_${kind}`, groups: ['administrator'] } }, keys['admin-all']))
          .codes,
      ).toEqual(['do_not_have_permission']);
      expect(await t.prisma.user.count()).toBe(before);
      expect(
        (await t.gql(CREATE_USER, { i: { username: `mod_${kind}`, isModerator: true } }, keys['admin-all'])).errors,
      ).toBeUndefined();
      expect(
        (await t.gql(CREATE_USER, { i: { username: `adm4_${kind}`, isAdmin: true } }, keys['super-scoped'])).errors,
      ).toBeUndefined();
    });
  });

  describe('setGroupPermission / setCategoryPermission', () => {
    it('a visitor who is not a super-user grants only permissions they hold there; withdrawing is always allowed', async () => {
      const cat = await t.gqlOk(`mutation { createCategory(input: { title: "Grants" }) { category { categoryId } } }`);
      const categoryId = cat.createCategory.category.categoryId;
      // An administrator whose own groups lost hardDeleteAny in this category cannot hand it to another group there.
      const admin = await t.user(`grant_admin_${kind}`, { isAdmin: true, scopes: ['all'] });
      await t.gqlOk(SET_CATEGORY, {
        i: { categoryId, group: 'administrator', permission: 'hardDeleteAny', value: 'DENY' },
      });
      await t.gqlOk(SET_CATEGORY, {
        i: { categoryId, group: 'registered', permission: 'hardDeleteAny', value: 'DENY' },
      });
      const refused = await t.gql(
        SET_CATEGORY,
        { i: { categoryId, group: 'registered', permission: 'hardDeleteAny', value: 'ALLOW' } },
        admin.key,
      );
      expect(refused.codes).toEqual(['do_not_have_permission']);
      expect(
        (
          await t.prisma.categoryPermission.findFirstOrThrow({
            where: { categoryId, permission: 'hardDeleteAny', group: { name: 'registered' } },
          })
        ).value,
      ).toBe('deny');
      expect(
        (
          await t.gql(
            SET_CATEGORY,
            { i: { categoryId, group: 'registered', permission: 'view', value: 'ALLOW' } },
            admin.key,
          )
        ).errors,
      ).toBeUndefined();
      expect(
        (await t.gql(SET_CATEGORY, { i: { categoryId, group: 'guest', permission: 'view', value: 'DENY' } }, admin.key))
          .errors,
      ).toBeUndefined();
      // Globally: a group permission the administrator's groups do not hold cannot be granted.
      await t.gqlOk(SET_GROUP, { i: { group: 'administrator', permission: 'moveAny', value: 'DENY' } });
      await t.gqlOk(SET_GROUP, { i: { group: 'moderator', permission: 'moveAny', value: 'DENY' } });
      try {
        expect(
          (await t.gql(SET_GROUP, { i: { group: 'registered', permission: 'moveAny', value: 'ALLOW' } }, admin.key))
            .codes,
        ).toEqual(['do_not_have_permission']);
        expect(
          (await t.gql(SET_GROUP, { i: { group: 'registered', permission: 'comment', value: 'ALLOW' } }, admin.key))
            .errors,
        ).toBeUndefined();
      } finally {
        await t.gqlOk(SET_GROUP, { i: { group: 'administrator', permission: 'moveAny', value: 'ALLOW' } });
        await t.gqlOk(SET_GROUP, { i: { group: 'moderator', permission: 'moveAny', value: 'ALLOW' } });
      }
    });
  });
});
