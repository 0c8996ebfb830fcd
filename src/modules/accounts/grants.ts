// What a key may hand out. Nothing an operator mints or grants may exceed what the acting key and visitor hold:
// - a new key's scopes are a subset of the minting key's scopes (else 403 api_scope_missing, params.scopes);
// - only a super-user key mints super-user keys, creates administrators, or touches another administrator's keys
//   (an administrator acting through an ordinary key may act for any user who is not an administrator, and for
//   themselves);
// - a group or category grant (ALLOW) by a non-super visitor needs that visitor to hold the permission there.
// Super-user keys pass the rules that concern visitors, but never the scope rule: scopes bind every key.
import { ApiError } from '../../errors.js';
import type { Access, Visitor } from '../../permissions/access.js';
import type { Permission } from '../../permissions/names.js';

type KeyType = 'guest' | 'user' | 'super';

const onlySuper = (what: string) => new ApiError('do_not_have_permission', `Only a super-user key can ${what}.`);

/** The requested scopes the minting key does not hold, in the order requested. */
export function missingScopes(minter: Pick<Visitor, 'scopes'>, requested: readonly string[]): string[] {
  return requested.filter((s) => !minter.scopes.has(s));
}

export function assertCanMintKey(
  minter: Visitor,
  type: KeyType,
  scopes: readonly string[],
  boundUser: { id: number; isAdmin: boolean } | null,
): void {
  if (type === 'super' && !minter.isSuper) throw onlySuper('create super-user keys');
  if (boundUser?.isAdmin && boundUser.id !== minter.userId && !minter.isSuper) {
    throw onlySuper('create keys for another administrator');
  }
  const missing = missingScopes(minter, scopes);
  if (missing.length > 0) {
    throw new ApiError(
      'api_scope_missing',
      `A key can only be given scopes the key creating it holds; this key lacks ${missing.join(', ')}.`,
      { scope: missing[0], scopes: missing },
    );
  }
}

export function assertCanRevokeKey(
  minter: Visitor,
  key: { type: KeyType; userId: number | null },
  owner: { isAdmin: boolean } | null,
): void {
  if (minter.isSuper) return;
  if (key.type === 'super') throw onlySuper('revoke super-user keys');
  if (owner?.isAdmin && key.userId !== minter.userId) throw onlySuper("revoke another administrator's keys");
}

export function assertCanCreateUser(minter: Visitor, makesAdmin: boolean): void {
  if (makesAdmin && !minter.isSuper) throw onlySuper('create administrators');
}

/** ALLOW hands a permission out: the visitor must hold it where it is granted (globally, or in the category). */
export function assertCanGrant(
  access: Access,
  permission: Permission,
  value: 'allow' | 'deny' | 'inherit',
  categoryId?: number,
): void {
  if (value !== 'allow' || access.isSuper) return;
  if (!access.has(permission, categoryId ?? null)) {
    throw new ApiError(
      'do_not_have_permission',
      `You cannot grant ${permission}${categoryId ? ` in category ${categoryId}` : ''}: you do not hold it there yourself.`,
      { permission },
    );
  }
}
