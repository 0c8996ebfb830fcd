// The Pothos builder: plugins, context, auth scopes and scalars. Types live in one file each.
import SchemaBuilder from '@pothos/core';
import PrismaPlugin from '@pothos/plugin-prisma';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import type PrismaTypes from '../generated/pothos-types.js';
import { getDatamodel } from '../generated/pothos-types.js';
import { ApiError, noPermission } from '../errors.js';
import type { Context } from './context.js';

export interface AuthScopes {
  /** Every named API scope must be held by the key (else 403 api_scope_missing). */
  scope: readonly string[];
  /** Super-user key, or an admin-flagged visitor (else 403 do_not_have_permission). */
  admin: boolean;
  /** The key holds at least one write scope. */
  anyWrite: boolean;
}

export const builder = new SchemaBuilder<{
  Context: Context;
  PrismaTypes: PrismaTypes;
  AuthScopes: AuthScopes;
  DefaultFieldNullability: false;
  DefaultAuthStrategy: 'all';
  Scalars: {
    Long: { Input: bigint; Output: bigint | number };
  };
}>({
  defaultFieldNullability: false,
  plugins: [ScopeAuthPlugin, PrismaPlugin],
  prisma: {
    client: (ctx) => ctx.prisma,
    dmmf: getDatamodel(),
    filterConnectionTotalCount: true,
    onUnusedQuery: null,
  },
  scopeAuth: {
    defaultStrategy: 'all',
    cacheKey: (value) => JSON.stringify(value),
    authScopes: (ctx) => ({
      scope: (needed: readonly string[]) => {
        const missing = needed.find((s) => !ctx.visitor.scopes.has(s));
        if (missing) {
          throw new ApiError('api_scope_missing', `This API key is missing the scope ${missing}.`, { scope: missing });
        }
        return true;
      },
      admin: async () => (await ctx.access()).hasAdminRights,
      anyWrite: () => [...ctx.visitor.scopes].some((s) => s.endsWith(':write')),
    }),
    unauthorizedError: () => noPermission(),
  },
});

builder.queryType({});
builder.mutationType({});

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

builder.scalarType('Long', {
  description: 'A whole number that may exceed 32 bits (byte sizes). Serialized as a JSON number.',
  serialize: (v) => (typeof v === 'bigint' ? Number(v) : v),
  parseValue: (v) => {
    if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
    if (typeof v === 'string' && /^-?\d+$/.test(v) && BigInt(v) <= MAX_SAFE) return BigInt(v);
    throw new ApiError('invalid_input', `Expected a whole number, got ${JSON.stringify(v)}.`);
  },
});

export type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

/** Unix seconds, the spec's timestamp form. */
export const unix = (d: Date | null | undefined): number => (d ? Math.floor(d.getTime() / 1000) : 0);
