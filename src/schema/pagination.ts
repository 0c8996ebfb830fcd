// The list shape shared by every collection: { nodes, pagination { page perPage total lastPage } }.
import type { ArgBuilder } from '@pothos/core';
import { builder, type Types } from './builder.js';
import type { Page, Pagination } from '../domain/lists.js';

export const PaginationRef = builder.objectRef<Pagination>('Pagination').implement({
  description: '`total` counts rows before the per-row permission filter, so a page may hold fewer than perPage rows.',
  fields: (t) => ({
    page: t.exposeInt('page'),
    perPage: t.exposeInt('perPage'),
    total: t.exposeInt('total'),
    lastPage: t.exposeInt('lastPage'),
  }),
});

export const DirectionEnum = builder.enumType('Direction', {
  values: { ASC: { value: 'asc' }, DESC: { value: 'desc' } } as const,
});

/** `<Name>List { nodes: [Name!]! pagination: Pagination! }` */
export function listOf<T>(name: string, item: any) {
  return builder.objectRef<Page<T>>(`${name}List`).implement({
    fields: (t) => ({
      nodes: t.field({ type: [item], resolve: (p) => p.nodes }),
      pagination: t.field({ type: PaginationRef, resolve: (p) => p.pagination }),
    }),
  });
}

/** Arguments every list field takes besides its own order enum and filters. */
export const pageArgs = (arg: ArgBuilder<Types>) => ({
  page: arg.int({ required: false, description: 'Page number, from 1 (default 1).' }),
  perPage: arg.int({ required: false, description: 'Rows per page: default 20, larger values are clamped to 100.' }),
  direction: arg({ type: DirectionEnum, required: false }),
});

/** The `order` enum of a list: one value per whitelisted REST name (`display_order` → DISPLAY_ORDER). */
export function orderEnum<K extends string>(name: string, orders: Record<K, string>) {
  const values = Object.fromEntries(Object.keys(orders).map((k) => [k.toUpperCase(), { value: k as K }]));
  return builder.enumType(name, { values: values as Record<Uppercase<K>, { value: K }> });
}
