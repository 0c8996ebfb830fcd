// The Pothos builder: plugins, context, auth scopes and scalars. Types live in one file each.
import SchemaBuilder from '@pothos/core';
import PrismaPlugin from '@pothos/plugin-prisma';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import type PrismaTypes from '../generated/pothos-types.js';
import { getDatamodel } from '../generated/pothos-types.js';
import { ApiError, noPermission } from '../errors.js';
import { requireAnyScope, requireScopes } from '../auth/scopes.js';
import type { Context } from './context.js';
import { keepPlans } from './plan-cache.js';
import PreloadedRelationsPlugin from './preloaded-relations.js';

// The Prisma plugin's query plans are kept per operation and variables (src/graphql/plan-cache.ts).
keepPlans();

export interface AuthScopes {
  /** Every named API scope must be held by the key (else 403 api_scope_missing). */
  scope: readonly string[];
  /** Super-user key, or an admin-flagged visitor (else 403 do_not_have_permission). */
  admin: boolean;
  /** The key holds at least one write scope (else 403 api_scope_missing). */
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
    DateTime: { Input: Date; Output: Date };
    Upload: { Input: unknown; Output: never };
  };
}>({
  defaultFieldNullability: false,
  // Between the two: a relation loaded with its row answers from it, inside its field's authorization.
  plugins: [ScopeAuthPlugin, PreloadedRelationsPlugin, PrismaPlugin],
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
        requireScopes(ctx.visitor, needed);
        return true;
      },
      admin: async () => (await ctx.access()).hasAdminRights,
      // A key without any write scope lacks a scope (api_scope_missing), like every other scope requirement.
      anyWrite: () => {
        requireAnyScope(ctx.visitor, ['mc_dm_category:write', 'mc_dm_download:write']);
        return true;
      },
    }),
    unauthorizedError: () => noPermission(),
  },
});

builder.queryType({
  description:
    'Reads. Every request carries an API key in the Forum-Api-Key header; each field says which scope it needs (a missing scope answers api_scope_missing). Objects the visitor may not view are left out of lists.',
});
builder.mutationType({
  description:
    'Writes. Each mutation takes one `input` and returns a payload with the objects it changed. A refused write answers null with an error whose `extensions.code` names the reason (and `extensions.params` the details), and changes nothing.',
});

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

// ISO 8601 with a date, optional time and zone, e.g. 2026-11-22, 2026-11-22T10:00:00Z, 2026-11-22T10:00:00+01:00.
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

builder.scalarType('DateTime', {
  description: 'An ISO 8601 date or date-time (inputs such as `since`); a zone-less time is read as UTC.',
  serialize: (v) => (v instanceof Date ? v.toISOString() : v),
  parseValue: (v) => {
    if (typeof v === 'string' && ISO_8601.test(v.trim())) {
      let s = v.trim().replace(' ', 'T');
      if (/T/.test(s) && !/(Z|[+-]\d{2}:?\d{2})$/.test(s)) s += 'Z';
      const d = new Date(s);
      // Date would roll 2026-02-30 over into March: the calendar date must exist as written.
      const [y, m, day] = s.slice(0, 10).split('-').map(Number) as [number, number, number];
      const c = new Date(Date.UTC(y, m - 1, day));
      const exists = c.getUTCFullYear() === y && c.getUTCMonth() === m - 1 && c.getUTCDate() === day;
      if (exists && !Number.isNaN(d.getTime())) return d;
    }
    throw new ApiError(
      'invalid_input',
      `Expected an ISO 8601 date such as 2026-11-22T10:00:00Z, got ${JSON.stringify(v)}.`,
    );
  },
});

/** Unix seconds, the spec's timestamp form. */
export const unix = (d: Date | null | undefined): number => (d ? Math.floor(d.getTime() / 1000) : 0);
