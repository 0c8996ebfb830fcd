// A relation loaded with its row (a download's category and current version) answers from the row when nothing
// below it is loaded by the Prisma plugin (src/graphql/preloaded-relations.ts), and through the Prisma plugin
// otherwise: both in one operation give the same rows, on both databases and both executors. So does a field with a
// selection of its own (a comment's username, a download's tags) when its selection is on the row.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, type FieldNode, type GraphQLObjectType, type GraphQLResolveInfo } from 'graphql';
import { schema } from '../src/modules/index.js';
import { selectionCheck } from '../src/graphql/preloaded-relations.js';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

/** A resolve info for `field` of `Download` selecting `selection`, as an executor would pass it. */
function infoFor(fieldName: string, selection: string): GraphQLResolveInfo {
  const doc = parse(`{ x { ${fieldName} ${selection} } }`);
  const op = doc.definitions[0] as { selectionSet: { selections: readonly FieldNode[] } };
  const node = op.selectionSet.selections[0]!.selectionSet!.selections[0] as FieldNode;
  const parentType = schema.getType('Download') as GraphQLObjectType;
  const field = parentType.getFields()[fieldName]!;
  return {
    fieldName,
    fieldNodes: [node],
    returnType: field.type,
    parentType,
    path: { prev: { prev: undefined, key: 'x', typename: 'Query' }, key: fieldName, typename: 'Download' },
    schema,
    fragments: {},
    rootValue: undefined,
    operation: doc.definitions[0] as never,
    variableValues: {},
  };
}

describe('which relations answer from their row', () => {
  const resolveOf = (name: string) => (schema.getType('Download') as GraphQLObjectType).getFields()[name]!.resolve!;
  const category = { id: 7, title: 'Maps', parentCategoryId: 3 };
  const version = { id: 9, versionString: '1.0' };
  const row = { id: 1, categoryId: 7, category, currentVersionId: 9, currentVersion: version };

  it('a loaded relation with only columns below it is the row’s own object, given at once', () => {
    // A context with no Prisma client and no plans: the Prisma plugin's path would have to load the relation.
    expect(resolveOf('category')(row, {}, {}, infoFor('category', '{ title categoryId }'))).toBe(category);
    expect(resolveOf('currentVersion')(row, {}, {}, infoFor('currentVersion', '{ versionString }'))).toBe(version);
    expect(
      resolveOf('currentVersion')({ ...row, currentVersion: null }, {}, {}, infoFor('currentVersion', '{ versionId }')),
    ).toBe(null);
  });

  it('a relation with a planned field below it, or not on the row, goes through the Prisma plugin', () => {
    const through = (value: () => unknown) => {
      try {
        const v = value();
        return v !== category && v !== version;
      } catch {
        return true; // the Prisma plugin's loader, with no client to load with
      }
    };
    expect(through(() => resolveOf('category')(row, {}, {}, infoFor('category', '{ title parent { title } }')))).toBe(
      true,
    );
    expect(
      through(() => resolveOf('currentVersion')(row, {}, {}, infoFor('currentVersion', '{ download { title } }'))),
    ).toBe(true);
    const { category: _, ...withoutCategory } = row;
    expect(through(() => resolveOf('category')(withoutCategory, {}, {}, infoFor('category', '{ title }')))).toBe(true);
  });
});

describe('which fields with a selection of their own answer from the row', () => {
  const field = (type: string, name: string) => (schema.getType(type) as GraphQLObjectType).getFields()[name]!;
  const noPlans = {}; // no Prisma client and no plans: the Prisma plugin's path would have to load the selection

  it('checks a selection tree against a row: columns, nested selects, lists, null relations', () => {
    const check = selectionCheck({ user: { select: { username: true } }, id: true })!;
    expect(check({ id: 1, user: { username: 'ann' } })).toBe(true);
    expect(check({ id: 1, user: null })).toBe(true); // no related row: nothing more to load
    expect(check({ id: 1 })).toBe(false);
    expect(check({ id: 1, user: { id: 2 } })).toBe(false); // a narrower row: the username is not there
    expect(check({ user: { username: 'ann' } })).toBe(false);
    const tags = selectionCheck({ tags: { select: { tag: { select: { name: true } } } } })!;
    expect(tags({ tags: [] })).toBe(true);
    expect(tags({ tags: [{ tag: { name: 'a' } }, { tag: { name: 'b' } }] })).toBe(true);
    expect(tags({ tags: [{ tag: { name: 'a' } }, { tagId: 2 }] })).toBe(false); // every element is checked
    // Selections it does not check: arguments, include, functions, nothing selected.
    expect(selectionCheck({ comments: { select: { id: true }, take: 1 } })).toBe(null);
    expect(selectionCheck({ user: { include: { memberships: true } } })).toBe(null);
    expect(selectionCheck(() => ({ id: true }))).toBe(null);
    expect(selectionCheck({})).toBe(null);
    expect(selectionCheck(undefined)).toBe(null);
  });

  it("a comment's username and a download's tags are read off the row when the row holds them", () => {
    const username = field('Comment', 'username').resolve!;
    const info = { path: { prev: undefined, key: 'username', typename: 'Comment' } } as never;
    expect(username({ id: 1, user: { username: 'ann' } }, {}, noPlans, info)).toBe('ann');
    const tags = field('Download', 'tags').resolve!;
    expect(tags({ id: 1, tags: [{ tag: { name: 'maps' } }, { tag: { name: 'hd' } }] }, {}, noPlans, info)).toEqual([
      'hd',
      'maps',
    ]);
  });

  it('without its selection on the row, the field goes through the Prisma plugin', () => {
    const username = field('Comment', 'username').resolve!;
    const info = { path: { prev: undefined, key: 'username', typename: 'Comment' }, parentType: { name: 'Comment' } };
    let answered: unknown;
    try {
      answered = username({ id: 1, user: { id: 2 } }, {}, noPlans, info as never);
    } catch (err) {
      answered = err; // the Prisma plugin's loader, with no client to load with
    }
    expect(answered).not.toBe(undefined);
    expect(answered instanceof Promise || answered instanceof Error).toBe(true);
    if (answered instanceof Promise) answered.catch(() => {});
  });
});

