// Search: the `search` connection (contract §10) and the facets it shares with the `downloads` list's search (`q`).
// Needs mc_dm_download:read, as every download read does.
import { queryFromInfo } from '@pothos/plugin-prisma';
import { LIMITS } from '../../config.js';
import { builder } from '../../graphql/builder.js';
import { PageInfoRef } from '../../graphql/connections.js';
import { selectedFields } from '../../graphql/selected-fields.js';
import type { SearchFacets, SearchHighlight } from '../downloads/index.js';
import { CategoryRef } from '../categories/index.js';
import {
  DownloadList,
  DownloadRef,
  DownloadStateEnum,
  downloadRelationsOf,
  type DownloadPage,
} from '../downloads/index.js';
import * as search from './rules.js';

const READ = ['mc_dm_download:read'];

export const SearchOrderEnum = builder.enumType('SearchOrder', {
  description: 'How `search` sorts what it finds (always best first); ties are broken by downloadId, descending.',
  values: {
    RELEVANCE: {
      value: 'relevance',
      description:
        'Best match first (the default): matches in the title weigh most, then tags and tag line, then the description; typo-tolerant title matches come after exact matches.',
    },
    DOWNLOADS: { value: 'downloads', description: 'Most downloaded first (downloadCount).' },
    RATING: { value: 'rating', description: 'Best rated first (ratingAvg, then ratingCount).' },
    NEWEST: { value: 'newest', description: 'Newest first (createdDate).' },
    UPDATED: { value: 'updated', description: 'Most recently updated first (lastUpdate).' },
  } as const,
});

export const DownloadFilterInput = builder.inputType('DownloadFilter', {
  description: 'Narrows a search; every field given must hold.',
  fields: (t) => ({
    categoryId: t.int({
      required: false,
      description: 'Only downloads in this category or any category below it.',
    }),
    tags: t.stringList({
      required: false,
      description: `Only downloads carrying every one of these tags (trimmed, lower-cased; at most ${LIMITS.maxTags}).`,
    }),
    prefixId: t.int({ required: false, description: 'Only downloads with this prefix; 0: downloads without one.' }),
    userId: t.int({ required: false, description: 'Only downloads owned by this user.' }),
    state: t.field({
      type: DownloadStateEnum,
      required: false,
      description: 'Only downloads in this state (among those the visitor may view in any case).',
    }),
    updatedSince: t.field({
      type: 'DateTime',
      required: false,
      description: 'Only downloads updated at or after this moment.',
    }),
  }),
});

export const SearchHighlightRef = builder.objectRef<SearchHighlight>('SearchHighlight').implement({
  description:
    "A found download's text with what matched the query wrapped in <mark>…</mark>; everything else is HTML-escaped, so the strings can be put into a page as HTML. Matches on accents, case and word forms count (`cafe` marks Café, `run` marks Running).",
  fields: (t) => ({
    title: t.exposeString('title', { description: 'The whole title.' }),
    tagLine: t.exposeString('tagLine', { description: 'The whole tag line; empty when none.' }),
    description: t.exposeString('description', {
      description:
        'Up to two passages of the description around its matches (BB code removed), joined by " … "; its opening words when nothing in it matched.',
    }),
  }),
});

const SearchEdgeRef = builder.objectRef<search.SearchEdge>('DownloadSearchEdge').implement({
  description: 'One download a search found, with its cursor and its highlighted text.',
  fields: (t) => ({
    cursor: t.exposeString('cursor', {
      description: "This row's position in the results: pass it as `after` to the same search to page on from here.",
    }),
    node: t.field({ type: DownloadRef, description: 'The download.', resolve: (e) => e.node }),
    highlight: t.field({
      type: SearchHighlightRef,
      description: 'Its title, tag line and description with the matches marked.',
      resolve: (e) => e.highlight,
    }),
  }),
});

const CategoryFacetRef = builder.objectRef<SearchFacets['categories'][number]>('CategoryFacet').implement({
  description: 'A category, and how many of the found downloads are in it.',
  fields: (t) => ({
    category: t.field({
      type: CategoryRef,
      description: 'The category.',
      resolve: (f) => f.category,
    }),
    count: t.exposeInt('count', { description: 'Found downloads in this category (not counting subcategories).' }),
  }),
});

const TagFacetRef = builder.objectRef<SearchFacets['tags'][number]>('TagFacet').implement({
  description: 'A tag, and how many of the found downloads carry it.',
  fields: (t) => ({
    tag: t.exposeString('tag', { description: 'The tag (lower case).' }),
    count: t.exposeInt('count', { description: 'Found downloads carrying it.' }),
  }),
});

const PrefixFacetRef = builder.objectRef<SearchFacets['prefixes'][number]>('PrefixFacet').implement({
  description: 'A prefix, and how many of the found downloads have it.',
  fields: (t) => ({
    prefixId: t.exposeInt('prefixId', { description: 'The prefix id.' }),
    count: t.exposeInt('count', { description: 'Found downloads with this prefix.' }),
  }),
});

const FACET_NOTE = `the ${LIMITS.searchFacetSize} most frequent, most first (ties alphabetically or by id); only downloads the visitor may view are counted, and only the results (at most ${LIMITS.searchMaxResults})`;

