// Full-text search over downloads: the query language (web-search syntax, the last word as a prefix), and the one
// statement that answers a search: the page, the total, the facets and the highlights together, with the visitor's
// permissions inside the statement (categories they may view, states they may see), so that nothing they may not
// see is counted, faceted or highlighted.
//
// The documents are kept by triggers (prisma/migrations/20270101000000_search): `download."searchVector"` (title A,
// tags and tag line B, description without BB code C) in the text search configuration `dcs_search`, which folds
// accents (unaccent) before the stemmer of SEARCH_LANGUAGE. Plan, for large catalogues: a search answers at most
// LIMITS.searchMaxResults results, the first of the exact matches in its order (relevance: the most downloaded, then
// ranked by ts_rank, which reads each document), so that a common word reads that many rows (walking the order's
// index, or the GIN index's matches for a rarer word, as the planner estimates), not every match; the total counts
// them and says whether more matched, the facets count them. The typo fallback runs only when the exact matches are
// fewer than the page: the query's words corrected from the lexicon of title words (a few index lookups), the titles
// holding them found through the index of the titles' words, offered by trigram similarity to the query.
import { LIMITS, type SearchLanguage } from '../../config.js';
import { invalidInput, requiredMissing } from '../../errors.js';
import type { Database } from '../../db/database.js';
import { filterSql, type Bind } from '../../db/filters.js';
import { jsonOf, revive, type JsonRow } from '../../db/rows.js';
import type { Category, Version } from '../../generated/prisma/client.js';
import type { DownloadVisibility } from '../../permissions/access.js';
import {
  DOWNLOAD_FILTER,
  type DownloadFilter,
  type DownloadRelations as Relations,
  type DownloadRow,
} from './store.js';

export type { DownloadVisibility } from '../../permissions/access.js';

/** A search query, checked and split: the words before the last, and the last word when it is matched as a prefix. */
export interface SearchText {
  /** The words to look for (no `-exclusions`, `or` or quotes), for the typo fallback on titles. */
  text: string;
  /** The excluded words (`-word`, without the dash), or-ed: the typo fallback leaves out titles holding them. */
  excluded: string;
  /** Web-search syntax (websearch_to_tsquery) for everything but the prefix word. */
  head: string;
  /** The last word, matched as a prefix (type-ahead); null when the query does not end in a plain word. */
  prefix: string | null;
  /** The prefix word follows `or`: it is an alternative to the head, not a further condition. */
  prefixOr: boolean;
}

const WORD = /^[\p{L}\p{N}]+$/u;

/**
 * `raw` checked and split. Empty or blank: 400 required_input_missing naming `field`; longer than
 * LIMITS.maxSearchQuery characters, more than LIMITS.maxSearchTerms words, or no word to look for (only `-word`
 * exclusions and `or`): 400 invalid_input. Anything else is answered: web-search syntax never fails (an unclosed
 * quote, a stray `-` or `or` are read as websearch_to_tsquery reads them).
 */
