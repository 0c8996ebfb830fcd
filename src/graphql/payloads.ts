// Mutation payload objects: `{ <key>: <Type> }`, named after what the mutation returns. Every payload hands back
// the object it changed, so a client cache updates itself; delete payloads also carry the deleted object's global
// `deletedId`, so a client can evict it.
import type { OutputRef } from '@pothos/core';
import { builder } from './builder.js';
import { toGlobalId } from './node.js';
import type { Context } from './context.js';

export function payloadOf<T>(name: string, key: string, type: OutputRef<T>, description?: string) {
  const mutation = name.replace(/Payload$/, '').replace(/^./, (c) => c.toLowerCase());
  return builder.objectRef<Record<string, T>>(name).implement({
    description: description ?? `What \`${mutation}\` returns: the ${key}, as it is after the change.`,
    fields: (t) => ({
      [key]: t.field({
        type,
        description: 'The object as it is after the change.',
        // biome-ignore lint/suspicious/noExplicitAny: Pothos cannot resolve a field's shape from a generic ref (OutputRef<T>) inside this helper
        resolve: (p: Record<string, T>) => p[key] as any,
      }),
    }),
  });
}

/**
 * A payload whose object is a row of a Prisma model, read as the selection needs it. A row a write returned holds its
 * columns only: the relations the selection asks for (`with=full`: the category, the current version, the tags; a
 * comment's author) would each be loaded by Prisma, field by field. When the selection asks for any, the object is read
 * again with them (`reread`: the module's one hand-written statement, after the write committed, without the view
 * check the write already made); when it asks for columns only, the write's row answers.
 */
export function modelPayloadOf<M extends 'Download' | 'Comment'>(
  name: string,
  key: string,
  model: M,
  reread: (ctx: Context, id: number, query: object) => Promise<{ id: number }>,
) {
  const mutation = name.replace(/Payload$/, '').replace(/^./, (c) => c.toLowerCase());
  return builder.objectRef<Record<string, { id: number }>>(name).implement({
    description: `What \`${mutation}\` returns: the ${key}, as it is after the change.`,
    fields: (t) => ({
      [key]: t.prismaField({
        type: model,
        description: 'The object as it is after the change.',
        resolve: (query, p, _args, ctx) => {
          const row = p[key]!;
          // biome-ignore lint/suspicious/noExplicitAny: the row is the model's (the write's, or the read's)
          return (Object.keys(query).length === 0 ? row : reread(ctx, row.id, query)) as any;
        },
      }),
    }),
  });
}

/** What a delete returns: `success` (the REST envelope), `deletedId`, and the object when it still exists for the visitor. */
export interface DeleteResult<T> {
  success: true;
  typeName: string;
  id: number;
  object: T | null;
}

export function deletePayloadOf<T>(name: string, key: string, type: OutputRef<T>) {
  return builder.objectRef<DeleteResult<T>>(name).implement({
    description: `The result of a delete: \`deletedId\` names what was deleted; \`${key}\` is the object after a soft delete when the visitor may still see it, null after a hard delete.`,
    fields: (t) => ({
      success: t.boolean({
        description: 'Always true: a refused delete answers an error instead.',
        resolve: () => true,
      }),
      deletedId: t.id({
        description: 'The global id of the deleted object: evict it from a client cache.',
        resolve: (p) => toGlobalId(p.typeName, p.id),
      }),
      [key]: t.field({
        type,
        nullable: true,
        description:
          'The object after a soft delete (state DELETED); null after a hard delete or when the visitor may no longer see it.',
        // biome-ignore lint/suspicious/noExplicitAny: Pothos cannot resolve a field's shape from a generic ref (OutputRef<T>) inside this helper
        resolve: (p: DeleteResult<T>) => p.object as any,
      }),
    }),
  });
}

/** `{ ok, <key>: <Type> }`: a change to a relation (a team, a prefix assignment, a permission) and the object it changed. */
export function okPayloadOf<T>(
  name: string,
  // biome-ignore lint/suspicious/noExplicitAny: the objects are of different types (a download and a user, a prefix and a category): no one T fits them
  objects: Record<string, { type: any; description: string }>,
) {
  return builder.objectRef<{ ok: true } & Record<string, T>>(name).implement({
    description: 'The result of a change, with the objects it changed.',
    fields: (t) => ({
      ok: t.boolean({ description: 'Always true: a refused change answers an error instead.', resolve: () => true }),
      ...Object.fromEntries(
        Object.entries(objects).map(([key, o]) => [
          key,
          // biome-ignore lint/suspicious/noExplicitAny: the field's shape is that of o.type, which is any (above)
          t.field({ type: o.type, description: o.description, resolve: (p: Record<string, T>) => p[key] as any }),
        ]),
      ),
    }),
  });
}
