// Contract §3 as pure functions: resolution down the category tree, overrides, several groups, super keys,
// and the derived can* checks.
import { describe, expect, it } from 'vitest';
import {
  PermissionResolver,
  emptyPermissionData,
  type PermissionData,
  type OverrideValue,
} from '../src/permissions/resolve.js';
import { Access, type Visitor } from '../src/permissions/access.js';
import { BUILT_IN_GROUPS, PERMISSIONS } from '../src/permissions/names.js';

// Tree: 1 (top) → 2 → 3 ; 4 (top, sibling)
const GUEST = 1,
  REG = 2,
  MOD = 3,
  EXTRA = 5;

function data(overrides: [number, number, string, OverrideValue][] = []): PermissionData {
  const d = emptyPermissionData();
  d.grants.set(GUEST, new Set(BUILT_IN_GROUPS.guest));
  d.grants.set(REG, new Set(BUILT_IN_GROUPS.registered));
  d.grants.set(MOD, new Set(BUILT_IN_GROUPS.moderator));
  d.grants.set(EXTRA, new Set());
  d.parents.set(1, null).set(2, 1).set(3, 2).set(4, null);
  for (const [cat, group, perm, value] of overrides) {
    if (!d.overrides.has(cat)) d.overrides.set(cat, new Map());
    const byGroup = d.overrides.get(cat)!;
    if (!byGroup.has(group)) byGroup.set(group, new Map());
    byGroup.get(group)!.set(perm, value);
  }
  return d;
}

const visitor = (over: Partial<Visitor> = {}): Visitor => ({
  userId: 7,
  username: 'u',
  isSuper: false,
  isAdmin: false,
  isModerator: false,
  groupIds: [REG],
  scopes: new Set(),
  apiKeyId: 1,
  ...over,
});

describe('built-in group defaults', () => {
  it('guest ⊂ registered ⊂ moderator = administrator = every permission', () => {
    expect(BUILT_IN_GROUPS.guest).toEqual(['view', 'viewComments', 'download']);
    for (const p of BUILT_IN_GROUPS.guest) expect(BUILT_IN_GROUPS.registered).toContain(p);
    expect([...BUILT_IN_GROUPS.registered].sort()).toEqual(
      [
        'view',
        'viewComments',
        'download',
        'add',
        'comment',
        'editOwn',
        'deleteOwn',
        'editOwnComment',
        'deleteOwnComment',
        'review',
      ].sort(),
    );
    expect([...BUILT_IN_GROUPS.moderator].sort()).toEqual([...PERMISSIONS].sort());
    expect([...BUILT_IN_GROUPS.administrator].sort()).toEqual([...PERMISSIONS].sort());
  });
});

describe('resolution down the tree', () => {
  it('without overrides every level falls back to the global grant', () => {
    const r = new PermissionResolver([REG], data());
    for (const c of [1, 2, 3, 4]) {
      expect(r.has('add', c)).toBe(true);
      expect(r.has('editAny', c)).toBe(false);
    }
    expect(r.has('add')).toBe(true);
  });

  it('a deny on the top level is inherited by the second and third levels, not by a sibling tree', () => {
    const r = new PermissionResolver([REG], data([[1, REG, 'add', 'deny']]));
    expect([r.has('add', 1), r.has('add', 2), r.has('add', 3), r.has('add', 4)]).toEqual([false, false, false, true]);
  });

  it('an override on the middle level applies to it and below, the top keeps the global value', () => {
    const r = new PermissionResolver([REG], data([[2, REG, 'editAny', 'allow']]));
    expect([r.has('editAny', 1), r.has('editAny', 2), r.has('editAny', 3)]).toEqual([false, true, true]);
  });

  it('an override on the leaf applies only there', () => {
    const r = new PermissionResolver([REG], data([[3, REG, 'view', 'deny']]));
    expect([r.has('view', 1), r.has('view', 2), r.has('view', 3)]).toEqual([true, true, false]);
  });

  it('the nearest override wins: deny at the top, allow again in the middle, deny at the leaf', () => {
    const r = new PermissionResolver(
      [REG],
      data([
        [1, REG, 'download', 'deny'],
        [2, REG, 'download', 'allow'],
        [3, REG, 'download', 'deny'],
      ]),
    );
    expect([r.has('download', 1), r.has('download', 2), r.has('download', 3)]).toEqual([false, true, false]);
  });

  it('overrides of another group do not affect this one', () => {
    const r = new PermissionResolver([REG], data([[1, GUEST, 'view', 'deny']]));
    expect(r.has('view', 3)).toBe(true);
  });
});

