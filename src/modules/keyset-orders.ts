// The orders each kind of row can be paged by with cursors: the same whitelists as the page-numbered lists
// (CATEGORY_ORDERS, DOWNLOAD_ORDERS, COMMENT_ORDERS, FILE_ORDERS), with the type of each column, which a cursor
// must carry faithfully. Default orders and directions are those of the page-numbered lists.
import type { Direction } from '../db/lists.js';
import type { KeyColumn, KeysetSpec } from '../db/keyset.js';
import { CATEGORY_ORDERS, type CategoryOrder } from './categories/index.js';
import { DOWNLOAD_ORDERS, type DownloadListOrder, type DownloadOrder } from './downloads/index.js';
import { invalidInput } from '../errors.js';
import { COMMENT_ORDERS, type CommentOrder } from './comments/index.js';
import { FILE_ORDERS, type FileOrder } from './files/index.js';

type Columns<K extends string> = Record<K, KeyColumn>;

export const CATEGORY_KEYS: Columns<CategoryOrder> = {
  display_order: { name: CATEGORY_ORDERS.display_order, kind: 'int' },
  title: { name: CATEGORY_ORDERS.title, kind: 'string' },
  download_count: { name: CATEGORY_ORDERS.download_count, kind: 'int' },
};

export const DOWNLOAD_KEYS: Columns<DownloadOrder> = {
  created_date: { name: DOWNLOAD_ORDERS.created_date, kind: 'date' },
  last_update: { name: DOWNLOAD_ORDERS.last_update, kind: 'date' },
  download_count: { name: DOWNLOAD_ORDERS.download_count, kind: 'int' },
  view_count: { name: DOWNLOAD_ORDERS.view_count, kind: 'int' },
  title: { name: DOWNLOAD_ORDERS.title, kind: 'string' },
};

/** A download connection's order: RELEVANCE and RATING sort searches only (invalid_input here). */
export function downloadKeyOrder(order: DownloadListOrder | null | undefined): DownloadOrder | null | undefined {
  if (order === 'relevance' || order === 'rating')
    throw invalidInput('order', `order ${order.toUpperCase()} sorts a search (downloads with q); a connection cannot.`);
  return order;
}

export const COMMENT_KEYS: Columns<CommentOrder> = {
  comment_date: { name: COMMENT_ORDERS.comment_date, kind: 'date' },
  // Never-edited comments have no date: they sort first ascending, last descending.
  last_edit_date: { name: COMMENT_ORDERS.last_edit_date, kind: 'date', nullable: true },
};

export const FILE_KEYS: Columns<FileOrder> = {
  display_order: { name: FILE_ORDERS.display_order, kind: 'int' },
  file_size: { name: FILE_ORDERS.file_size, kind: 'bigint' },
  download_count: { name: FILE_ORDERS.download_count, kind: 'int' },
};

export const VERSION_ORDERS = { release_date: 'releaseDate' } as const;
export type VersionOrder = keyof typeof VERSION_ORDERS;
export const VERSION_KEYS: Columns<VersionOrder> = {
  release_date: { name: VERSION_ORDERS.release_date, kind: 'date' },
};

export const TEAM_ORDERS = { added_at: 'addedAt' } as const;
export type TeamOrder = keyof typeof TEAM_ORDERS;
export const TEAM_KEYS: Columns<TeamOrder> = { added_at: { name: TEAM_ORDERS.added_at, kind: 'date' } };

/** The keyset of `list` in `order` (else `defaultOrder`) and `direction` (else `defaultDirection`). */
export function keysetOf<K extends string>(
  list: string,
  keys: Columns<K>,
  order: K | null | undefined,
  direction: Direction | null | undefined,
  defaultOrder: K,
  defaultDirection: Direction = 'desc',
): KeysetSpec {
  const o = order ?? defaultOrder;
  return { list, order: o, direction: direction ?? defaultDirection, column: keys[o] };
}
