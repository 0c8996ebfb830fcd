// Relay cursor connections, shared by every connection field: `PageInfo`, the `first/after/last/before` arguments,
// and `<Name>Connection { totalCount edges { cursor node } nodes pageInfo }` types. The keyset rules (cursors,
// windows, page boundaries) live in src/db/keyset.ts; the lists themselves in connections-root.ts and
// connections-nested.ts.
import type { ArgBuilder, FieldRef, OutputRef } from '@pothos/core';
import { builder, type Types } from './builder.js';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  pageOf,
  type CursorSeal,
  type Edge,
  type KeysetSpec,
  type PageInfo,
  type Window,
} from '../db/keyset.js';

export const PageInfoRef = builder.objectRef<PageInfo>('PageInfo').implement({
  description: 'Where a page of a connection sits in its list (Relay cursor connections).',
  fields: (t) => ({
    hasNextPage: t.exposeBoolean('hasNextPage', {
      description:
        'More rows follow endCursor: ask again with `after: endCursor`. Paging backward, true when `before` was given.',
    }),
    hasPreviousPage: t.exposeBoolean('hasPreviousPage', {
      description:
        'Rows precede startCursor: ask again with `last` and `before: startCursor`. Paging forward, true when `after` was given.',
    }),
    startCursor: t.exposeString('startCursor', {
      nullable: true,
      description:
        'The cursor of the first row read for this page (a row the visitor may not see can stand there); null when no row was read.',
    }),
    endCursor: t.exposeString('endCursor', {
      nullable: true,
      description:
        'The cursor of the last row read for this page (a row the visitor may not see can stand there, so paging on skips it); null when no row was read.',
    }),
  }),
});

/** A connection as resolvers return it: rows the visitor may not see are already dropped from `edges`. */
export interface Connection<T> {
  totalCount: number;
  edges: Edge<T>[];
  pageInfo: PageInfo;
}

/** `first`, `after`, `last`, `before`: the paging arguments of every connection field. */
export const connectionArgs = (arg: ArgBuilder<Types>) => ({
  first: arg.int({
    required: false,
    description: `Rows from the start (or after \`after\`): default ${DEFAULT_PAGE_SIZE}, larger values than ${MAX_PAGE_SIZE} are clamped to ${MAX_PAGE_SIZE}; 0 or less is refused.`,
  }),
  after: arg.string({
    required: false,
    description:
      'A cursor returned by this field with the same order and direction (usually pageInfo.endCursor): the page starts after it.',
  }),
  last: arg.int({
    required: false,
    description: `Rows from the end (or before \`before\`), at most ${MAX_PAGE_SIZE}. Not combinable with first/after.`,
  }),
  before: arg.string({
    required: false,
    description:
      'A cursor returned by this field with the same order and direction (usually pageInfo.startCursor): the page ends before it.',
  }),
});

/**
 * A connection from rows read in scan order (`size + 1` at most): cursors and page boundaries come from every row
 * read, then rows the visitor may not see are dropped, so paging on continues past them and `totalCount` keeps
 * counting them, as `pagination.total` does on the page-numbered lists.
 */
export async function connectionFrom<T extends { id: number }>(
  seal: CursorSeal,
  spec: KeysetSpec,
  w: Window,
  rows: readonly T[],
  totalCount: number,
  canSee: (row: T) => boolean | Promise<boolean>,
): Promise<Connection<T>> {
  const page = pageOf(seal, spec, w, rows);
  const seen = await Promise.all(page.edges.map((e) => canSee(e.node)));
  return { totalCount, edges: page.edges.filter((_e, i) => seen[i]), pageInfo: page.pageInfo };
}

type EdgeFields<T> = (t: PothosSchemaTypes.ObjectFieldBuilder<Types, Edge<T>>) => Record<string, FieldRef<Types>>;

/**
 * `<name>Connection` and `<name>Edge` over the object type `node`. `edgeFields` adds fields to the edge (facts
 * about the node's place in this list, such as when a member joined a team).
 */
export function connectionOf<T extends N, N = T>(
  name: string,
  node: OutputRef<N>,
  what: string,
  edgeFields?: EdgeFields<T>,
) {
  const EdgeRef = builder.objectRef<Edge<T>>(`${name}Edge`).implement({
    description: `One ${what} in a page of a ${name}Connection, with its cursor.`,
    fields: (t) => ({
      cursor: t.exposeString('cursor', {
        description: "This row's position in the list: pass it as `after` or `before` to page from here.",
      }),
      // biome-ignore lint/suspicious/noExplicitAny: Pothos cannot resolve a field's shape from a generic ref (OutputRef<T>) inside this helper
      node: t.field({ type: node, description: `The ${what}.`, resolve: (e) => e.node as any }),
      ...(edgeFields ? edgeFields(t as never) : {}),
    }),
  });
  return builder.objectRef<Connection<T>>(`${name}Connection`).implement({
    description: `A page of ${what}s (Relay cursor connection). Rows the visitor may not see are left out of the page, so a page may hold fewer rows than asked for; totalCount still counts them.`,
    fields: (t) => ({
      totalCount: t.exposeInt('totalCount', {
        description:
          'Rows in the whole list with its filters, counted before the per-row permission check (as `pagination.total` is on the page-numbered lists).',
      }),
      edges: t.field({
        type: [EdgeRef],
        description: 'The rows of this page with their cursors.',
        resolve: (c) => c.edges,
      }),
      nodes: t.field({
        type: [node],
        description: 'The rows of this page without cursors (the same rows as `edges`).',
        // biome-ignore lint/suspicious/noExplicitAny: Pothos cannot resolve a field's shape from a generic ref (OutputRef<T>) inside this helper
        resolve: (c) => c.edges.map((e) => e.node) as any,
      }),
      pageInfo: t.field({
        type: PageInfoRef,
        description: "Cursors of the page's ends and whether more rows lie beyond them.",
        resolve: (c) => c.pageInfo,
      }),
    }),
  });
}