describe('several groups: any group that resolves to allow grants', () => {
  it('a deny in one group is outweighed by an allow in another', () => {
    const r = new PermissionResolver(
      [REG, EXTRA],
      data([
        [1, REG, 'view', 'deny'],
        [2, EXTRA, 'view', 'allow'],
      ]),
    );
    expect([r.has('view', 1), r.has('view', 2), r.has('view', 3)]).toEqual([false, true, true]);
  });

  it('an extra group with no grants adds nothing, a moderator group adds everything', () => {
    expect(new PermissionResolver([REG, EXTRA], data()).has('deleteAny', 3)).toBe(false);
    expect(new PermissionResolver([REG, MOD], data()).has('deleteAny', 3)).toBe(true);
  });

  it('when every group is denied, the permission is withheld', () => {
    const r = new PermissionResolver(
      [REG, MOD],
      data([
        [2, REG, 'view', 'deny'],
        [2, MOD, 'view', 'deny'],
      ]),
    );
    expect(r.has('view', 3)).toBe(false);
  });
});

describe('super-user keys', () => {
  it('pass every permission and every derived check, whatever the overrides say', () => {
    const a = new Access(visitor({ isSuper: true, userId: 0, groupIds: [GUEST] }), null);
    for (const p of PERMISSIONS) expect(a.has(p, 3)).toBe(true);
    const d = { id: 1, categoryId: 3, userId: 99, state: 'draft' as const };
    expect(a.canViewDownload(d)).toBe(true);
    expect(a.canHardDeleteDownload(d)).toBe(true);
    expect(a.canViewComment({ userId: 5, state: 'deleted' }, d)).toBe(true);
    expect(a.hasAdminRights).toBe(true);
  });
});

describe('derived checks', () => {
  const access = (
    groups: number[],
    overrides: [number, number, string, OverrideValue][] = [],
    v: Partial<Visitor> = {},
  ) => new Access(visitor({ groupIds: groups, ...v }), new PermissionResolver(groups, data(overrides)));
  const dl = (state: 'visible' | 'moderated' | 'deleted' | 'draft', userId = 99, categoryId = 3) => ({
    id: 1,
    categoryId,
    userId,
    state,
  });

  it('download visibility follows the state rule', () => {
    const reg = access([REG]);
    expect(reg.canViewDownload(dl('visible'))).toBe(true);
    expect(reg.canViewDownload(dl('moderated'))).toBe(false);
    expect(reg.canViewDownload(dl('moderated', 7))).toBe(true); // owner
    expect(reg.canViewDownload(dl('deleted', 7))).toBe(false);
    expect(reg.canViewDownload(dl('draft', 7))).toBe(true);
    expect(reg.canViewDownload(dl('draft'))).toBe(false);
    const mod = access([REG, MOD]);
    expect(mod.canViewDownload(dl('moderated'))).toBe(true);
    expect(mod.canViewDownload(dl('deleted'))).toBe(true);
    expect(mod.canViewDownload(dl('draft'))).toBe(false); // drafts are the owner's alone
    expect(access([REG], [[2, REG, 'view', 'deny']]).canViewDownload(dl('visible'))).toBe(false);
  });

  it('edit: editAny, or owner / team member with editOwn; files follow edit', () => {
    const reg = access([REG]);
    expect(reg.canEditDownload(dl('visible'))).toBe(false);
    expect(reg.canEditDownload(dl('visible', 7))).toBe(true);
    expect(reg.canEditDownload(dl('visible'), true)).toBe(true);
    expect(reg.canManageFiles(dl('visible'), true)).toBe(true);
    expect(access([REG], [[3, REG, 'editOwn', 'deny']]).canEditDownload(dl('visible', 7))).toBe(false);
    expect(access([REG, MOD]).canEditDownload(dl('visible'))).toBe(true);
  });

  it('delete, hard delete, move, download', () => {
    const reg = access([REG]);
    expect(reg.canDeleteDownload(dl('visible', 7))).toBe(true);
    expect(reg.canDeleteDownload(dl('visible'))).toBe(false);
    expect(reg.canHardDeleteDownload(dl('visible', 7))).toBe(false);
    expect(reg.canMoveDownload(dl('visible', 7))).toBe(false);
    expect(reg.canDownload(dl('visible'))).toBe(true);
    expect(access([REG], [[1, REG, 'download', 'deny']]).canDownload(dl('visible'))).toBe(false);
    const mod = access([REG, MOD]);
    expect(mod.canHardDeleteDownload(dl('visible'))).toBe(true);
    expect(mod.canMoveDownload(dl('visible'))).toBe(true);
  });

  it('the guest visitor owns nothing', () => {
    const guest = access([GUEST], [], { userId: 0 });
    expect(guest.canEditDownload(dl('visible', 0))).toBe(false);
    expect(guest.canViewDownload(dl('draft', 0))).toBe(false);
    expect(guest.canAddDownload({ id: 3 })).toBe(false);
  });

  it('comments: view needs viewComments and the download; edit and delete own or any', () => {
    const reg = access([REG]);
    const d = dl('visible');
    expect(reg.canViewComments(d)).toBe(true);
    expect(access([REG], [[1, REG, 'viewComments', 'deny']]).canViewComments(d)).toBe(false);
    expect(reg.canViewComment({ userId: 99, state: 'moderated' }, d)).toBe(false);
    expect(reg.canViewComment({ userId: 7, state: 'moderated' }, d)).toBe(true);
    expect(reg.canEditComment({ userId: 7, state: 'visible' }, d)).toBe(true);
    expect(reg.canEditComment({ userId: 99, state: 'visible' }, d)).toBe(false);
    expect(reg.canDeleteComment({ userId: 7, state: 'visible' }, d)).toBe(true);
    expect(access([REG, MOD]).canDeleteComment({ userId: 99, state: 'visible' }, d)).toBe(true);
  });

  it('admin rights come from the is_admin flag, not from group permissions', () => {
    expect(access([REG, MOD]).hasAdminRights).toBe(false);
    expect(access([REG], [], { isAdmin: true }).hasAdminRights).toBe(true);
  });
});