export const SearchFacetsRef = builder.objectRef<SearchFacets>('SearchFacets').implement({
  description: `What the whole result (every page of it, at most ${LIMITS.searchMaxResults} downloads: when more match, the ${LIMITS.searchMaxResults} results the search answers) holds, counted by category, tag and prefix.`,
  fields: (t) => ({
    categories: t.field({
      type: [CategoryFacetRef],
      description: `Categories of the found downloads: ${FACET_NOTE}.`,
      resolve: (f) => f.categories,
    }),
    tags: t.field({
      type: [TagFacetRef],
      description: `Tags of the found downloads: ${FACET_NOTE}.`,
      resolve: (f) => f.tags,
    }),
    prefixes: t.field({
      type: [PrefixFacetRef],
      description: `Prefixes of the found downloads (those without one are not counted): ${FACET_NOTE}.`,
      resolve: (f) => f.prefixes,
    }),
  }),
});

export const DownloadSearchConnection = builder
  .objectRef<search.SearchConnection>('DownloadSearchConnection')
  .implement({
    description: `The downloads a search found, one page at a time (Relay cursor connection). Unlike the lists, every count here (totalCount, facets) counts only downloads the visitor may view, so a page holds \`first\` rows unless it is the last. A search answers at most ${LIMITS.searchMaxResults} results (by relevance: the ${LIMITS.searchMaxResults} most downloaded matches, ranked; in another order: the first ${LIMITS.searchMaxResults} in it); when more match, totalCount is ${LIMITS.searchMaxResults}, totalCountIsExact false, and no page reaches past them.`,
    fields: (t) => ({
      edges: t.field({
        type: [SearchEdgeRef],
        description: 'The found downloads of this page.',
        resolve: (c) => c.edges,
      }),
      nodes: t.field({
        type: [DownloadRef],
        description: 'The found downloads of this page without cursors or highlights (the same rows as `edges`).',
        resolve: (c) => c.edges.map((e) => e.node),
      }),
      pageInfo: t.field({
        type: PageInfoRef,
        description: "Cursors of the page's ends and whether more results follow.",
        resolve: (c) => c.pageInfo,
      }),
      totalCount: t.exposeInt('totalCount', {
        description: `Downloads found in all, among those the visitor may view (typo-tolerant title matches included), at most ${LIMITS.searchMaxResults}: when totalCountIsExact is false, at least this many matched.`,
      }),
      totalCountIsExact: t.exposeBoolean('totalCountIsExact', {
        description: `False when more than ${LIMITS.searchMaxResults} downloads matched: totalCount is then ${LIMITS.searchMaxResults} (a lower bound), the results and facets are the first ${LIMITS.searchMaxResults} in the search's order.`,
      }),
      facets: t.field({
        type: SearchFacetsRef,
        description: 'The whole result counted by category, tag and prefix.',
        resolve: (c) => c.facets ?? { categories: [], tags: [], prefixes: [] },
      }),
    }),
  });

builder.objectField(DownloadList, 'totalIsExact', (t) =>
  t.boolean({
    nullable: true,
    description: `With \`q\`: false when more than ${LIMITS.searchMaxResults} downloads matched, so pagination.total is ${LIMITS.searchMaxResults} (at least that many matched) and no page reaches past them; true when pagination.total is the exact count. Null without \`q\` (list totals are always exact).`,
    resolve: (p) => (p as DownloadPage).totalIsExact ?? null,
  }),
);

builder.objectField(DownloadList, 'facets', (t) =>
  t.field({
    type: SearchFacetsRef,
    nullable: true,
    description: `With \`q\`: the whole result counted by category, tag and prefix (only downloads the visitor may view, and at most the ${LIMITS.searchMaxResults} results a search answers). Selecting it without \`q\` answers invalid_input.`,
    resolve: (p) => (p as DownloadPage).facets ?? null,
  }),
);

builder.queryFields((t) => ({
  search: t.field({
    type: DownloadSearchConnection,
    nullable: true,
    description: `Finds downloads the visitor may view by what their title, tags, tag line and description say. Needs mc_dm_download:read. The query is read in web-search syntax: words must all occur (in any form of the word: "running" finds run), "a phrase" in that order, -word excludes, \`or\` gives alternatives; accents and case do not matter; the last word also matches as the start of a word (type-ahead). When fewer than \`first\` downloads match exactly, titles similar to the query (a typo) are added after them. Errors: required_input_missing (an empty or blank query), invalid_input (over ${LIMITS.maxSearchQuery} characters or ${LIMITS.maxSearchTerms} words, no word to look for, a bad first or after).`,
    authScopes: { scope: READ },
    args: {
      query: t.arg.string({ required: true, description: 'What to look for, in web-search syntax.' }),
      filter: t.arg({ type: DownloadFilterInput, required: false, description: 'Only downloads matching this too.' }),
      order: t.arg({
        type: SearchOrderEnum,
        required: false,
        defaultValue: 'relevance',
        description: 'How to sort (default RELEVANCE).',
      }),
      first: t.arg.int({
        required: false,
        description: `Results from the start (or after \`after\`): default ${LIMITS.defaultPageSize}, larger values than ${LIMITS.maxPageSize} are clamped to ${LIMITS.maxPageSize}; 0 or less is refused.`,
      }),
      after: t.arg.string({
        required: false,
        description: 'A cursor returned by this same search (query, filter and order): the page starts after it.',
      }),
    },
    resolve: async (_r, args, ctx, info) => {
      const access = await ctx.access();
      const tree = await ctx.permissions.resolverFor(ctx.visitor.groupIds);
      const query = queryFromInfo({ context: ctx, info, typeName: 'Download', path: ['edges', 'node'] }) as object;
      return search.searchConnection(ctx, access, (id) => tree.subtreeOf(id), args, {
        facets: selectedFields(info, [])?.has('facets') ?? true,
        highlights: selectedFields(info, ['edges'])?.has('highlight') ?? true,
        rel: downloadRelationsOf(query as never) ?? { category: false, currentVersion: false },
      });
    },
  }),
}));