export function searchTextOf(raw: string, field: string): SearchText {
  const text = raw.trim();
  if (!text) throw requiredMissing([field]);
  if ([...text].length > LIMITS.maxSearchQuery)
    throw invalidInput(field, `${field} must be at most ${LIMITS.maxSearchQuery} characters.`);
  const words = text.split(/\s+/);
  if (words.length > LIMITS.maxSearchTerms)
    throw invalidInput(field, `${field} may hold at most ${LIMITS.maxSearchTerms} words, got ${words.length}.`);
  const positive = words.filter((w) => !w.startsWith('-') && w.toLowerCase() !== 'or' && /[\p{L}\p{N}]/u.test(w));
  if (positive.length === 0)
    throw invalidInput(field, `${field} needs at least one word to look for (besides -exclusions and "or").`);
  const plain = (w: string) => w.replace(/"/g, '');
  const fuzzy = positive.map(plain).join(' ');
  const excluded = words
    .filter((w) => w.startsWith('-') && w.length > 1)
    .map((w) => plain(w.slice(1)))
    .join(' or ');
  const last = words[words.length - 1]!;
  const quotes = (text.match(/"/g) ?? []).length;
  // The last word is a prefix when it is a plain word outside quotes, typed to its end (no trailing space).
  if (!WORD.test(last) || last.toLowerCase() === 'or' || quotes % 2 === 1 || /\s$/.test(raw)) {
    return { text: fuzzy, excluded, head: text, prefix: null, prefixOr: false };
  }
  const before = words.slice(0, -1);
  const prefixOr = before.length > 1 && before[before.length - 1]!.toLowerCase() === 'or';
  const head = (prefixOr ? before.slice(0, -1) : before).join(' ');
  return { text: fuzzy, excluded, head, prefix: last, prefixOr };
}

export type SearchOrderColumn = 'relevance' | 'downloadCount' | 'ratingAvg' | 'createdDate' | 'lastUpdate';

export interface SearchRequest {
  text: SearchText;
  filter: DownloadFilter;
  /** null: every download (super-user keys). */
  visibility: DownloadVisibility | null;
  order: SearchOrderColumn;
  /** Of the orders other than relevance (which is always best first). */
  direction: 'asc' | 'desc';
  /** Rows to skip, and to read after them. */
  offset: number;
  take: number;
  /** The page size asked for: fewer exact matches than this call in the typo fallback. */
  first: number;
  facets: boolean;
  highlights: boolean;
  rel: Relations;
}

export interface SearchHighlight {
  /** The fields with matches between U+0001 and U+0002 (callers escape the rest and turn these into marks). */
  title: string;
  tagLine: string;
  description: string;
}

export interface SearchFacets {
  categories: { categoryId: number; count: number; category: Category }[];
  tags: { tag: string; count: number }[];
  prefixes: { prefixId: number; count: number }[];
}

export interface SearchHit {
  download: DownloadRow;
  highlight: SearchHighlight | null;
}

export interface SearchResult {
  /** Results in all, at most LIMITS.searchMaxResults. */
  total: number;
  /** False when more downloads matched than LIMITS.searchMaxResults: `total` is then the bound (at least that many). */
  totalIsExact: boolean;
  hits: SearchHit[];
  facets: SearchFacets | null;
}

/** Marks ts_headline puts around matches: control characters no stored text keeps (the statement removes them). */
export const MARK_START = '\u0001';
export const MARK_END = '\u0002';

/** The ORDER BY of the exact matches over table `t`: relevance takes the most downloaded first; ties by id. */
function candidateOrderSql(order: SearchOrderColumn, direction: 'asc' | 'desc', t: string): string {
  if (order === 'relevance') return `${t}."downloadCount" DESC, ${t}.id DESC`;
  const dir = direction === 'asc' ? 'ASC' : 'DESC';
  const columns = order === 'ratingAvg' ? ['ratingAvg', 'ratingCount'] : [order];
  return `${columns.map((c) => `${t}."${c}" ${dir}`).join(', ')}, ${t}.id ${dir}`;
}

function visibilitySql(v: DownloadVisibility | null, t: string, bind: Bind): string[] {
  if (!v) return [];
  const owner = v.userId === 0 ? 'FALSE' : `${t}."userId" = ${bind(v.userId)}::int`;
  return [
    `${t}."categoryId" = ANY(${bind(v.categoryIds)}::int[])`,
    `(${t}.state = 'visible'
      OR (${t}.state = 'moderated' AND (${owner} OR ${t}."categoryId" = ANY(${bind(v.moderatedIn)}::int[])))
      OR (${t}.state = 'deleted' AND ${t}."categoryId" = ANY(${bind(v.deletedIn)}::int[]))
      OR (${t}.state = 'draft' AND ${owner}))`,
  ];
}

/** The categories of `ids` the visitor may view (all of them when every download is visible). */
function viewable(ids: readonly number[], v: DownloadVisibility | null): number[] {
  if (!v) return [...ids];
  const visible = new Set(v.categoryIds);
  return ids.filter((id) => visible.has(id));
}

/**
 * The tsquery of `s` as SQL (config dcs_search: accents folded, stemmed as the documents are). `lexemes`: the lexemes
 * the prefix word starts (prefixLexemes), looked for instead of the prefix; they match the same documents.
 */
function tsquerySql(s: SearchText, bind: Bind, lexemes: readonly string[] | null = null): string {
  const head = `websearch_to_tsquery('dcs_search', ${bind(s.head)}::text)`;
  if (s.prefix === null) return head;
  const prefix = lexemes
    ? `${bind(lexemes.map((l) => `'${l.replace(/[\\']/g, '\\$&')}'`).join(' | '))}::tsquery`
    : `to_tsquery('dcs_search', ${bind(`${s.prefix}:*`)}::text)`;
  return `(${head} ${s.prefixOr ? '||' : '&&'} ${prefix})`;
}

