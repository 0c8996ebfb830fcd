// Every list is bounded (contract §9): each list field of the schema is a connection or a page's rows, takes
// `first`/`perPage`, is fetched by `ids`, or has a small fixed bound (costed at that bound). And the cost of an
// operation is an upper bound of the objects it can answer, so the nested-lists attacks that once asked for
// millions of rows at an accepted cost are refused before they run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getIntrospectionQuery,
  graphqlSync,
  parse,
  type IntrospectionField,
  type IntrospectionObjectType,
  type IntrospectionQuery,
  type IntrospectionTypeRef,
} from 'graphql';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';
import { schema } from '../src/modules/index.js';
import { LIST_BOUNDS, operationCost } from '../src/graphql/cost.js';

/** The lists whose length has a small fixed bound, and that bound: they take no page size. */
const FIXED_BOUNDS = {
  'Download.tags': 20, // MAX_TAGS: createDownload/updateDownload refuse more
  'Viewer.scopes': 6, // the six API scopes
  'ApiKey.scopes': 6, // a subset of the six, without repeats (normalizeScopes)
  'Group.permissions': 20, // the permission names, each at most once per group (primary key)
  'Query.effectivePermissions': 20, // one per permission name
  'Query.filesByHash': 100, // at most 100 files answered, whatever the hashes match
  'SearchFacets.categories': 20, // the 20 most frequent (LIMITS.searchFacetSize)
  'SearchFacets.tags': 20,
  'SearchFacets.prefixes': 20,
  'Version.compatibleWith': 100, // createVersion/updateVersion refuse more
  'Version.dependencies': 100, // likewise
  'Query.updates': 500, // one entry per hash at most, 500 hashes at most
  'Download.stats': 366, // one row per day, at most 366 days (from/to over that answer invalid_input)
  'Query.downloadStats': 366, // likewise
  'DependencyResolution.versions': 100, // resolution stops at 100 versions
  'DependencyResolution.conflicts': 100, // and reports at most 100 conflicts
  'DependencyResolution.cycles': 220, // 20 cycles of at most 11 ids
  'Webhook.events': 11, // the event types, each at most once (or `*` alone)
};
const PAGE_SIZE_ARGS = ['first', 'last', 'perPage'];

const introspection = (graphqlSync({ schema, source: getIntrospectionQuery() }).data as unknown as IntrospectionQuery)
  .__schema;
const objects = introspection.types.filter(
  (t): t is IntrospectionObjectType => t.kind === 'OBJECT' && !t.name.startsWith('__'),
);
const unwrapNonNull = (t: IntrospectionTypeRef) =>
  t.kind === 'NON_NULL' ? (t as { ofType: IntrospectionTypeRef }).ofType : t;
const namedOf = (t: IntrospectionTypeRef): string =>
  'ofType' in t && t.ofType ? namedOf(t.ofType) : (t as { name: string }).name;
const isList = (f: IntrospectionField) => unwrapNonNull(f.type).kind === 'LIST';
/** A page object: `{ nodes pagination }` or `{ edges nodes pageInfo totalCount }`. */
const isPage = (t: IntrospectionObjectType) => t.fields.some((f) => f.name === 'pagination' || f.name === 'pageInfo');
const pages = new Set(objects.filter(isPage).map((t) => t.name));

