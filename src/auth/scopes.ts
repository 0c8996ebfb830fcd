// The one check behind every scope requirement (contract §2: scopes apply to every key, super-user keys included).
import { ApiError } from '../errors.js';

export function requireScopes(visitor: { scopes: ReadonlySet<string> }, scopes: readonly string[]): void {
  const missing = scopes.find((s) => !visitor.scopes.has(s));
  if (missing)
    throw new ApiError('api_scope_missing', `This API key is missing the scope ${missing}.`, { scope: missing });
}

/** At least one of `scopes` (the admin mutations on users and keys need any write scope). */
export function requireAnyScope(visitor: { scopes: ReadonlySet<string> }, scopes: readonly string[]): void {
  if (scopes.some((s) => visitor.scopes.has(s))) return;
  throw new ApiError('api_scope_missing', `This API key needs one of the scopes ${scopes.join(', ')}.`, {
    scope: scopes[0],
    any_of: scopes,
  });
}
