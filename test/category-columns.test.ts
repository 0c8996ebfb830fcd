// The categories list reads only the columns its selected fields need (src/schema/selected-fields.ts,
// categoryReadOf in src/db/resource-reads.ts). Its answers must be byte-identical to those of a read of every column,
// through REST (with and without with=full) and GraphQL (every field of Category, through fragments and @include),
// for every visitor; and the narrow read must really be narrower.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse, type FragmentDefinitionNode, type OperationDefinitionNode, type FieldNode } from 'graphql';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';
import { categoryReadOf, ResourceReads, type CategoryRead } from '../src/db/resource-reads.js';
import { selectedFields } from '../src/schema/selected-fields.js';

describe('which columns a selection reads', () => {
  it('maps fields to their columns and reads every column for a field it does not know', () => {
    expect(categoryReadOf(new Set(['categoryId', 'title', 'viewUrl']))).toEqual({ parent: false, columns: ['id', 'parentId', 'title'] });
    expect(categoryReadOf(new Set(['maxFileSize', 'parent', '__typename']))).toEqual({ parent: true, columns: ['id', 'parentId', 'maxFileSize'] });
    expect(categoryReadOf(new Set(['title', 'someFutureField']))).toEqual({ parent: false });
    expect(categoryReadOf(null)).toEqual({});
  });

  it('follows fragments and honours @include and @skip with the variables', () => {
    const doc = parse(`query Q($a: Boolean!, $b: Boolean!) { categories { nodes { title ...F ... on Category { faIcon @skip(if: $b) } } pagination { total } } }
      fragment F on Category { iconColor @include(if: $a) ...G }  fragment G on Category { ...F displayOrder }`);
    const op = doc.definitions[0] as OperationDefinitionNode;
    const fragments = Object.fromEntries(doc.definitions.slice(1).map((d) => [(d as FragmentDefinitionNode).name.value, d as FragmentDefinitionNode]));
    const info = (variableValues: Record<string, unknown>) => ({ fieldNodes: [op.selectionSet.selections[0] as FieldNode], fragments, variableValues });
    expect([...selectedFields(info({ a: true, b: false }), ['nodes'])!].sort()).toEqual(['displayOrder', 'faIcon', 'iconColor', 'title']);
    expect([...selectedFields(info({ a: false, b: true }), ['nodes'])!].sort()).toEqual(['displayOrder', 'title']);
    expect(selectedFields({ ...info({ a: true, b: true }), fragments: {} }, ['nodes'])).toBeNull();
  });
});

const EVERY_FIELD = `fragment All on Category {
  id __typename categoryId parentCategoryId title description displayOrder downloadCount faIcon iconColor viewUrl
  requireApproval requireCommentApproval enableVersioning allowMultiFile maxTeamMembers maxFilesPerVersion
  maxFileSize maxVersionSize maxDownloadSize allowedFileTypes previewTextEnabled previewImageEnabled canAddDownload
}`;

forEachDatabase((kind) => {
  let t: TestApp;
  let guestKey: string;
  beforeAll(async () => {
    t = await startTestApp(kind);
    const p = t.prisma;
    const root = await p.category.create({ data: { title: 'Root «ü»', displayOrder: 3, description: 'a "quoted"\nline', faIcon: 'fa-map', iconColor: '#1e90ff' } });
    for (let i = 0; i < 5; i++) {
      await p.category.create({ data: {
        title: `C${i}`, parentId: i < 3 ? root.id : null, displayOrder: i % 3, downloadCount: i * 3, description: `d${i}`, faIcon: `fa-${i}`, iconColor: i % 2 ? '#fff' : '',
        requireApproval: i % 2 === 0, requireCommentApproval: i % 3 === 0, enableVersioning: i % 2 === 1, allowMultiFile: i === 2,
        maxTeamMembers: i, maxFilesPerVersion: 10 + i, maxFileSize: 2n ** 60n + BigInt(i), maxVersionSize: BigInt(i) * 2n ** 40n, maxDownloadSize: 7n,
        allowedFileTypes: i === 1 ? 'zip,rar' : '', previewTextEnabled: i === 3, previewImageEnabled: i === 4,
      } });
    }
    guestKey = await t.key('GUEST', ['mc_dm_category:read', 'mc_dm_download:read']);
  });
  afterAll(async () => { await t?.close(); });

  /** Raw response bodies, read once as the service reads them and once with every column. */
  async function bothWays(request: () => Promise<string>): Promise<{ narrow: string; wide: string; reads: CategoryRead[] }> {
    const reads = t.app.services.reads as ResourceReads;
    const seen: CategoryRead[] = [];
    const original = reads.categoryPage.bind(reads);
    const spy = vi.spyOn(reads, 'categoryPage').mockImplementation((slice, read) => {
      seen.push(typeof read === 'boolean' ? { parent: read } : read ?? {});
      return original(slice, read);
    });
    const narrow = await request();
    spy.mockImplementation((slice, read) => original(slice, { parent: typeof read === 'boolean' ? read : read?.parent }));
    const wide = await request();
    spy.mockRestore();
    return { narrow, wide, reads: seen };
  }

  const rest = (query: string, key = SUPER_KEY) => async () => (await fetch(`${t.url}/api/mc-dm-categories/${query}`, { headers: { 'Forum-Api-Key': key } })).text();
  const gql = (query: string, key = SUPER_KEY) => async () => (await fetch(`${t.url}/graphql`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'Forum-Api-Key': key }, body: JSON.stringify({ query }),
  })).text();

  it(`REST answers are the same as with every column read (${kind})`, async () => {
    for (const query of ['', '?with=full', '?order=title&direction=asc&per_page=3&page=2', '?with=full&order=download_count']) {
      for (const key of [SUPER_KEY, guestKey]) {
        const { narrow, wide, reads } = await bothWays(rest(query, key));
        expect(narrow).toBe(wide);
        expect(JSON.parse(narrow).categories?.length ?? 0, query).toBeGreaterThan(key === SUPER_KEY ? 0 : -1);
        const columns = reads[0]?.columns;
        expect(columns, query).toBeDefined();
        if (query.includes('full')) expect(columns).toContain('maxFileSize');
        else expect(columns).not.toContain('maxFileSize');
      }
    }
    const { reads } = await bothWays(rest(''));
    expect(reads[0]!.columns).toEqual(['id', 'parentId', 'title', 'description', 'displayOrder', 'downloadCount', 'faIcon', 'iconColor']);
  });

  it(`GraphQL answers are the same as with every column read (${kind})`, async () => {
    const queries = [
      `{ categories(perPage: 10) { nodes { ...All parent { ...All } children { totalCount } downloads { totalCount } } pagination { total lastPage } } } ${EVERY_FIELD}`,
      '{ categories(order: TITLE, direction: ASC) { nodes { title viewUrl parent { title } } } }',
      '{ categories { nodes { c: categoryId maxFileSize } } }',
    ];
    for (const query of queries) {
      for (const key of [SUPER_KEY, guestKey]) {
        const { narrow, wide } = await bothWays(gql(query, key));
        expect(narrow).toBe(wide);
        expect(JSON.parse(narrow).errors, narrow).toBeUndefined();
      }
    }
    const { narrow } = await bothWays(gql(queries[0]!));
    // The knobs are really read (a test against a read that returned nothing for them would pass otherwise).
    expect(narrow).toContain('"maxVersionSize":4398046511104');
    expect(narrow).toContain('"allowedFileTypes":"zip,rar"');
  });
});
