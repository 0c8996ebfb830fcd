// The list shape shared by every collection: { nodes, pagination { page perPage total lastPage } }.
import { LIMITS } from '../config.js';
import type { ArgBuilder, OutputRef } from '@pothos/core';
import { builder, type Types } from './builder.js';
import { DEFAULT_PER_PAGE, MAX_PER_PAGE, type Page, type Pagination } from '../db/lists.js';
import { invalidInput } from '../errors.js';

export const PaginationRef = builder.objectRef<Pagination>('Pagination').implement({
  description:
    'Where a page sits in its list. `total` counts rows before the per-row permission filter, so a page may hold fewer than perPage rows.',
  fields: (t) => ({
    page: t.exposeInt('page', { description: 'The page returned, from 1.' }),
    perPage: t.exposeInt('perPage', {
      description: `The page size used: the perPage asked for (default ${LIMITS.defaultPageSize}), at most ${LIMITS.maxPageSize}.`,
    }),
    total: t.exposeInt('total', {
      description: 'Rows matching the filters, counted before rows the visitor may not view are dropped.',
    }),
    lastPage: t.exposeInt('lastPage', {
      description: 'The number of the last page: total / perPage rounded up, at least 1. A page past it is empty.',
    }),
  }),
});

export const DirectionEnum = builder.enumType('Direction', {
  description:
    'The sort direction of a list. Rows that tie on the ordered field are ordered by their id in the same direction.',
  values: {
    ASC: { value: 'asc', description: 'Ascending: smallest, oldest or alphabetically first at the top.' },
    DESC: {
      value: 'desc',
      description: 'Descending: largest, newest or alphabetically last at the top. The default of every list.',
    },
  } as const,
});

/** `<Name>List { nodes: [Name!]! pagination: Pagination! }` */
export function listOf<T>(name: string, item: OutputRef<T>) {
  return builder.objectRef<Page<T>>(`${name}List`).implement({
    description: `One page of ${name} objects and where it sits in the whole list.`,
    fields: (t) => ({
      nodes: t.field({
        type: [item],
        description: `The ${name} objects of this page the visitor may view, in the order asked; rows the visitor may not view are left out, so there may be fewer than perPage.`,
        resolve: (p) => p.nodes,
      }),
      pagination: t.field({
        type: PaginationRef,
        description: 'Page number, page size, total row count and last page.',
        resolve: (p) => p.pagination,
      }),
    }),
  });
}

/** Arguments every list field takes besides its own order enum and filters. */
export const pageArgs = (arg: ArgBuilder<Types>) => ({
  page: arg.int({
    required: false,
    description:
      'Page number, from 1 (default 1). Below 1 answers invalid_input; past the last page the page is empty.',
  }),
  perPage: arg.int({
    required: false,
    description: `Rows per page, from 1 (default ${LIMITS.defaultPageSize}); larger values are clamped to ${LIMITS.maxPageSize}. Below 1 answers invalid_input.`,
  }),
  direction: arg({ type: DirectionEnum, required: false, description: 'Sort direction of `order` (default DESC).' }),
});

/** What a list's order values mean, for the schema's docs. */
export interface OrderDocs<K extends string> {
  description?: string;
  values?: Partial<Record<K, string>>;
}

/**
 * The `order` enum of a list: one value per whitelisted REST name (`display_order` → DISPLAY_ORDER), described by
 * `docs` (a value without its own text says which field it sorts by).
 */
export function orderEnum<K extends string>(name: string, orders: Record<K, string>, docs: OrderDocs<K> = {}) {
  const values = Object.fromEntries(
    Object.entries<string>(orders).map(([k, field]) => [
      k.toUpperCase(),
      {
        value: k as K,
        description: docs.values?.[k as K] ?? `By \`${field}\`.`,
      },
    ]),
  );
  return builder.enumType(name, {
    description: docs.description ?? 'The field a list is sorted by; ties are broken by id in the same direction.',
    values: values as Record<Uppercase<K>, { value: K; description: string }>,
  });
}

/**
 * `first` of a plain list field (one that is neither a connection nor a page object): the number of items it answers,
 * from the start of its order. Every list of the schema is bounded (contract §9); test/list-bounds.test.ts checks it.
 */
export const firstArg = (arg: ArgBuilder<Types>, what: string) =>
  arg.int({
    required: false,
    description: `The first ${what} to answer: default ${DEFAULT_PER_PAGE}, larger values than ${MAX_PER_PAGE} are clamped to ${MAX_PER_PAGE}; 0 or less is refused (invalid_input).`,
  });

/** The item count `first` asks for: default 20, at most 100; below 1 or not whole answers invalid_input (field `first`). */
export function firstOf(first: number | null | undefined): number {
  if (first == null) return DEFAULT_PER_PAGE;
  if (!Number.isInteger(first) || first < 1) {
    throw invalidInput(
      'first',
      `first must be a whole number from 1 to ${MAX_PER_PAGE} (larger values are clamped to ${MAX_PER_PAGE}), got ${first}.`,
    );
  }
  return Math.min(first, MAX_PER_PAGE);
}
