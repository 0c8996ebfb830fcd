// Global ids and `node(id)` / `nodes(ids)`: any object by its opaque global id ("<Type>:<id>" in base64url),
// loaded through the same permission rules as its own query. Each type registers a loader and the scopes it needs.
// An id the visitor may not see (unknown, hidden, refused) answers null; a malformed id, or one of a type this
// service does not issue, is an invalid_input error.
import { LIMITS } from '../config.js';
import { GraphQLError } from 'graphql';
import { builder } from './builder.js';
import { ApiError, invalidInput } from '../errors.js';
import { requireScopes } from '../auth/scopes.js';
import type { Context } from './context.js';
import { MAX_INT } from '../input/numbers.js';

interface NodeLoader {
  scopes: readonly string[];
  load(ctx: Context, id: number): Promise<object>;
}
const loaders = new Map<string, NodeLoader>();
const typeOf = new WeakMap<object, string>();

export const MAX_NODES = LIMITS.maxNodes;

export const toGlobalId = (type: string, id: number) => Buffer.from(`${type}:${id}`).toString('base64url');

export function fromGlobalId(globalId: string, field = 'id'): { type: string; id: number } {
  const decoded = /^[A-Za-z0-9_-]{1,64}$/.test(globalId) ? Buffer.from(globalId, 'base64url').toString('utf8') : '';
  const [type, raw, extra] = decoded.split(':');
  const id = raw !== undefined && /^\d{1,10}$/.test(raw) ? Number(raw) : NaN;
  if (!type || extra !== undefined || !loaders.has(type) || !(id >= 1 && id <= MAX_INT)) {
    throw invalidInput(
      field,
      `${JSON.stringify(globalId)} is not an id issued by this service: use the \`id\` field of an object it returned.`,
    );
  }
  return { type, id };
}

export const NodeRef = builder.interfaceRef<{ id: number }>('Node').implement({
  description:
    'An object with a global id. Every entity implements it; fetch any of them again with `node(id:)` or `nodes(ids:)`, and let a client cache (Apollo, Relay, urql) key objects by `id`.',
  resolveType: (obj) => typeOf.get(obj) ?? null,
  fields: (t) => ({
    id: t.id({
      description:
        'An opaque global id, unique across every type. The numeric `…Id` fields are the same row ids the REST API uses.',
      resolve: (obj, _a, _c, info) => toGlobalId(info.parentType.name, obj.id),
    }),
  }),
});

/** Makes `type` fetchable through node(id); `load` must apply the type's own permission checks and throw if refused. */
export function registerNode(type: string, scopes: readonly string[], load: NodeLoader['load']): void {
  loaders.set(type, { scopes, load });
}

/** Errors that mean "the visitor may not see this object": node answers null for them. */
const UNSEEN = (err: unknown) =>
  err instanceof ApiError && (err.code === 'do_not_have_permission' || err.code.endsWith('_not_found'));

/** The object, or null when the visitor may not see it (after a soft delete, say). */
export async function unlessUnseen<T>(load: Promise<T>): Promise<T | null> {
  try {
    return await load;
  } catch (err) {
    if (UNSEEN(err)) return null;
    throw err;
  }
}

/** One id → its object, null when the visitor may not see it; a missing scope stays an error (it names the scope). */
async function loadNode(ctx: Context, globalId: string, field: string): Promise<object | null> {
  const { type, id } = fromGlobalId(globalId, field);
  const loader = loaders.get(type)!;
  requireScopes(ctx.visitor, loader.scopes);
  try {
    const obj = await loader.load(ctx, id);
    typeOf.set(obj, type);
    return obj;
  } catch (err) {
    if (UNSEEN(err)) return null;
    throw err;
  }
}

builder.queryFields((t) => ({
  node: t.field({
    type: NodeRef,
    nullable: true,
    description: 'Any object by its global `id`; null when it does not exist or the visitor may not see it.',
    args: { id: t.arg.id({ required: true, description: 'A global id, as returned in an `id` field.' }) },
    resolve: async (_r, args, ctx) => (await loadNode(ctx, String(args.id), 'id')) as { id: number } | null,
  }),
  nodes: t.field({
    type: [NodeRef],
    nullable: { list: false, items: true },
    description: `Several objects by global id, in the order asked (at most ${MAX_NODES}); an entry is null when that object does not exist or the visitor may not see it.`,
    args: { ids: t.arg.idList({ required: true, description: `Global ids, at most ${MAX_NODES}.` }) },
    resolve: async (_r, args, ctx) => {
      if (args.ids.length > MAX_NODES)
        throw invalidInput('ids', `Ask for at most ${MAX_NODES} ids at a time (got ${args.ids.length}).`);
      for (const id of args.ids) fromGlobalId(String(id), 'ids'); // a malformed id refuses the whole request
      // An entry refused for another reason (a missing scope) carries its own error and leaves the others intact.
      return Promise.all(
        args.ids.map((id) =>
          loadNode(ctx, String(id), 'ids').catch((err: unknown) =>
            err instanceof GraphQLError ? err : Promise.reject(err),
          ),
        ),
      ) as Promise<({ id: number } | null)[]>;
    },
  }),
}));