/** What the lexicon knows of a query's words. */
interface Lexicon {
  /**
   * The lexemes of the search documents that the prefix word starts (its lexeme in dcs_search, as `to_tsquery('word:*')`
   * makes it): looked for exactly, they match the documents the prefix matches, and the GIN index reads them as far as
   * the query needs, where a prefix has it collect every posting of every lexeme it starts first. Null, to match the
   * prefix as such: when there is no prefix word, when it makes no lexeme or more than one (a stop word, a word the
   * parser splits), when no document holds a lexeme it starts, or when it starts more than LIMITS.searchPrefixLexemes.
   */
  prefix: string[] | null;
  /**
   * No document can match: the query is a plain conjunction (no "or") and one of its words is in no document (or its
   * prefix word starts none); the search then goes straight to the typo fallback, without looking for exact matches
   * (as the prefix's lexemes, this trusts the lexicon to hold every lexeme of every document).
   */
  none: boolean;
}

/**
 * What the lexicon of the documents' lexemes (search_lexeme, migration 20270125000000_search_prefixes), which holds
 * every lexeme of every document (and keeps those of deleted ones, which only makes `none` rarer), knows of `s`, in
 * one statement. A prefix is a range of the lexicon's key ("C" collation): the lexemes from the prefix up to the prefix
 * followed by U+10FFFF, the last code point (a lexeme that continues the prefix with it, a noncharacter, would be left
 * out). The words every match must hold are those the query's lexemes are made of, by the same parser and
 * configuration as websearch_to_tsquery makes them (stop words make none).
 */