describe('answers shared across requests', () => {
  it('resolvers of the same tables and groups share their answers; new tables (after a change) are asked afresh', () => {
    const before = data();
    const a = new PermissionResolver([REG], before);
    expect(a.viewableCategories()).toEqual({ categoryIds: [1, 2, 3, 4], moderatedIn: [], deletedIn: [] });
    expect(new PermissionResolver([REG], before).viewableCategories()).toBe(a.viewableCategories());
    // Another group set over the same tables has its own answers.
    expect(new PermissionResolver([REG, MOD], before).viewableCategories()).toEqual({
      categoryIds: [1, 2, 3, 4],
      moderatedIn: [1, 2, 3, 4],
      deletedIn: [1, 2, 3, 4],
    });
    // The tables changed (the cache loads a new object): a deny of view on 2 hides 2 and 3 below it.
    const after = data([[2, REG, 'view', 'deny']]);
    const b = new PermissionResolver([REG], after);
    expect(b.viewableCategories().categoryIds).toEqual([1, 4]);
    expect(b.has('view', 3)).toBe(false);
    expect(a.has('view', 3)).toBe(true);
    expect(b.subtreeOf(1)).toEqual([1, 2, 3]);
    expect(new PermissionResolver([GUEST], after).subtreeOf(4)).toEqual([4]);
    // The visibility a search statement reads is the resolver's, with the visitor's own id.
    const access = new Access(visitor({ userId: 7, groupIds: [REG] }), b);
    expect(access.downloadVisibility()).toEqual({ categoryIds: [1, 4], moderatedIn: [], deletedIn: [], userId: 7 });
    expect(new Access(visitor({ isSuper: true }), b).downloadVisibility()).toBeNull();
  });
});

describe('explain: the rule that decided', () => {
  it('names the nearest override, inherited from an ancestor category', () => {
    const r = new PermissionResolver([REG], data([[1, REG, 'add', 'deny']]));
    expect(r.explain('add', 3)).toEqual({
      permission: 'add',
      granted: false,
      decidedBy: { groupId: REG, level: 'category', categoryId: 1, value: 'deny' },
      rules: [{ groupId: REG, level: 'category', categoryId: 1, value: 'deny' }],
    });
    expect(r.explain('add', 4).decidedBy).toEqual({ groupId: REG, level: 'global', categoryId: null, value: 'allow' });
  });

  it('a grant names the first group that allows; a refusal without overrides names the unset global setting', () => {
    const r = new PermissionResolver([EXTRA, REG], data([[2, REG, 'editAny', 'allow']]));
    const granted = r.explain('editAny', 3);
    expect(granted.granted).toBe(true);
    expect(granted.decidedBy).toEqual({ groupId: REG, level: 'category', categoryId: 2, value: 'allow' });
    expect(granted.rules[0]).toEqual({ groupId: EXTRA, level: 'global', categoryId: null, value: 'unset' });
    const refused = r.explain('editAny', 1);
    expect(refused).toMatchObject({ granted: false, decidedBy: { groupId: EXTRA, level: 'global', value: 'unset' } });
  });

  it('a refusal prefers a deny override over an unset global setting', () => {
    const r = new PermissionResolver([EXTRA, REG], data([[2, REG, 'add', 'deny']]));
    expect(r.explain('add', 2).decidedBy).toEqual({ groupId: REG, level: 'category', categoryId: 2, value: 'deny' });
  });

  it('agrees with has() for every permission, category and group mix', () => {
    const d = data([
      [1, REG, 'add', 'deny'],
      [2, REG, 'add', 'allow'],
      [3, GUEST, 'view', 'deny'],
      [4, MOD, 'editAny', 'deny'],
    ]);
    for (const groups of [[GUEST], [REG], [GUEST, REG], [MOD, EXTRA], []]) {
      const r = new PermissionResolver(groups, d);
      for (const p of PERMISSIONS) {
        for (const c of [undefined, 1, 2, 3, 4]) expect(r.explain(p, c).granted).toBe(r.has(p, c));
      }
    }
    expect(new PermissionResolver([], d).explain('view', 1).decidedBy).toBeNull();
  });
});