describe('every list field of the schema is bounded', () => {
  it("is a page's rows, takes first/last/perPage, is fetched by ids, or has a fixed bound", () => {
    const unbounded: string[] = [];
    const seen: string[] = [];
    for (const type of objects) {
      for (const field of type.fields.filter(isList)) {
        const name = `${type.name}.${field.name}`;
        seen.push(name);
        const args = field.args.map((a) => a.name);
        if (pages.has(type.name)) continue; // costed at the page size of the field answering the page (checked below)
        if (args.some((a) => PAGE_SIZE_ARGS.includes(a))) continue;
        if (args.includes('ids')) continue; // nodes(ids): at most 100 ids, costed one per id
        if (name in FIXED_BOUNDS) continue;
        unbounded.push(`${name}: ${namedOf(field.type)}`);
      }
    }
    expect(unbounded).toEqual([]);
    expect(seen.length).toBeGreaterThan(20);
    // The cost rule counts the fixed-bound lists at the same bounds.
    expect(LIST_BOUNDS).toEqual(FIXED_BOUNDS);
  });

  it('answers every page object only from a field taking first/last/perPage', () => {
    const unpaged: string[] = [];
    for (const type of objects) {
      for (const field of type.fields) {
        if (!pages.has(namedOf(field.type))) continue;
        if (!field.args.some((a) => PAGE_SIZE_ARGS.includes(a.name))) unpaged.push(`${type.name}.${field.name}`);
      }
    }
    expect(unpaged).toEqual([]);
  });

  it('costs every list at its page size or bound, each object it can answer at least 1', () => {
    const cost = (q: string, v?: Record<string, unknown>) => operationCost(schema, parse(q), v);
    // downloads 1 + nodes (1 + 100 × (1 + 0)): scalars-only rows count one each
    expect(cost('{ downloads(perPage: 100) { nodes { title } } }')).toBe(1 + 1 + 100);
    // versions without first: 20; with first: its value, at most 100
    expect(cost('{ download(downloadId: 1) { versions { versionId } } }')).toBe(1 + 1 + 20);
    expect(cost('{ download(downloadId: 1) { versions(first: 3) { versionId } } }')).toBe(1 + 1 + 3);
    expect(cost('{ download(downloadId: 1) { versions(first: 500) { versionId } } }')).toBe(1 + 1 + 100);
    // a fixed bound: a download's tags (20), each 1; 20 permission names, each with its rules (first 2)
    expect(cost('{ download(downloadId: 1) { tags } }')).toBe(1 + 1 + 20);
    expect(cost('{ prefixes(perPage: 5) { categoryIds(first: 7) } }')).toBe(1 + 5 * (1 + 1 + 7));
    expect(cost('{ effectivePermissions(userId: 1) { permission rules(first: 2) { groupId } } }')).toBe(
      1 + 20 * (1 + 1 + 2),
    );
  });
});