forEachDatabase((kind) => {
  let t: TestApp;
  let top: number;
  let leaf: number;
  const titles: string[] = [];
  beforeAll(async () => {
    t = await startTestApp(kind, { readCacheMb: 0, commentFloodSeconds: 0 });
    top = (await t.gqlOk('mutation { createCategory(input: { title: "Top" }) { category { categoryId } } }'))
      .createCategory.category.categoryId;
    leaf = (
      await t.gqlOk(
        'mutation($p: Int) { createCategory(input: { title: "Leaf", parentCategoryId: $p }) { category { categoryId } } }',
        { p: top },
      )
    ).createCategory.category.categoryId;
    const owner = await t.user('owner');
    for (let i = 0; i < 3; i++) {
      const title = `Pack ${i}`;
      titles.push(title);
      await t.gqlOk(
        'mutation($input: CreateDownloadInput!) { createDownload(input: $input) { download { downloadId } } }',
        { input: { categoryId: leaf, title, tagLine: 't', description: 'd', versionString: `${i}.0` } },
        owner.key,
      );
    }
  });
  afterAll(() => t?.close());

  it('the same relation answered from the row and through the plans, side by side, on both executors', async () => {
    const q = `query($c: Int) { downloads(categoryId: $c, order: TITLE, direction: ASC) { nodes {
      title
      a: category { title categoryId }
      b: category { title parent { title } }
      currentVersion { versionString }
      v: currentVersion { ...V }
    } } }
    fragment V on Version { versionString download { title } }`;
    // Several runs: the first ones interpreted, later ones compiled (src/graphql/compiled.ts).
    for (let run = 0; run < 4; run++) {
      const { downloads } = await t.gqlOk(q, { c: leaf });
      expect(downloads.nodes.map((n: any) => n.title)).toEqual(titles);
      for (const [i, n] of downloads.nodes.entries()) {
        expect(n.a).toEqual({ title: 'Leaf', categoryId: leaf });
        expect(n.b).toEqual({ title: 'Leaf', parent: { title: 'Top' } });
        expect(n.currentVersion).toEqual({ versionString: `${i}.0` });
        expect(n.v).toEqual({ versionString: `${i}.0`, download: { title: titles[i] } });
      }
    }
  });

  it("comments' usernames and downloads' tags, read off the row and through the plans, agree", async () => {
    const owner = await t.user('commenter');
    const { downloads } = await t.gqlOk('query($c: Int) { downloads(categoryId: $c) { nodes { downloadId } } }', {
      c: leaf,
    });
    const d = downloads.nodes[0].downloadId;
    await t.gqlOk(
      'mutation($d: Int!) { updateDownload(input: { downloadId: $d, tags: ["Maps", "hd"] }) { download { downloadId } } }',
      { d },
    );
    for (const message of ['first', 'second'])
      await t.gqlOk(
        'mutation($d: Int!, $m: String!) { createComment(input: { downloadId: $d, message: $m }) { comment { commentId } } }',
        { d, m: message },
        owner.key,
      );
    // The same usernames by three ways: the comments list's statement, the download's comments connection, and the
    // author relation.
    const q = `query($d: Int!) {
      comments(downloadId: $d) { nodes { message username author { username } } }
      download(downloadId: $d) { tags comments(first: 5, direction: ASC) { nodes { message username } } }
    }`;
    for (let run = 0; run < 4; run++) {
      const r = await t.gqlOk(q, { d });
      const listed = r.comments.nodes.map((c: any) => [c.message, c.username, c.author.username]);
      expect(listed.sort()).toEqual([
        ['first', 'commenter', 'commenter'],
        ['second', 'commenter', 'commenter'],
      ]);
      expect(r.download.tags).toEqual(['hd', 'maps']);
      expect(r.download.comments.nodes).toEqual([
        { message: 'first', username: 'commenter' },
        { message: 'second', username: 'commenter' },
      ]);
    }
    const rest = await t.rest('GET', '/api/mc-dm-comments/', { query: { download_id: d } });
    expect(rest.body.comments.map((c: any) => c.username)).toEqual(['commenter', 'commenter']);
    const one = await t.rest('GET', `/api/mc-dm-downloads/${d}/`, { query: { with: 'full' } });
    expect(one.body.download.tags).toEqual(['hd', 'maps']);
  });

  it('REST lists and gets with their embedded category and current version are unchanged', async () => {
    const list = await t.rest('GET', '/api/mc-dm-downloads/', { query: { category_id: leaf, with: 'full' } });
    expect(list.status).toBe(200);
    for (const d of list.body.downloads) {
      expect(d.Category).toMatchObject({ category_id: leaf, title: 'Leaf', parent_category_id: top });
      expect(d.CurrentVersion).toMatchObject({ version_id: d.current_version_id, download_id: d.download_id });
      const one = await t.rest('GET', `/api/mc-dm-downloads/${d.download_id}/`, { query: { with: 'full' } });
      expect(one.body.download).toEqual(d);
    }
  });
});
