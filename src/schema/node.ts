// `node(id)`: any object by its global id ("<Type>:<id>" in base64url), loaded through the same permission
// rules as its own query. Each type registers a loader and the scopes it needs.
import { builder } from './builder.js';
import { invalidInput } from '../errors.js';
import { requireScopes } from '../auth/scopes.js';
import type { Context } from './context.js';

interface NodeLoader { scopes: readonly string[]; load(ctx: Context, id: number): Promise<object> }
const loaders = new Map<string, NodeLoader>();
const typeOf = new WeakMap<object, string>();

export const toGlobalId = (type: string, id: number) => Buffer.from(`${type}:${id}`).toString('base64url');

export function fromGlobalId(globalId: string): { type: string; id: number } {
  const [type, raw] = Buffer.from(globalId, 'base64url').toString('utf8').split(':');
  if (!type || !raw || !/^\d+$/.test(raw) || !loaders.has(type)) throw invalidInput('id', `"${globalId}" is not an id issued by this service.`);
  if (Number(raw) > 2 ** 31 - 1) throw invalidInput('id', `"${globalId}" names ${type} ${raw}, beyond the largest id (${2 ** 31 - 1}).`);
  return { type, id: Number(raw) };
}

export const NodeRef = builder.interfaceRef<{ id: number }>('Node').implement({
  description: 'An object with a global id, fetchable with `node(id)`.',
  resolveType: (obj) => typeOf.get(obj) ?? null,
  fields: (t) => ({
    id: t.id({ resolve: (obj, _a, _c, info) => toGlobalId(info.parentType.name, obj.id) }),
  }),
});

/** Makes `type` fetchable through node(id); `load` must apply the type's own permission checks. */
export function registerNode(type: string, scopes: readonly string[], load: NodeLoader['load']): void {
  loaders.set(type, { scopes, load });
}

builder.queryField('node', (t) => t.field({
  type: NodeRef,
  nullable: true,
  args: { id: t.arg.id({ required: true }) },
  resolve: async (_r, args, ctx) => {
    const { type, id } = fromGlobalId(String(args.id));
    const loader = loaders.get(type)!;
    requireScopes(ctx.visitor, loader.scopes);
    const obj = await loader.load(ctx, id);
    typeOf.set(obj, type);
    return obj as { id: number };
  },
}));
