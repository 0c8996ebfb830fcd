// What a field requires of the request, read from the data its definition declares (Pothos `authScopes`), not from
// its description: the OpenAPI document, the authorization matrix and the description check all read it here.
import type { GraphQLField } from 'graphql';

export interface Requirements {
  /** Every one of these scopes (an empty list: none). */
  scopes: string[];
  /** Admin rights (an administrator, or a super-user key). */
  admin: boolean;
  /** At least one write scope, whichever. */
  anyWrite: boolean;
}

interface AuthScopes {
  scope?: readonly string[];
  admin?: boolean;
  anyWrite?: boolean;
}

/** The requirements a field's definition declares; none for a field that declares no `authScopes`. */
export function requirementsOf(field: GraphQLField<unknown, unknown>): Requirements {
  const options = (field.extensions as { pothosOptions?: { authScopes?: unknown } } | undefined)?.pothosOptions;
  const declared = options?.authScopes;
  if (typeof declared === 'function') throw new Error(`${field.name}: its authScopes are computed, not declared`);
  const auth = (declared ?? {}) as AuthScopes;
  return { scopes: [...(auth.scope ?? [])], admin: auth.admin === true, anyWrite: auth.anyWrite === true };
}
