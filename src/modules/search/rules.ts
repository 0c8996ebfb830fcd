// Search rules (contract §10): the `search` connection's arguments checked and turned into one search statement
// (src/modules/downloads/search.ts, which also holds the query language and the visibility as data), cursors over the ranked list,
// and highlights made safe for HTML. Plain functions; the schema's resolvers stay short.
import crypto from 'node:crypto';
import { LIMITS } from '../../config.js';
import type { Download } from '../../generated/prisma/client.js';
import type { Access } from '../../permissions/access.js';
import type { CursorSeal, PageInfo } from '../../db/keyset.js';
import type { Database } from '../../db/database.js';
import {
  MARK_END,
  MARK_START,
  searchDownloads,
  searchTextOf,
  type SearchFacets,
  type SearchHighlight,
  type SearchOrderColumn,
} from '../downloads/index.js';
import { invalidInput } from '../../errors.js';
import { normalizeTags, type DownloadFilter, type DownloadRelations, type DownloadState } from '../downloads/index.js';

/** SearchOrder values and the column each sorts by (all best first: descending). */
export const SEARCH_ORDERS = {
  relevance: 'relevance',
  downloads: 'downloadCount',
  rating: 'ratingAvg',
  newest: 'createdDate',
  updated: 'lastUpdate',
} as const satisfies Record<string, SearchOrderColumn>;
export type SearchOrder = keyof typeof SEARCH_ORDERS;

/** The `filter` argument of `search`. */
export interface SearchFilterInput {
  categoryId?: number | null;
  tags?: readonly string[] | null;
  prefixId?: number | null;
  userId?: number | null;
  state?: DownloadState | null;
  updatedSince?: Date | null;
}

export interface SearchArgs {
  query: string;
  filter?: SearchFilterInput | null;
  order?: SearchOrder | null;
  first?: number | null;
  after?: string | null;
}

export interface SearchEdge {
  cursor: string;
  node: Download;
  /** The fields with matches in <mark>…</mark>, everything else HTML-escaped. */
  highlight: SearchHighlight;
}

export interface SearchConnection {
  totalCount: number;
  totalCountIsExact: boolean;
  edges: SearchEdge[];
  pageInfo: PageInfo;
  facets: SearchFacets | null;
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** A highlighted text for HTML: its own text escaped, the statement's match marks turned into <mark>…</mark>. */
export function highlightHtml(marked: string): string {
  return marked
    .replace(/[&<>"']/g, (c) => ESCAPES[c]!)
    .replaceAll(MARK_START, '<mark>')
    .replaceAll(MARK_END, '</mark>');
}

/** What a cursor is bound to: the search it came from (query, filter and order), so another search refuses it. */
function searchKey(args: SearchArgs): string {
  const key = JSON.stringify([args.query.trim(), args.filter ?? null, args.order ?? 'relevance']);
  return crypto.createHash('sha256').update(key).digest('base64url').slice(0, 16);
}

function cursorOf(seal: CursorSeal, key: string, offset: number): string {
  return seal.seal(Buffer.from(JSON.stringify({ s: key, o: offset })));
}

function offsetOf(seal: CursorSeal, key: string, after: string): number {
  const plain = seal.open(after);
  let parsed: { s?: unknown; o?: unknown } | null = null;
  try {
    parsed = plain ? (JSON.parse(plain.toString('utf8')) as { s?: unknown; o?: unknown }) : null;
  } catch {
    parsed = null;
  }
  if (!parsed || parsed.s !== key || !Number.isInteger(parsed.o) || (parsed.o as number) < 0)
    throw invalidInput('after', 'after is not a cursor of this search (same query, filter and order).');
  return (parsed.o as number) + 1;
}

function pageSize(first: number | null | undefined): number {
  if (first == null) return LIMITS.defaultPageSize;
  if (!Number.isInteger(first) || first < 1)
    throw invalidInput(
      'first',
      `first must be a whole number from 1 to ${LIMITS.maxPageSize} (larger values are clamped), got ${first}.`,
    );
  return Math.min(first, LIMITS.maxPageSize);
}

/** The statement's filter for `filter`: a category counts with its subcategories (`subtree`). */
function filterOf(f: SearchFilterInput | null | undefined, subtree: (id: number) => number[]): DownloadFilter {
  const filter: DownloadFilter = {};
  if (!f) return filter;
  if (f.categoryId != null) filter.categoryIds = subtree(f.categoryId);
  if (f.tags?.length) filter.tags = normalizeTags(f.tags);
  if (f.prefixId != null) filter.prefixId = f.prefixId === 0 ? null : f.prefixId;
  if (f.userId != null) filter.userId = f.userId;
  if (f.state != null) filter.state = f.state;
  if (f.updatedSince != null) filter.since = f.updatedSince;
  return filter;
}

/**
 * One page of a search: the downloads the visitor may view that match, best first (or in `order`), after the
 * cursor `after`. totalCount and the facets count the results (every match the visitor may view, up to
 * LIMITS.searchMaxResults: past it, totalCountIsExact is false), and nothing else.
 */
export async function searchConnection(
  deps: { db: Pick<Database, 'query' | 'kind'>; cursors: CursorSeal },
  access: Access,
  subtree: (categoryId: number) => number[],
  args: SearchArgs,
  want: { facets: boolean; highlights: boolean; rel: DownloadRelations },
): Promise<SearchConnection> {
  const text = searchTextOf(args.query, 'query');
  const first = pageSize(args.first);
  // The search's key and the cursors are sealed only when asked for (a page's 20 cursors are 20 AES-GCM seals), each
  // once: an edge's cursor and the page's start or end cursor are the same string.
  let key: string | undefined;
  const keyOf = () => {
    key ??= searchKey(args);
    return key;
  };
  const offset = args.after != null ? offsetOf(deps.cursors, keyOf(), args.after) : 0;
  const result = await searchDownloads(deps.db, {
    text,
    filter: filterOf(args.filter, subtree),
    visibility: access.downloadVisibility(),
    order: SEARCH_ORDERS[args.order ?? 'relevance'],
    direction: 'desc',
    offset,
    take: first,
    first,
    facets: want.facets,
    highlights: want.highlights,
    rel: want.rel,
  });
  const cursors: (string | undefined)[] = [];
  const cursorAt = (i: number) => {
    cursors[i] ??= cursorOf(deps.cursors, keyOf(), offset + i);
    return cursors[i];
  };
  const edges = result.hits.map((h, i): SearchEdge => {
    let highlight: SearchHighlight | undefined;
    return {
      get cursor() {
        return cursorAt(i);
      },
      node: h.download,
      get highlight() {
        highlight ??= {
          title: highlightHtml(h.highlight?.title ?? h.download.title),
          tagLine: highlightHtml(h.highlight?.tagLine ?? h.download.tagLine),
          description: highlightHtml(h.highlight?.description ?? ''),
        };
        return highlight;
      },
    };
  });
  const last = edges.length - 1;
  return {
    totalCount: result.total,
    totalCountIsExact: result.totalIsExact,
    edges,
    pageInfo: {
      hasNextPage: offset + edges.length < result.total,
      hasPreviousPage: offset > 0,
      get startCursor() {
        return last >= 0 ? cursorAt(0) : null;
      },
      get endCursor() {
        return last >= 0 ? cursorAt(last) : null;
      },
    },
    facets: result.facets,
  };
}
