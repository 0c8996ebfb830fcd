// Search (contract §10) on both faces and both databases: the GraphQL `search` connection and the REST list's `q`;
// web-search syntax, stemming, accents, the last word as a prefix, the typo fallback, highlights (matches marked,
// the rest escaped), facets, and permissions inside the statement (a hidden download is absent from rows, totals,
// facets and highlights); bad input answers 400 with a named field and changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, LIMITS, loadConfig } from '../src/config.js';
import { MARK_END, MARK_START, ensureSearchLanguage, searchTextOf } from '../src/modules/downloads/search.js';
import { highlightHtml } from '../src/modules/search/index.js';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

const SEARCH = `query($q: String!, $f: DownloadFilter, $o: SearchOrder, $first: Int, $after: String) {
  search(query: $q, filter: $f, order: $o, first: $first, after: $after) {
    totalCount
    totalCountIsExact
    edges { cursor node { downloadId title } highlight { title tagLine description } }
    pageInfo { hasNextPage hasPreviousPage endCursor }
    facets { categories { category { categoryId title } count } tags { tag count } prefixes { prefixId count } }
  }
}`;

/** Runs `fn` with LIMITS.searchMaxResults set to `n` (read by every search statement), then puts it back. */
async function withMaxResults<T>(n: number, fn: () => Promise<T>): Promise<T> {
  const limits = LIMITS as { searchMaxResults: number };
  const before = limits.searchMaxResults;
  limits.searchMaxResults = n;
  try {
    return await fn();
  } finally {
    limits.searchMaxResults = before;
  }
}

/** Runs `fn` with LIMITS.searchPrefixLexemes set to `n` (0: every prefix is matched as such), then puts it back. */
async function withPrefixLexemes<T>(n: number, fn: () => Promise<T>): Promise<T> {
  const limits = LIMITS as { searchPrefixLexemes: number };
  const before = limits.searchPrefixLexemes;
  limits.searchPrefixLexemes = n;
  try {
    return await fn();
  } finally {
    limits.searchPrefixLexemes = before;
  }
}