forEachDatabase((kind) => {
  let t: TestApp;
  let downloadId: number;
  let commentId: number;
  beforeAll(async () => {
    t = await startTestApp(kind);
    const { createCategory } = await t.gqlOk(
      'mutation { createCategory(input: { title: "Versions" }) { category { categoryId } } }',
    );
    const owner = await t.user('owner');
    const { createDownload } = await t.gqlOk(
      'mutation($input: CreateDownloadInput!) { createDownload(input: $input) { download { downloadId } } }',
      {
        input: {
          categoryId: createCategory.category.categoryId,
          title: 'Many versions',
          tagLine: 't',
          description: 'd',
          versionString: '1.0',
        },
      },
      owner.key,
    );
    downloadId = createDownload.download.downloadId;
    for (let i = 1; i <= 24; i++) {
      await t.gqlOk(
        `mutation { createVersion(input: { downloadId: ${downloadId}, versionString: "2.${i}" }) { version { versionId } } }`,
        {},
        owner.key,
      );
    }
    const { createComment } = await t.gqlOk(
      `mutation { createComment(input: { downloadId: ${downloadId}, message: "m0" }) { comment { commentId } } }`,
      {},
      owner.key,
    );
    commentId = createComment.comment.commentId;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses the nested version lists that once asked for millions of rows at an accepted cost', async () => {
    // 10 downloads × 100 versions × 100 × 100 rows when versions were unbounded; the former cost counted 8412.
    const q =
      '{ downloads(perPage: 10) { nodes { versions { download { versions { download { versions { versionId } } } } } } } }';
    const figure = operationCost(schema, parse(q), {});
    console.log(`${kind}: nested version lists now cost ${figure} (was 8412)`);
    expect(figure).toBeGreaterThan(10000);
    const r = await t.gql(q);
    expect(r.status).toBe(400);
    expect(r.data).toBeUndefined();
    expect(r.errors![0].extensions).toMatchObject({
      code: 'operation_too_expensive',
      params: { kind: 'cost', value: figure, limit: 10000 },
    });
    // The same shape with small pages passes, and answers no more than its cost.
    const small =
      '{ downloads(perPage: 2) { nodes { versions(first: 3) { download { versions(first: 4) { versionId } } } } } }';
    const ok = await t.gql(small);
    expect(ok.status, JSON.stringify(ok.errors)).toBe(200);
    const rows = ok.data.downloads.nodes.flatMap((d: any) => d.versions.flatMap((v: any) => v.download.versions));
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(2 * 3 * 4);
  });

  it('pages Download.versions: 20 by default, first up to 100, below 1 refused as invalid_input', async () => {
    const versions = async (args: string) =>
      t.gql(`{ download(downloadId: ${downloadId}) { versions${args} { versionString } } }`);
    expect((await versions('')).data.download.versions).toHaveLength(20);
    const three = (await versions('(first: 3)')).data.download.versions.map((v: any) => v.versionString);
    expect(three).toEqual(['2.24', '2.23', '2.22']);
    expect((await versions('(first: 1000)')).data.download.versions).toHaveLength(25);
    for (const bad of ['0', '-1']) {
      const r = await versions(`(first: ${bad})`);
      expect(r.errors?.[0]?.extensions).toMatchObject({ code: 'invalid_input', params: { field: 'first' } });
    }
  });

  it('pages Comment.edits, EffectivePermission.rules, User.groups, Prefix.categoryIds, groups and prefixes', async () => {
    for (let i = 1; i <= 3; i++) {
      await t.gqlOk(
        `mutation { updateComment(input: { commentId: ${commentId}, message: "m${i}" }) { comment { commentId } } }`,
      );
    }
    const mod = await t.user('mod', { isModerator: true });
    const edits = async (args: string) =>
      t.gql(`{ comment(commentId: ${commentId}) { edits${args} { oldMessage } } }`, {}, mod.key);
    expect((await edits('')).data.comment.edits.map((e: any) => e.oldMessage)).toEqual(['m2', 'm1', 'm0']);
    expect((await edits('(first: 2)')).data.comment.edits.map((e: any) => e.oldMessage)).toEqual(['m2', 'm1']);
    expect((await edits('(first: 0)')).errors?.[0]?.extensions).toMatchObject({
      code: 'invalid_input',
      params: { field: 'first' },
    });

    const user = await t.gqlOk(
      'mutation { createUser(input: { username: "many", isModerator: true }) { user { userId groups } } }',
    );
    expect(user.createUser.user.groups).toEqual(['registered', 'moderator']);
    const uid = user.createUser.user.userId;
    const groups = await t.gqlOk(
      `{ u: node(id: "${Buffer.from(`User:${uid}`).toString('base64url')}") { ... on User { groups(first: 1) } } }`,
    );
    expect(groups.u.groups).toEqual(['registered']);
    const perms = await t.gqlOk(
      `{ effectivePermissions(userId: ${uid}) { permission rules { groupName } one: rules(first: 1) { groupName } } }`,
    );
    expect(perms.effectivePermissions.length).toBe(20);
    expect(perms.effectivePermissions[0].rules.map((r: any) => r.groupName)).toEqual(['registered', 'moderator']);
    expect(perms.effectivePermissions[0].one.map((r: any) => r.groupName)).toEqual(['registered']);

    const all = await t.gqlOk('{ groups { name } }');
    expect(all.groups.map((g: any) => g.name)).toEqual(['guest', 'registered', 'moderator', 'administrator']);
    expect((await t.gqlOk('{ groups(page: 2, perPage: 3) { name } }')).groups.map((g: any) => g.name)).toEqual([
      'administrator',
    ]);
    expect((await t.gql('{ groups(perPage: 0) { name } }')).errors?.[0]?.extensions).toMatchObject({
      code: 'invalid_input',
      params: { field: 'per_page' },
    });

    const categories: number[] = [];
    for (let i = 0; i < 3; i++) {
      categories.push(
        (await t.gqlOk(`mutation { createCategory(input: { title: "P${i}" }) { category { categoryId } } }`))
          .createCategory.category.categoryId,
      );
    }
    const prefixIds: number[] = [];
    for (let i = 0; i < 3; i++) {
      prefixIds.push(
        (await t.gqlOk(`mutation { createPrefix(input: { title: "Pre${i}" }) { prefix { prefixId } } }`)).createPrefix
          .prefix.prefixId,
      );
    }
    for (const c of categories)
      await t.gqlOk(
        `mutation { assignPrefix(input: { prefixId: ${prefixIds[0]}, categoryId: ${c} }) { prefix { prefixId } } }`,
      );
    const p = await t.gqlOk('{ prefixes(perPage: 2) { prefixId categoryIds two: categoryIds(first: 2) } }');
    expect(p.prefixes.map((x: any) => x.prefixId)).toEqual(prefixIds.slice(0, 2));
    expect(p.prefixes[0].categoryIds).toEqual(categories);
    expect(p.prefixes[0].two).toEqual(categories.slice(0, 2));
    expect(
      (await t.gqlOk('{ prefixes(page: 2, perPage: 2) { prefixId } }')).prefixes.map((x: any) => x.prefixId),
    ).toEqual([prefixIds[2]]);
  });
});