async function lexiconOf(db: Pick<Database, 'query'>, s: SearchText): Promise<Lexicon> {
  // The words every match holds: those of a query without "or", less the -exclusions (quotes only group them).
  const plain = !s.prefixOr && !/(^|\s)or(\s|$)/i.test(s.head);
  const required = plain
    ? s.head
        .split(/\s+/)
        .filter((w) => w && !w.startsWith('-'))
        .join(' ')
        .replace(/"/g, ' ')
    : '';
  const [row] = await db.query<{ lexemes: string[] | null; prefixes: number | null; unknown: number }>(
    `SELECT (SELECT array_agg(s.lexeme ORDER BY s.lexeme) FROM (
         SELECT s.lexeme FROM search_lexeme s
         WHERE s.lexeme >= p.l[1] COLLATE "C" AND s.lexeme < (p.l[1] || chr(1114111)) COLLATE "C"
         ORDER BY s.lexeme LIMIT $2::int + 1) s) AS lexemes, cardinality(p.l) AS prefixes,
       (SELECT count(*)::int FROM unnest(tsvector_to_array(to_tsvector('dcs_search', $3::text))) w(lexeme)
        WHERE NOT EXISTS (SELECT 1 FROM search_lexeme s WHERE s.lexeme = w.lexeme)) AS unknown
     FROM (SELECT tsvector_to_array(to_tsvector('dcs_search', $1::text)) AS l) p`,
    [s.prefix ?? '', LIMITS.searchPrefixLexemes, required],
  );
  const one = row?.prefixes === 1;
  const lexemes = one ? (row.lexemes ?? []) : null;
  return {
    prefix: lexemes && lexemes.length > 0 && lexemes.length <= LIMITS.searchPrefixLexemes ? lexemes : null,
    none: plain && (row!.unknown > 0 || (s.prefix !== null && one && lexemes!.length === 0)),
  };
}

/** Statement texts on one line, by the text as built: a few per combination of options (the values are parameters). */
const oneLines = new Map<string, string>();

/** `sql` with its line breaks and indentation folded to one space (a regular expression over ~8 KB: once per text). */
function oneLine(sql: string): string {
  let line = oneLines.get(sql);
  if (line === undefined) {
    line = sql.replace(/\s*\n\s*/g, ' ');
    // The bound only guards against a flood of combinations.
    if (oneLines.size < 1000) oneLines.set(sql, line);
  }
  return line;
}

const headline = (column: string, options: string) =>
  `ts_headline('dcs_search', translate(${column}, E'\\x01\\x02', ''), q.tq, '${options}, StartSel=${MARK_START}, StopSel=${MARK_END}')`;

/**
 * Runs a search: one statement (the page with its highlights, the total and the facets), planned without the typo
 * fallback; only when it finds fewer exact matches than the page is the statement with the fallback run (the same
 * answer the fallback would add nothing to otherwise). The fallback's parts are a good share of the statement's
 * planning, which a search pays every time (bench/README.md).
 */
export async function searchDownloads(db: Pick<Database, 'query' | 'kind'>, req: SearchRequest): Promise<SearchResult> {
  // The matches are found with the prefix word's lexemes when there are few (the same documents, read more cheaply);
  // rank, highlights and the fallback's check keep the prefix (`q.tq`), so that ranks are as the prefix gives them.
  // On a PostgreSQL server only: on the embedded database the lexicon's statement cost more than it saved (CPU per
  // search at 50,000 downloads, bench/README.md: 14.6 ms without it, 21.0 with it, for a common word).
  // On a PostgreSQL server, a query no document can match (a misspelled word) goes straight to the statement with the
  // fallback; elsewhere the statement without it tells.
  const lexicon = db.kind === 'postgres' ? await lexiconOf(db, req.text) : { prefix: null, none: false };
  const lexemes = lexicon.prefix;
  const run = async (fallback: boolean) => {
    const { sql, params } = searchStatement(req, lexemes, fallback, lexicon.none);
    // Planned for its values each time: a prepared statement's generic plan cannot know whether the words are common
    // (walk the order's index to the first results) or rare (read the GIN index's few matches), and picks the second.
    return (await db.query<JsonRow>(sql, params, { prepared: false }))[0]!;
  };
  let r = lexicon.none ? null : await run(false);
  if (r === null || Number(r.total) < req.first) r = await run(true);
  return resultOf(req, r);
}

/**
 * The search statement and its parameters; `fallback`: with the typo fallback (else the exact matches only); `none`:
 * the lexicon says no document matches exactly, so the statement does not look (the index would read the postings of
 * the query's known words to find nothing: 2 ms for a misspelled title on the 500k catalogue).
 */
function searchStatement(
  req: SearchRequest,
  lexemes: string[] | null,
  fallback: boolean,
  none: boolean,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const bind: Bind = (v) => {
    params.push(v);
    return `$${params.length}`;
  };
  // A category filter (a category's subtree) as an overlap with the download's category as an array, which the
  // documents' GIN index holds beside them (download_category_search_idx, migration
  // 20270129000000_search_category_index): the matches in those categories come from one index scan, not from the
  // documents' bitmap and'ed with a bitmap of every download in the categories. Only the categories the visitor may
  // view (the same rows: the visibility requires them too), so that the index does not read the others' downloads.
  const { categoryIds, ...filter } = req.filter;
  const inCategories =
    categoryIds === undefined ? [] : [`ARRAY[d."categoryId"] && ${bind(viewable(categoryIds, req.visibility))}::int[]`];
  const scope = [
    ...visibilitySql(req.visibility, 'd', bind),
    ...filterSql(DOWNLOAD_FILTER, filter, 'd', bind),
    ...inCategories,
  ];
  const scopeSql = scope.length ? `AND ${scope.join(' AND ')}` : '';
  // The tsquery as an expression of the parameters, not read from the CTE `q` where the matches are found: the
  // planner then estimates how many rows match (from the index's statistics of lexemes), and for a common word walks
  // the order's index to the first LIMITS.searchMaxResults matches instead of reading every match and sorting them.
  const tq = tsquerySql(req.text, bind);
  const matchTq = lexemes ? tsquerySql(req.text, bind, lexemes) : tq;
  // Bound only in the statement with the fallback (a parameter no part of the statement reads has no type).
  const folded = fallback ? bind(req.text.text) : '';
  const first = fallback ? bind(req.first) : '';
  const similarity = fallback ? bind(LIMITS.searchTypoSimilarity) : '';
  const closeSimilarity = fallback ? bind(Math.max(LIMITS.searchTypoSimilarity, LIMITS.searchTypoCloseSimilarity)) : '';
  const excluded =
    fallback && req.text.excluded
      ? `AND NOT (d."searchVector" @@ websearch_to_tsquery('dcs_search', ${bind(req.text.excluded)}::text))`
      : '';
  // The typo fallback (when the exact matches are fewer than the page), without comparing the query with every
  // title: the query's words (the first LIMITS.searchTypoWords, stop words left out as the exact search leaves them
  // out), each as typed when it is a title word (the lexicon search_word, migration 20270111000000_search_lexicon),
  // or one of the title words one typo away from it (a letter dropped, doubled or changed, two neighbours swapped:
  // found through the index of their deletion neighbourhoods, at most LIMITS.searchTypoCorrections, the most similar
  // first, the word itself left out: a known word is an alternative already, and each term the index reads twice costs
  // it; a title word too, since a typo may make another title's word), or, when it is no title word and the last
  // word typed as a prefix, the start of a word; a word with none of these is left out. Titles holding every word
  // (two words or fewer) or all of them but one (three or more: one word may be off by more than a typo, as
  // whole-title similarity allows) are the candidates, found through the index of the titles' words; they are
  // offered by trigram similarity of the whole title to the query, in two tiers: titles at least
  // LIMITS.searchTypoCloseSimilarity similar, best first; only when there is none, titles from
  // LIMITS.searchTypoSimilarity on (a title that close to the query makes the far ones noise). When the fallback
  // runs, `matched` holds every exact match (fewer than the page) unless the bound is below the page size (tests):
  // the documents are read again only then.
  // The facets count the results' tags from the ids on their rows (`tagIds`, kept by the tags' trigger), carried
  // with the results: a lookup in download_tag per result cost more than the rest of the facets together.
  const cols = `d.id, d."categoryId", d."prefixId", d."downloadCount", d."ratingAvg", d."ratingCount", d."createdDate", d."lastUpdate"${req.facets ? ', d."tagIds"' : ''}`;
  const bound = bind(LIMITS.searchMaxResults);
  const prefixWord = !fallback || req.text.prefix === null ? 'NULL' : `dcs_fold(${bind(req.text.prefix)}::text)`;
  // The fallback's query of title words (dcs_search_typo_query, migration 20270128000000_search_typo_query): a
  // function, whose plans PL/pgSQL keeps, so that a search statement does not plan it again every time (a third of
  // the statement's planning, whether the fallback runs or not). Its column is named after the table it reads, which
  // is how the read cache learns the answer depends on it (src/db/cache-versions.ts reads table names).
  const typoQuery = () =>
    `(SELECT dcs_search_typo_query(${folded}::text, ${prefixWord}, ${bind(LIMITS.searchTypoWords)}::int, ${bind(LIMITS.searchTypoCorrections)}::int) AS search_word)`;
  const typoSql = () => `
    fuzzy_all AS MATERIALIZED (
      SELECT * FROM (
        SELECT ${cols}, 1 AS tier, similarity(dcs_fold(d.title), q.fq) AS sim
        FROM download d, q
        WHERE (SELECT count(*) FROM exact) < ${first}::int
          AND to_tsvector('simple', dcs_fold(d.title)) @@ ${typoQuery()}
          AND NOT EXISTS (SELECT 1 FROM matched m WHERE m.id = d.id)
          AND ((SELECT count(*) FROM matched) <= ${bound}::int OR NOT (d."searchVector" @@ q.tq))
          ${excluded} ${scopeSql}
        OFFSET 0) f
      WHERE f.sim >= ${similarity}::real),
    fuzzy AS (
      SELECT * FROM fuzzy_all f
      WHERE f.sim >= CASE WHEN EXISTS (SELECT 1 FROM fuzzy_all WHERE sim >= ${closeSimilarity}::real)
        THEN ${closeSimilarity}::real ELSE 0 END
      ORDER BY f.sim DESC, f.id DESC
      LIMIT greatest(${first}::int - (SELECT count(*) FROM exact), 0)),`;
  const candidates = candidateOrderSql(req.order, req.direction, 'd');
  // Relevance ranks the exact results by their documents as `matched` reads them (not read again by id: a thousand
  // index lookups for a common word); the rank, not the document, is carried (and sorted) with the rows: the
  // documents made the sort of a filtered faceted search's 1,700 matches three times as large.
  const relevance = req.order === 'relevance';
  // Relevance: the ranked matches, then the fuzzy ones; other orders: every result in that order, fuzzy ones last.
  const pageSource =
    req.order === 'relevance'
      ? fallback
        ? '(SELECT * FROM ranked UNION ALL SELECT *, NULL::real AS rank FROM fuzzy) r'
        : 'ranked r'
      : 'results r';
  const order =
    req.order === 'relevance'
      ? 'r.tier, r.rank DESC NULLS LAST, r.sim DESC, r."downloadCount" DESC, r.id DESC'
      : `r.tier, ${candidateOrderSql(req.order, req.direction, 'r')}`;
  const facetSize = req.facets ? bind(LIMITS.searchFacetSize) : '';
  const facets = req.facets
    ? `, (SELECT coalesce(json_agg(json_build_object('k', k, 'n', n, 'c', (SELECT ${jsonOf('Category', 'c')} FROM category c WHERE c.id = k)) ORDER BY n DESC, k), '[]'::json) FROM (SELECT "categoryId" AS k, count(*) AS n FROM results GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ${facetSize}::int) f) AS fc,
       (SELECT coalesce(json_agg(json_build_object('k', k, 'n', n) ORDER BY n DESC, k), '[]'::json) FROM (SELECT g.name AS k, t.n FROM (SELECT x.id, count(*) AS n FROM (SELECT unnest(r."tagIds") AS id FROM results r) x GROUP BY 1) t JOIN tag g ON g.id = t.id ORDER BY 2 DESC, 1 LIMIT ${facetSize}::int) f) AS ft,
       (SELECT coalesce(json_agg(json_build_object('k', k, 'n', n) ORDER BY n DESC, k), '[]'::json) FROM (SELECT "prefixId" AS k, count(*) AS n FROM results WHERE "prefixId" IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ${facetSize}::int) f) AS fp`
    : '';
  const extra: [string, string][] = [];
  if (req.highlights)
    extra.push(
      ['ht', headline('d.title', 'HighlightAll=true')],
      ['hl', headline('d."tagLine"', 'HighlightAll=true')],
      [
        'hd',
        headline(
          'dcs_bbcode_strip(d.description)',
          'MaxFragments=2, MaxWords=30, MinWords=12, FragmentDelimiter=" … "',
        ),
      ],
    );
  if (req.rel.category)
    extra.push(['c', `(SELECT ${jsonOf('Category', 'c')} FROM category c WHERE c.id = d."categoryId")`]);
  if (req.rel.currentVersion)
    extra.push(['v', `(SELECT ${jsonOf('Version', 'v')} FROM version v WHERE v.id = d."currentVersionId")`]);
  if (req.rel.tags)
    extra.push([
      'tg',
      `(SELECT coalesce(json_agg(g.name ORDER BY g.name), '[]'::json) FROM download_tag x JOIN tag g ON g.id = x."tagId" WHERE x."downloadId" = d.id)`,
    ]);
  const offset = bind(req.offset);
  const take = bind(req.take);
  const sql = `
    WITH q AS MATERIALIZED (SELECT ${tq} AS tq${fallback ? `, dcs_fold(${folded}::text) AS fq` : ''}),
    matched AS MATERIALIZED (
      SELECT ${cols}, 0 AS tier, 0::real AS sim${relevance ? `, ts_rank(d."searchVector", ${tq}) AS rank` : ''}
      FROM download d WHERE ${none ? 'FALSE AND ' : ''}d."searchVector" @@ ${matchTq} ${scopeSql}
      ORDER BY ${candidates} LIMIT ${bound}::int + 1),
    exact AS MATERIALIZED (SELECT ${cols}, d.tier, d.sim FROM matched d ORDER BY ${candidates} LIMIT ${bound}::int),
    ${fallback ? typoSql() : ''}
    results AS (SELECT * FROM exact${fallback ? ' UNION ALL SELECT * FROM fuzzy' : ''}),
    ${
      relevance
        ? `ranked AS (SELECT ${cols}, d.tier, d.sim, d.rank FROM matched d ORDER BY ${candidates} LIMIT ${bound}::int),`
        : ''
    }
    page AS (
      SELECT r.id, row_number() OVER () AS n FROM (
        SELECT r.id FROM ${pageSource} ORDER BY ${order} OFFSET ${offset}::bigint LIMIT ${take}::int) r)
    SELECT (SELECT count(*) FROM results) AS total, (SELECT count(*) FROM matched) <= ${bound}::int AS exact,
      (SELECT coalesce(json_agg(json_build_object('d', ${jsonOf('Download', 'd')}${extra
        .map(([k]) => `, '${k}', d.${k}`)
        .join('')}) ORDER BY p.n), '[]'::json)
       FROM page p JOIN LATERAL (SELECT d.*${extra.map(([k, e]) => `, ${e} AS ${k}`).join('')}
         FROM download d WHERE d.id = p.id) d ON TRUE) AS rows
      ${facets}
    FROM q`;
  return { sql: oneLine(sql), params };
}

/** The search's answer from the statement's row. */
function resultOf(req: SearchRequest, r: JsonRow): SearchResult {
  const hits: SearchHit[] = (r.rows as JsonRow[]).map((x) => {
    const download = revive<DownloadRow>('Download', x.d);
    if (req.rel.category) download.category = revive<Category>('Category', x.c);
    if (req.rel.currentVersion) download.currentVersion = revive<Version | null>('Version', x.v ?? null);
    if (req.rel.tags) download.tags = (x.tg as string[]).map((name) => ({ tag: { name } }));
    const highlight = req.highlights ? { title: x.ht, tagLine: x.hl, description: x.hd } : null;
    return { download, highlight };
  });
  const facetOf = <K extends string, V>(list: JsonRow[], key: K) =>
    list.map((f) => ({ [key]: f.k, count: Number(f.n) }) as { [P in K]: V } & { count: number });
  return {
    total: Number(r.total),
    totalIsExact: r.exact === true,
    hits,
    facets: req.facets
      ? {
          categories: (r.fc as JsonRow[]).map((f) => ({
            categoryId: f.k,
            count: Number(f.n),
            category: revive<Category>('Category', f.c),
          })),
          tags: facetOf<'tag', string>(r.ft, 'tag'),
          prefixes: facetOf<'prefixId', number>(r.fp, 'prefixId'),
        }
      : null,
  };
}

/**
 * Makes the stored search documents follow SEARCH_LANGUAGE: when it differs from the language they were made with,
 * the configuration `dcs_search` gets that language's stemmer and every document is rewritten, with the lexicon of
 * their lexemes (search_lexeme), in one transaction (under the migrations' advisory lock, so concurrent starts do it
 * once). Answers whether it rewrote them.
 */
export async function ensureSearchLanguage(db: Pick<Database, 'session'>, language: SearchLanguage): Promise<boolean> {
  return db.session(async (s) => {
    const [row] = await s.query<{ language: string }>('SELECT language FROM search_setting WHERE id = 1');
    if (row?.language === language) return false;
    await s.exec('BEGIN');
    try {
      await s.query('SELECT pg_advisory_xact_lock(727274)');
      const [again] = await s.query<{ language: string }>(
        'SELECT language FROM search_setting WHERE id = 1 FOR UPDATE',
      );
      if (again?.language === language) {
        await s.exec('COMMIT');
        return false;
      }
      // `simple` has no stemmer: its dictionary is `simple`; every other language's is `<language>_stem`.
      const dictionary = language === 'simple' ? 'simple' : `${language}_stem`;
      if (!/^[a-z_]+$/.test(dictionary)) throw new Error(`Not a search language: ${language}`);
      await s.exec(
        `ALTER TEXT SEARCH CONFIGURATION dcs_search ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH unaccent, ${dictionary}`,
      );
      await s.exec(
        `UPDATE download d SET "searchVector" = dcs_download_search_vector(d.title, d."tagLine", d.description, dcs_download_tag_text(d.id))`,
      );
      // The lexicon of the documents' lexemes (prefixes) holds the new language's lexemes, and no longer the old's.
      await s.exec('DELETE FROM search_lexeme');
      await s.exec(
        `INSERT INTO search_lexeme (lexeme) SELECT DISTINCT l.lexeme FROM download d, unnest(tsvector_to_array(d."searchVector")) l(lexeme)`,
      );
      await s.query('UPDATE search_setting SET language = $1 WHERE id = 1', [language]);
      await s.exec('COMMIT');
      return true;
    } catch (err) {
      await s.exec('ROLLBACK').catch(() => {});
      throw err;
    }
  });
}