forEachDatabase((kind) => {
  let t: TestApp;
  let alice: { key: string; userId: number };
  const cat: Record<string, number> = {};
  const ids: Record<string, number> = {};
  let prefixId: number;

  beforeAll(async () => {
    t = await startTestApp(kind, { readCacheMb: 0 });
    alice = await t.user('alice');
    const category = async (title: string, parent?: number) => {
      const r = await t.rest('POST', '/api/mc-dm-categories/', {
        form: { title, ...(parent ? { parent_category_id: parent } : {}) },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      cat[title] = r.body.category.category_id;
    };
    await category('Maps');
    await category('Caves', cat.Maps);
    await category('Secret');
    await t.gqlOk(
      `mutation($c: Int!) { setCategoryPermission(input: { categoryId: $c, group: "registered", permission: "view", value: DENY }) { ok } }`,
      { c: cat.Secret },
    );
    const p = await t.gqlOk(`mutation { createPrefix(input: { title: "Beta" }) { prefix { prefixId } } }`);
    prefixId = p.createPrefix.prefix.prefixId;
    await t.gqlOk(`mutation($p: Int!, $c: Int!) { assignPrefix(input: { prefixId: $p, categoryId: $c }) { ok } }`, {
      p: prefixId,
      c: cat.Maps,
    });
    const make = async (title: string, category: number, form: Record<string, unknown> = {}) => {
      const r = await t.rest('POST', '/api/mc-dm-downloads/', {
        key: alice.key,
        form: { category_id: category, title, version_string: '1', ...form },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      ids[title] = r.body.download.download_id;
    };
    await make('Café Racer', cat.Maps, {
      tag_line: 'A fast map <b>& more</b>',
      description: '[b]Running[/b] quickly through [url=http://example.com/x]the old city[/url].',
      tags: ['racing', 'city'],
    });
    await make('Minecraft Castle', cat.Maps, {
      tag_line: 'Stone castle',
      description: 'A big castle with towers',
      tags: ['castle'],
      prefix_id: prefixId,
    });
    await make('Dragon Lair', cat.Caves, { tag_line: 'cave', description: 'dragons live here', tags: ['fantasy'] });
    // Hidden from alice: a category she may not view (created by the super-user key, as alice cannot see it), and a
    // soft-deleted download (registered users lack viewDeleted).
    const secret = await t.rest('POST', '/api/mc-dm-downloads/', {
      form: { category_id: cat.Secret, title: 'Secret castle plans', tags: ['castle', 'secret'] },
      headers: { 'Forum-Api-User': String(alice.userId) },
    });
    expect(secret.status, JSON.stringify(secret.body)).toBe(200);
    ids['Secret castle plans'] = secret.body.download.download_id;
    await make('Ruined castle', cat.Maps, { tags: ['castle', 'ruins'] });
    expect((await t.rest('DELETE', `/api/mc-dm-downloads/${ids['Ruined castle']}/`)).status).toBe(200);
  });
  afterAll(() => t?.close());

  const search = async (q: string, vars: Record<string, unknown> = {}, key?: string) => {
    const r = await t.gql(SEARCH, { q, ...vars }, key ?? alice.key);
    expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
    return r.data.search;
  };
  const titles = (s: { edges: { node: { title: string } }[] }) => s.edges.map((e) => e.node.title);
  const rest = async (query: Record<string, string | number>, key?: string) =>
    t.rest('GET', '/api/mc-dm-downloads/', { query, key: key ?? alice.key });

  describe('GraphQL search', () => {
    it('a hidden download is absent from rows, totals, facets and highlights; a super-user key finds them all', async () => {
      const s = await search('castle');
      expect(titles(s)).toEqual(['Minecraft Castle']);
      expect(s.totalCount).toBe(1);
      expect(s.facets.tags).toEqual([{ tag: 'castle', count: 1 }]);
      expect(s.facets.categories).toEqual([{ category: { categoryId: cat.Maps, title: 'Maps' }, count: 1 }]);
      expect(s.facets.prefixes).toEqual([{ prefixId, count: 1 }]);
      expect(JSON.stringify(s)).not.toMatch(/Secret|secret|Ruined|ruins/);
      // Even a query that names only the hidden text finds nothing (no typo fallback onto it either).
      const hidden = await search('secret plans');
      expect(hidden.totalCount).toBe(0);
      expect(hidden.facets).toEqual({ categories: [], tags: [], prefixes: [] });
      const all = await search('castle', {}, undefined);
      expect(all.totalCount).toBe(1);
      const sup = await t.gqlOk(SEARCH, { q: 'castle' });
      expect(titles(sup.search).sort()).toEqual(['Minecraft Castle', 'Ruined castle', 'Secret castle plans']);
      expect(sup.search.totalCount).toBe(3);
      expect(sup.search.facets.tags[0]).toEqual({ tag: 'castle', count: 3 });
    });

    it('accents and case do not matter; word forms are stemmed; the last word matches as a prefix', async () => {
      for (const q of ['cafe', 'CAFÉ', 'Cafe racer']) expect(titles(await search(q))).toEqual(['Café Racer']);
      expect(titles(await search('run'))).toEqual(['Café Racer']); // "Running" in the description
      expect(titles(await search('towers'))).toEqual(['Minecraft Castle']);
      expect(titles(await search('minec'))).toEqual(['Minecraft Castle']);
      expect(titles(await search('stone cas'))).toEqual(['Minecraft Castle']);
      // A finished word (trailing space) is not a prefix.
      expect((await search('minec ')).edges.map((e: any) => e.node.title)).not.toContain('Minecraft Castle');
    });

    it('the last word finds through the lexemes it starts what it finds as a prefix, new words the moment they are written', async () => {
      const made = await t.rest('POST', '/api/mc-dm-downloads/', {
        key: alice.key,
        form: {
          category_id: cat.Maps,
          title: 'Torrent Town',
          // A URL makes lexemes with a quote in them (xylo.org/it's), which the lexemes' tsquery has to escape.
          description: "A tortoise, see http://xylo.org/it's",
          version_string: '1',
        },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      const id = made.body.download.download_id;
      try {
        // One lexeme (tortois), two (torrent, tortois; xylo.org and xylo.org/it's), several (c…: cafe, castl, cave,
        // citi), stop words (t, to), after other words, an alternative, none at all: the same answers whether looked
        // for as the lexemes they start (the default), as a prefix (none allowed), or as a prefix as they start more
        // lexemes than allowed (1).
        const queries = [
          'tortoi',
          'tor',
          'xyl',
          'c',
          't',
          'to',
          'stone t',
          'dragon or torr',
          'towers tor',
          'xyzzy',
          'Torent Tow',
        ];
        const answers = async () => {
          const out: unknown[] = [];
          // Cursors are sealed afresh (a random IV) on every request: left out of the comparison.
          const uncursored = (x: unknown) =>
            JSON.parse(JSON.stringify(x, (k, v) => (k === 'cursor' || k === 'endCursor' ? undefined : v)));
          for (const q of queries) {
            out.push(uncursored(await search(q)));
            const r = await rest({ q, facets: 1 });
            expect(r.status, JSON.stringify(r.body)).toBe(200);
            out.push(r.body);
          }
          return out;
        };
        const lexemes = await answers();
        expect(await withPrefixLexemes(0, answers)).toEqual(lexemes);
        expect(await withPrefixLexemes(1, answers)).toEqual(lexemes);
        expect(titles(await search('tor'))).toEqual(['Torrent Town']);
        expect(titles(await search('xyl'))).toEqual(['Torrent Town']);
        expect(titles(await search('c')).sort()).toEqual(['Café Racer', 'Dragon Lair', 'Minecraft Castle']);
        expect(titles(await search('dragon or torr')).sort()).toEqual(['Dragon Lair', 'Torrent Town']);
        // New lexemes beside older ones with the same start (tower, castl), so that a lexeme missing from the lexicon
        // would leave a download out: of a create, a new tag, a new tag line, each found as soon as it returns.
        expect(titles(await search('tow')).sort()).toEqual(['Minecraft Castle', 'Torrent Town']);
        const edit = (input: string) =>
          t.gqlOk(
            `mutation($d: Int!) { updateDownload(input: { downloadId: $d, ${input} }) { download { title } } }`,
            { d: id },
            alice.key,
          );
        await edit('tags: ["casserole"]');
        expect(titles(await search('cas')).sort()).toEqual(['Minecraft Castle', 'Torrent Town']);
        expect((await search('cast')).totalCount).toBe(1);
        await edit('tagLine: "Castanets"');
        expect(titles(await search('cast')).sort()).toEqual(['Minecraft Castle', 'Torrent Town']);
        expect((await rest({ q: 'cast' })).body.downloads.map((d: any) => d.title).sort()).toEqual([
          'Minecraft Castle',
          'Torrent Town',
        ]);
      } finally {
        expect((await t.rest('DELETE', `/api/mc-dm-downloads/${id}/`, { query: { hard: 1 } })).status).toBe(200);
      }
    });

    it('web-search syntax: "phrase", -word, or; unbalanced syntax is still answered', async () => {
      expect(titles(await search('"stone castle"'))).toEqual(['Minecraft Castle']);
      // Words out of the phrase's order match no phrase.
      expect((await search('"castle big"', { f: { tags: ['nothing'] } })).totalCount).toBe(0);
      expect((await search('"towers big"')).totalCount).toBe(0);
      expect((await search('"big towers"')).totalCount).toBe(0);
      expect((await search('big towers')).totalCount).toBe(1);
      expect((await search('"big castle"')).edges[0].highlight.description).toContain(
        '<mark>big</mark> <mark>castle</mark> with towers',
      );
      expect(titles(await search('castle -minecraft'))).toEqual([]);
      expect(titles(await search('dragon or cafe')).sort()).toEqual(['Café Racer', 'Dragon Lair']);
      for (const q of ['"castle', 'castle"', '((castle', 'castle or', 'or castle', 'castle - -', '!castle & | :*'])
        expect((await search(q)).totalCount, q).toBeGreaterThanOrEqual(0);
    });

    it('typo fallback on titles when the exact search finds fewer than first', async () => {
      expect(titles(await search('Dragn Lair'))).toEqual(['Dragon Lair']);
      expect(titles(await search('Minecraft Castel'))).toEqual(['Minecraft Castle']);
      // Exclusions hold in the fallback too.
      expect(titles(await search('Minecraft Castel -stone'))).toEqual([]);
      // A close title (similarity ≥ LIMITS.searchTypoCloseSimilarity: 0.625 here) leaves the further ones (0.32) out.
      expect(titles(await search('Minecraft Castl Racer'))).toEqual(['Minecraft Castle']);
      // Only a further title (0.44): found all the same.
      expect(titles(await search('cafe racr castel'))).toEqual(['Café Racer']);
    });

    it('the fallback adds to the exact matches only when they are fewer than first, on both faces', async () => {
      // "Lairr" is one typo from "lair": not an exact match of "lair dragon" (the prefix is "dragon"), a fuzzy one.
      const made = await t.rest('POST', '/api/mc-dm-downloads/', {
        key: alice.key,
        form: { category_id: cat.Caves, title: 'Dragon Lairr', version_string: '1' },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      try {
        const exactOnly = await search('lair dragon', { first: 1 });
        expect(titles(exactOnly)).toEqual(['Dragon Lair']);
        expect(exactOnly.totalCount).toBe(1);
        const both = await search('lair dragon', { first: 2 });
        expect(titles(both)).toEqual(['Dragon Lair', 'Dragon Lairr']);
        expect(both.totalCount).toBe(2);
        const viaRest = async (perPage: number) =>
          (await rest({ q: 'lair dragon', per_page: perPage })).body.downloads.map((d: any) => d.title);
        expect(await viaRest(1)).toEqual(['Dragon Lair']);
        expect(await viaRest(2)).toEqual(['Dragon Lair', 'Dragon Lairr']);
      } finally {
        // Soft-deleted: hidden from alice in the tests that follow.
        expect((await t.rest('DELETE', `/api/mc-dm-downloads/${made.body.download.download_id}/`)).status).toBe(200);
      }
    });

    it('highlights mark the matches and escape everything else', async () => {
      const s = await search('fast');
      expect(s.edges[0].highlight).toEqual({
        title: 'Café Racer',
        tagLine: 'A <mark>fast</mark> map &lt;b&gt;&amp; more&lt;/b&gt;',
        description: 'Running quickly through the old city.',
      });
      const c = await search('cafe');
      expect(c.edges[0].highlight.title).toBe('<mark>Café</mark> Racer');
      const r = await search('running city');
      expect(r.edges[0].highlight.description).toContain('<mark>Running</mark>');
      expect(r.edges[0].highlight.description).toContain('<mark>city</mark>');
      expect(r.edges[0].highlight.description).not.toMatch(/\[|example\.com/); // BB code is gone
    });

    it('BB code is stripped as the bounded patterns strip it (a tag of at most 200 characters), short runs or long', async () => {
      // dcs_bbcode_strip (migration 20270127000000_search_bbcode_strip) against the definition it replaced, over texts
      // whose runs between brackets are short, long, or long only once closing tags are removed.
      const [row] = await t.app.db.query<{ n: number; differ: number; long: number }>(
        `WITH texts(b) AS (
           SELECT repeat('[b]', i) || repeat('w', j) || repeat('[/b]', k) || repeat('v', j) || '[/i]' || repeat('u', 200 - j) || ']'
           FROM generate_series(0, 3) i, generate_series(0, 200, 9) j, generate_series(0, 3) k
           UNION ALL SELECT '[b' || repeat('q', i) || '[/i]' || repeat('r', j) || ']' || repeat(' ', 2) || '[/x' || repeat('s', i) || ']'
           FROM generate_series(90, 210, 7) i, generate_series(0, 210, 13) j
           UNION ALL SELECT unnest(ARRAY['[*]one[br]two[/list]', '', 'a]b[c]d[/e]f[', '[url=' || repeat('h', 250) || ']a[/url]',
             '[b]Running[/b]   quickly [url=http://example.com/x]the old city[/url].', repeat('[b]bold[/b] text ', 200)]))
         SELECT count(*)::int AS n, count(*) FILTER (WHERE b ~ '[^][]{201}')::int AS long,
           count(*) FILTER (WHERE dcs_bbcode_strip(b) IS DISTINCT FROM btrim(regexp_replace(regexp_replace(regexp_replace(b,
             '\\[/[A-Za-z*][^\\[\\]]{0,200}\\]', '', 'g'), '\\[[A-Za-z*][^\\[\\]]{0,200}\\]', ' ', 'g'), '[ \t]+', ' ', 'g')))::int AS differ
         FROM texts`,
      );
      expect(row).toMatchObject({ differ: 0 });
      expect(row!.long).toBeGreaterThan(50);
      expect(row!.n).toBeGreaterThan(600);
    });

    it('filter: a category with its subcategories, tags, prefix, user, state, updatedSince', async () => {
      const inMaps = await search('dragon or castle or cafe', { f: { categoryId: cat.Maps } });
      expect(titles(inMaps).sort()).toEqual(['Café Racer', 'Dragon Lair', 'Minecraft Castle']);
      expect(titles(await search('dragon', { f: { categoryId: cat.Caves } }))).toEqual(['Dragon Lair']);
      expect(titles(await search('castle or cafe', { f: { tags: ['CASTLE'] } }))).toEqual(['Minecraft Castle']);
      expect(titles(await search('castle or cafe', { f: { prefixId } }))).toEqual(['Minecraft Castle']);
      expect(titles(await search('castle or cafe', { f: { prefixId: 0 } }))).toEqual(['Café Racer']);
      expect((await search('castle', { f: { userId: alice.userId + 1000 } })).totalCount).toBe(0);
      expect((await search('castle', { f: { state: 'DELETED' } })).totalCount).toBe(0); // alice may not see it
      const sup = await t.gqlOk(SEARCH, { q: 'castle', f: { state: 'DELETED' } });
      expect(titles(sup.search)).toEqual(['Ruined castle']);
      expect((await search('castle', { f: { updatedSince: '2999-01-01T00:00:00Z' } })).totalCount).toBe(0);
      expect((await search('castle', { f: { updatedSince: '2000-01-01T00:00:00Z' } })).totalCount).toBe(1);
    });

    it('orders, and cursors page through the results', async () => {
      const q = 'castle or cafe or dragon';
      const p1 = await search(q, { first: 2, o: 'NEWEST' });
      expect(titles(p1)).toEqual(['Dragon Lair', 'Minecraft Castle']);
      expect(p1.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
      const p2 = await search(q, { first: 2, o: 'NEWEST', after: p1.pageInfo.endCursor });
      expect(titles(p2)).toEqual(['Café Racer']);
      expect(p2.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
      expect(p2.totalCount).toBe(3);
      for (const o of ['RELEVANCE', 'DOWNLOADS', 'RATING', 'UPDATED'])
        expect((await search(q, { o })).totalCount).toBe(3);
      const r1 = await search(q, { first: 2 });
      const r2 = await search(q, { first: 2, after: r1.pageInfo.endCursor });
      expect([...titles(r1), ...titles(r2)].sort()).toEqual(['Café Racer', 'Dragon Lair', 'Minecraft Castle']);
      // The cursors are sealed when selected, once per row: a page's end is its last edge's cursor; a page read
      // without its edges' cursors still gives its start and end, and they page on.
      expect(p1.pageInfo.endCursor).toBe(p1.edges.at(-1).cursor);
      const ENDS = `query($q: String!, $after: String) { search(query: $q, order: NEWEST, first: 1, after: $after) {
        nodes { title } pageInfo { startCursor endCursor } } }`;
      const e1 = (await t.gqlOk(ENDS, { q }, alice.key)).search;
      expect(e1.pageInfo.startCursor).toBe(e1.pageInfo.endCursor);
      const e2 = (await t.gqlOk(ENDS, { q, after: e1.pageInfo.endCursor }, alice.key)).search;
      expect([e1.nodes[0].title, e2.nodes[0].title]).toEqual(['Dragon Lair', 'Minecraft Castle']);
      // A cursor of another search is refused.
      const other = await t.gql(SEARCH, { q: 'castle', after: p1.pageInfo.endCursor }, alice.key);
      expect(other.codes).toEqual(['invalid_input']);
    });

    it(`answers at most LIMITS.searchMaxResults results: past it, totalCount is the bound and not exact`, async () => {
      const q = 'castle or cafe or dragon';
      // Hidden downloads take no place within the bound: alice's 3 matches fit a bound of 3, the super key's 5 do not.
      const exact = await withMaxResults(3, () => search(q));
      expect(exact).toMatchObject({ totalCount: 3, totalCountIsExact: true });
      const sup = await withMaxResults(3, () => t.gqlOk(SEARCH, { q }));
      expect(sup.search).toMatchObject({ totalCount: 3, totalCountIsExact: false });
      expect(sup.search.edges).toHaveLength(3);
      // A bound of 2: the first 2 in the search's order (newest), paged; the facets count those 2; no page past them.
      const [p1, p2] = await withMaxResults(2, async () => {
        const a = await search(q, { first: 1, o: 'NEWEST' });
        return [a, await search(q, { first: 1, o: 'NEWEST', after: a.pageInfo.endCursor })];
      });
      expect(p1).toMatchObject({ totalCount: 2, totalCountIsExact: false, pageInfo: { hasNextPage: true } });
      expect(titles(p1)).toEqual(['Dragon Lair']);
      expect(titles(p2)).toEqual(['Minecraft Castle']);
      expect(p2).toMatchObject({ totalCount: 2, totalCountIsExact: false, pageInfo: { hasNextPage: false } });
      expect(p1.facets.categories.map((c: any) => [c.category.categoryId, c.count]).sort()).toEqual(
        [
          [cat.Caves, 1],
          [cat.Maps, 1],
        ].sort(),
      );
      expect(p1.facets.tags.reduce((n: number, x: any) => n + x.count, 0)).toBe(2); // castle + fantasy
      // By relevance the results are the most downloaded matches, ranked; every order answers the same bound.
      for (const o of ['RELEVANCE', 'DOWNLOADS', 'RATING', 'UPDATED']) {
        const r = await withMaxResults(2, () => search(q, { o }));
        expect(r, o).toMatchObject({ totalCount: 2, totalCountIsExact: false });
        expect(r.edges, o).toHaveLength(2);
      }
      // Fewer matches than the bound: exact, whatever the bound.
      expect(await withMaxResults(2, () => search('castle'))).toMatchObject({ totalCount: 1, totalCountIsExact: true });
    });

    it('a download is findable the moment its create returns, and follows its edits and tags', async () => {
      const created = await t.gqlOk(
        `mutation($c: Int!) { createDownload(input: { categoryId: $c, title: "Zeppelin hangar", tags: ["airship"] }) { download { downloadId } } }`,
        { c: cat.Maps },
        alice.key,
      );
      const id = created.createDownload.download.downloadId;
      expect(titles(await search('zeppelin'))).toEqual(['Zeppelin hangar']);
      expect(titles(await search('airship'))).toEqual(['Zeppelin hangar']);
      // The tag facet counts the tags a download holds now (ids kept on its row by the tags' trigger), on both faces.
      const tagFacets = async (q: string) => [
        (await search(q)).facets.tags,
        (await rest({ q, facets: 1 })).body.facets.tags,
      ];
      expect(await tagFacets('zeppelin')).toEqual([[{ tag: 'airship', count: 1 }], [{ tag: 'airship', count: 1 }]]);
      await t.gqlOk(
        `mutation($d: Int!) { updateDownload(input: { downloadId: $d, title: "Blimp hangar", tags: ["balloon"] }) { download { title } } }`,
        { d: id },
        alice.key,
      );
      expect((await search('zeppelin')).totalCount).toBe(0);
      expect((await search('airship')).totalCount).toBe(0);
      expect(titles(await search('blimp balloon'))).toEqual(['Blimp hangar']);
      expect(await tagFacets('blimp')).toEqual([[{ tag: 'balloon', count: 1 }], [{ tag: 'balloon', count: 1 }]]);
      await t.gqlOk(
        `mutation($d: Int!) { updateDownload(input: { downloadId: $d, tags: ["balloon", "airship", "castle"] }) { download { title } } }`,
        { d: id },
        alice.key,
      );
      expect((await search('blimp')).facets.tags).toEqual([
        { tag: 'airship', count: 1 },
        { tag: 'balloon', count: 1 },
        { tag: 'castle', count: 1 },
      ]);
      await t.gqlOk(
        `mutation($d: Int!) { updateDownload(input: { downloadId: $d, tags: [] }) { download { title } } }`,
        { d: id },
        alice.key,
      );
      expect(await tagFacets('blimp')).toEqual([[], []]);
      expect((await t.rest('DELETE', `/api/mc-dm-downloads/${id}/`, { query: { hard: 1 } })).status).toBe(200);
      expect((await search('blimp')).totalCount).toBe(0);
    });

    it('the typo fallback knows the words of a download the moment its create returns, and of its new title', async () => {
      const created = await t.gqlOk(
        `mutation($c: Int!) { createDownload(input: { categoryId: $c, title: "Quetzalcoatl Aviary" }) { download { downloadId } } }`,
        { c: cat.Maps },
        alice.key,
      );
      const id = created.createDownload.download.downloadId;
      // Two neighbouring letters swapped; one letter doubled (a single word); both words misspelled.
      expect(titles(await search('Quetzalcaotl Aviary'))).toEqual(['Quetzalcoatl Aviary']);
      expect(titles(await search('Quetzzalcoatl'))).toEqual(['Quetzalcoatl Aviary']);
      expect(titles(await search('Quetzalcotl Avairy'))).toEqual(['Quetzalcoatl Aviary']);
      await t.gqlOk(
        `mutation($d: Int!) { updateDownload(input: { downloadId: $d, title: "Xylophone Aviary" }) { download { title } } }`,
        { d: id },
        alice.key,
      );
      expect(titles(await search('Xylophnoe Aviray'))).toEqual(['Xylophone Aviary']);
      // A typo that makes another title's word ("cattle" for "castle") is corrected all the same.
      const cattle = await t.gqlOk(
        `mutation($c: Int!) { createDownload(input: { categoryId: $c, title: "Cattle Ranch" }) { download { downloadId } } }`,
        { c: cat.Maps },
        alice.key,
      );
      expect(titles(await search('Minecraft Cattle'))).toEqual(['Minecraft Castle']);
      const cattleId = cattle.createDownload.download.downloadId;
      expect((await t.rest('DELETE', `/api/mc-dm-downloads/${cattleId}/`, { query: { hard: 1 } })).status).toBe(200);
      // The old title's words stay in the lexicon, but nothing holds them now.
      expect((await search('Quetzalcaotl')).totalCount).toBe(0);
      // A word only a hidden download's title holds corrects towards it, and still finds nothing for alice.
      const hidden = await t.rest('POST', '/api/mc-dm-downloads/', {
        form: { category_id: cat.Secret, title: 'Wunderkammer vault' },
        headers: { 'Forum-Api-User': String(alice.userId) },
      });
      expect(hidden.status, JSON.stringify(hidden.body)).toBe(200);
      expect((await search('Wunderkamer vault')).totalCount).toBe(0);
      expect(titles((await t.gqlOk(SEARCH, { q: 'Wunderkamer vault' })).search)).toEqual(['Wunderkammer vault']);
      // Whatever the words, the fallback's tsquery is made of title words only: hostile text is answered.
      for (const q of [
        "dragn's lair",
        'c@stle dragn',
        'ü-bër dragn',
        'dragn:* & !lair',
        'dragn\\ lair\\',
        '日本語 dragn',
        '🙂 dragn',
        "dragn'); DROP TABLE search_word; --",
        '12345 dragn 3.14 v1.2.3',
        'https://example.com/dragn user@example.com',
        'dragn <lair> &amp;',
      ])
        expect((await search(q)).totalCount, q).toBeGreaterThanOrEqual(0);
      expect(titles(await search("Dragn's Lair"))).toEqual(['Dragon Lair']);
      // Many misspelled and hyphenated words: answered (the fallback reads the first LIMITS.searchTypoWords).
      const many = Array.from({ length: 50 }, (_, i) => `qu${String.fromCharCode(97 + (i % 26))}${i % 10}`).join('-');
      expect((await search(`Xylophnoe ${many.slice(0, 180)}`)).totalCount).toBeGreaterThanOrEqual(0);
      expect(
        (
          await search(
            Array.from({ length: 20 }, () => 'Xylophnoe-Aviray')
              .join(' ')
              .slice(0, 200),
          )
        ).edges,
      ).toEqual(expect.any(Array));
      expect((await t.rest('DELETE', `/api/mc-dm-downloads/${id}/`, { query: { hard: 1 } })).status).toBe(200);
      expect(
        (await t.rest('DELETE', `/api/mc-dm-downloads/${hidden.body.download.download_id}/`, { query: { hard: 1 } }))
          .status,
      ).toBe(200);
    });

    it('bad input answers 400 with the field named, never 500', async () => {
      const codes = async (q: string, vars: Record<string, unknown> = {}) => {
        const r = await t.gql(SEARCH, { q, ...vars }, alice.key);
        return { codes: r.codes, params: r.errors?.[0]?.extensions?.params };
      };
      expect(await codes('')).toMatchObject({ codes: ['required_input_missing'] });
      expect(await codes('   ')).toMatchObject({ codes: ['required_input_missing'] });
      expect(await codes('x'.repeat(201))).toMatchObject({ codes: ['invalid_input'] });
      expect(await codes(Array.from({ length: 21 }, (_, i) => `w${i}`).join(' '))).toMatchObject({
        codes: ['invalid_input'],
      });
      expect(await codes('-castle')).toMatchObject({ codes: ['invalid_input'] });
      expect(await codes('castle', { first: 0 })).toMatchObject({ codes: ['invalid_input'] });
      expect(await codes('castle', { after: 'nonsense' })).toMatchObject({ codes: ['invalid_input'] });
      expect(await codes('castle', { f: { tags: ['x'.repeat(51)] } })).toMatchObject({ codes: ['invalid_input'] });
      // 200 characters is still a query.
      expect((await codes(`castle ${'x'.repeat(193)}`)).codes).toEqual([]);
    });
  });

  describe('REST list with q', () => {
    it('q finds what the visitor may view: rows, total and facets leave the hidden downloads out', async () => {
      const r = await rest({ q: 'castle', facets: 1 });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.downloads.map((d: any) => d.title)).toEqual(['Minecraft Castle']);
      expect(r.body.pagination).toEqual({ page: 1, per_page: 20, total: 1, last_page: 1 });
      expect(r.body.facets).toEqual({
        categories: [{ category: { category_id: cat.Maps, title: 'Maps' }, count: 1 }],
        tags: [{ tag: 'castle', count: 1 }],
        prefixes: [{ prefix_id: prefixId, count: 1 }],
      });
      const plain = await rest({ q: 'castle' });
      expect(plain.body).not.toHaveProperty('facets');
      const sup = await t.rest('GET', '/api/mc-dm-downloads/', { query: { q: 'castle' } });
      expect(sup.body.pagination.total).toBe(3);
    });

    it(`total is at most LIMITS.searchMaxResults, with total_is_exact saying whether more matched`, async () => {
      const q = 'castle or cafe or dragon';
      const full = await rest({ q, facets: 1 });
      expect(full.body.pagination.total).toBe(3);
      expect(full.body.total_is_exact).toBe(true);
      const [p1, p2, p3] = await withMaxResults(2, async () => [
        await rest({ q, order: 'created_date', per_page: 1, facets: 1 }),
        await rest({ q, order: 'created_date', per_page: 1, page: 2 }),
        await rest({ q, order: 'created_date', per_page: 1, page: 3 }),
      ]);
      expect(p1.status, JSON.stringify(p1.body)).toBe(200);
      expect(p1.body.pagination).toEqual({ page: 1, per_page: 1, total: 2, last_page: 2 });
      expect(p1.body.total_is_exact).toBe(false);
      expect(p1.body.downloads.map((d: any) => d.title)).toEqual(['Dragon Lair']);
      expect(p2.body.downloads.map((d: any) => d.title)).toEqual(['Minecraft Castle']);
      expect(p3.body.downloads).toEqual([]); // past the results
      expect(p1.body.facets.categories.reduce((n: number, c: any) => n + c.count, 0)).toBe(2);
      // Hidden downloads do not count toward the bound; the super-user key's 5 matches pass it.
      const sup = await withMaxResults(3, () => t.rest('GET', '/api/mc-dm-downloads/', { query: { q } }));
      expect(sup.body.pagination.total).toBe(3);
      expect(sup.body.total_is_exact).toBe(false);
      expect((await withMaxResults(3, () => rest({ q }))).body.total_is_exact).toBe(true);
      // A list without q has exact totals and no total_is_exact.
      expect(await rest({})).toSatisfy((r: any) => r.status === 200 && !('total_is_exact' in r.body));
    });

    it('order, paging, tag, user_id and updated_since with q', async () => {
      const q = 'castle or cafe or dragon';
      const p = await rest({ q, order: 'created_date', per_page: 2, page: 2 });
      expect(p.body.downloads.map((d: any) => d.title)).toEqual(['Café Racer']);
      expect(p.body.pagination).toEqual({ page: 2, per_page: 2, total: 3, last_page: 2 });
      expect((await rest({ q, order: 'relevance' })).status).toBe(200);
      expect((await rest({ q, order: 'rating', direction: 'asc' })).status).toBe(200);
      expect((await rest({ q, tag: 'fantasy' })).body.downloads.map((d: any) => d.title)).toEqual(['Dragon Lair']);
      expect((await rest({ q, user_id: alice.userId })).body.pagination.total).toBe(3);
      expect((await rest({ q, updated_since: '2999-01-01T00:00:00Z' })).body.pagination.total).toBe(0);
      expect((await rest({ updated_since: '2999-01-01T00:00:00Z' })).body.pagination.total).toBe(0);
      expect((await rest({ q: 'cafe', with: 'full' })).body.downloads.map((d: any) => [d.title, d.tags])).toEqual([
        ['Café Racer', ['city', 'racing']],
      ]);
    });

    it('q with a typo finds a download created the request before', async () => {
      const made = await t.rest('POST', '/api/mc-dm-downloads/', {
        key: alice.key,
        form: { category_id: cat.Maps, title: 'Archipelago Observatory', version_string: '1' },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      const id = made.body.download.download_id;
      for (const q of ['Archipleago Observatory', 'Archipelago Obsevatory', 'Arrchipelago']) {
        const r = await rest({ q });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(
          r.body.downloads.map((d: any) => d.download_id),
          q,
        ).toEqual([id]);
        expect(r.body.pagination.total, q).toBe(1);
      }
      expect((await t.rest('DELETE', `/api/mc-dm-downloads/${id}/`, { query: { hard: 1 } })).status).toBe(200);
      expect((await rest({ q: 'Archipleago Observatory' })).body.pagination.total).toBe(0);
    });

    it('the OpenAPI document describes q, facets and updated_since', async () => {
      const doc = (await t.rest('GET', '/api/openapi.json')).body;
      const params = doc.paths['/api/mc-dm-downloads/'].get.parameters;
      const param = (name: string) => params.find((p: { name: string }) => p.name === name);
      expect(param('q').description).toMatch(/web-search syntax/);
      expect(param('facets').description).toMatch(/^1 adds `facets` to the answer: With `q`/);
      expect(param('updated_since').description).toMatch(/same as since/);
      expect(param('order').schema.enum).toContain('relevance');
    });

    it('bad input: empty q, order relevance or facets without q, an order a search cannot take', async () => {
      const bad = async (query: Record<string, string | number>) => {
        const r = await rest(query);
        expect(r.status, JSON.stringify(r.body)).toBe(400);
        return r.body.errors[0];
      };
      expect(await bad({ q: '' })).toMatchObject({ code: 'required_input_missing', params: { missing: ['q'] } });
      expect(await bad({ q: '  ' })).toMatchObject({ code: 'required_input_missing' });
      expect(await bad({ q: 'x'.repeat(201) })).toMatchObject({ code: 'invalid_input', params: { field: 'q' } });
      expect(await bad({ order: 'relevance' })).toMatchObject({ code: 'invalid_input', params: { field: 'order' } });
      expect(await bad({ facets: 1 })).toMatchObject({ code: 'invalid_input', params: { field: 'facets' } });
      expect(await bad({ q: 'castle', order: 'title' })).toMatchObject({
        code: 'invalid_input',
        params: { field: 'order' },
      });
      expect(await bad({ q: 'castle', facets: 'maybe' })).toMatchObject({ code: 'invalid_input' });
      expect(await bad({ q: 'castle', order: 'best' })).toMatchObject({ code: 'invalid_input' });
    });
  });

  describe('SEARCH_LANGUAGE', () => {
    it('stems in the configured language (a fresh service started with simple)', async () => {
      const simple = await startTestApp(kind, { readCacheMb: 0, searchLanguage: 'simple' });
      try {
        const category = (await simple.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Runs' } })).body
          .category;
        const owner = await simple.user('runner');
        await simple.rest('POST', '/api/mc-dm-downloads/', {
          key: owner.key,
          form: { category_id: category.category_id, title: 'Running shoes', version_string: '1' },
        });
        const found = async (q: string) =>
          (await simple.gqlOk(`query($q: String!) { search(query: $q) { totalCount } }`, { q: `${q} ` })).search
            .totalCount;
        // `simple` stems nothing: only the word as written (accents still folded) is found.
        expect(await found('running')).toBe(1);
        expect(await found('run')).toBe(0);
      } finally {
        await simple.close();
      }
    });

    it('a change of language rewrites the documents already stored, once', async () => {
      expect(titles(await search('run'))).toEqual(['Café Racer']);
      expect(await ensureSearchLanguage(t.app.db, 'simple')).toBe(true);
      expect(await ensureSearchLanguage(t.app.db, 'simple')).toBe(false);
      expect((await search('run ')).totalCount).toBe(0);
      expect(titles(await search('running '))).toEqual(['Café Racer']);
      // The prefix's lexemes are the new language's: `runni` starts `running` (simple), not `run` (english).
      expect(titles(await search('runni'))).toEqual(['Café Racer']);
      expect(await ensureSearchLanguage(t.app.db, 'english')).toBe(true);
      expect(titles(await search('run '))).toEqual(['Café Racer']);
      expect(titles(await search('runni'))).toEqual([]);
      expect(titles(await search('ru'))).toEqual(['Café Racer']);
    });
  });
});

describe('the query language and the configuration, as plain functions', () => {
  it('splits a query: the last plain word is a prefix unless quoted, excluded, `or`, or followed by a space', () => {
    expect(searchTextOf('big map pa', 'q')).toMatchObject({ head: 'big map', prefix: 'pa', prefixOr: false });
    expect(searchTextOf('castle or dra', 'q')).toMatchObject({ head: 'castle', prefix: 'dra', prefixOr: true });
    expect(searchTextOf('"stone castle"', 'q')).toMatchObject({ head: '"stone castle"', prefix: null });
    expect(searchTextOf('castle -ruins', 'q')).toMatchObject({ prefix: null, text: 'castle', excluded: 'ruins' });
    expect(searchTextOf('castle ', 'q')).toMatchObject({ prefix: null });
    expect(searchTextOf('c++', 'q')).toMatchObject({ prefix: null });
  });

  it('highlights escape the text and turn the marks into <mark>', () => {
    expect(highlightHtml(`a <b> & "q" 'x' ${MARK_START}hit${MARK_END}`)).toBe(
      'a &lt;b&gt; &amp; &quot;q&quot; &#39;x&#39; <mark>hit</mark>',
    );
  });

  it("SEARCH_LANGUAGE is one of PostgreSQL's text search languages", () => {
    expect(loadConfig({}).searchLanguage).toBe('english');
    expect(loadConfig({ SEARCH_LANGUAGE: 'german' }).searchLanguage).toBe('german');
    expect(() => loadConfig({ SEARCH_LANGUAGE: 'klingon' })).toThrow(ConfigError);
  });
});
