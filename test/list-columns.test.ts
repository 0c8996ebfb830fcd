// The categories list reads only the columns its selected fields need (src/graphql/selected-fields.ts,
// categoryReadOf in src/modules/categories/store.ts), and the comments list only the permission columns of the download
// unless the operation selects the download. Their answers must be byte-identical to those of a read of every
// column, through REST (with and without with=full) and GraphQL (every field, through fragments and @include), for
// every visitor; and the narrow read must really be narrower.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse, type FragmentDefinitionNode, type OperationDefinitionNode, type FieldNode } from 'graphql';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';
import { categoryReadOf, type CategoryRead } from '../src/modules/categories/store.js';
import { selectedFields } from '../src/graphql/selected-fields.js';

type CategoryPage = typeof import('../src/modules/categories/store.js').categoryPage;
type CommentPage = typeof import('../src/modules/comments/store.js').commentPage;

/** Stand-ins the tests put around the stores' reads, to see and change what the service asks of them. */
const around = vi.hoisted(() => ({
  categoryPage: undefined as
    | undefined
    | ((read: CategoryPage, ...args: Parameters<CategoryPage>) => ReturnType<CategoryPage>),
  commentPage: undefined as
    | undefined
    | ((read: CommentPage, ...args: Parameters<CommentPage>) => ReturnType<CommentPage>),
}));
vi.mock('../src/modules/categories/store.js', async (importOriginal) => {
  const store = await importOriginal<typeof import('../src/modules/categories/store.js')>();
  const categoryPage: CategoryPage = (...args) =>
    around.categoryPage ? around.categoryPage(store.categoryPage, ...args) : store.categoryPage(...args);
  return { ...store, categoryPage };
});
vi.mock('../src/modules/comments/store.js', async (importOriginal) => {
  const store = await importOriginal<typeof import('../src/modules/comments/store.js')>();
  const commentPage: CommentPage = (...args) =>
    around.commentPage ? around.commentPage(store.commentPage, ...args) : store.commentPage(...args);
  return { ...store, commentPage };
});

describe('which columns a selection reads', () => {
  it('maps fields to their columns and reads every column for a field it does not know', () => {
    expect(categoryReadOf(new Set(['categoryId', 'title', 'viewUrl']))).toEqual({
      parent: false,
      columns: ['id', 'parentId', 'title'],
    });
    expect(categoryReadOf(new Set(['maxFileSize', 'parent', '__typename']))).toEqual({
      parent: true,
      columns: ['id', 'parentId', 'maxFileSize'],
    });
    expect(categoryReadOf(new Set(['title', 'someFutureField']))).toEqual({ parent: false });
    expect(categoryReadOf(null)).toEqual({});
  });

  it('follows fragments and honours @include and @skip with the variables', () => {
    const doc =
      parse(`query Q($a: Boolean!, $b: Boolean!) { categories { nodes { title ...F ... on Category { faIcon @skip(if: $b) } } pagination { total } } }
      fragment F on Category { iconColor @include(if: $a) ...G }  fragment G on Category { ...F displayOrder }`);
    const op = doc.definitions[0] as OperationDefinitionNode;
    const fragments = Object.fromEntries(
      doc.definitions.slice(1).map((d) => [(d as FragmentDefinitionNode).name.value, d as FragmentDefinitionNode]),
    );
    const info = (variableValues: Record<string, unknown>) => ({
      fieldNodes: [op.selectionSet.selections[0] as FieldNode],
      fragments,
      variableValues,
    });
    expect([...selectedFields(info({ a: true, b: false }), ['nodes'])!].sort()).toEqual([
      'displayOrder',
      'faIcon',
      'iconColor',
      'title',
    ]);
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
  let userKey: string;
  let downloadId: number;
  beforeAll(async () => {
    t = await startTestApp(kind);
    const p = t.prisma;
    const root = await p.category.create({
      data: {
        title: 'Root «ü»',
        displayOrder: 3,
        description: 'a "quoted"\nline',
        faIcon: 'fa-map',
        iconColor: '#1e90ff',
      },
    });
    for (let i = 0; i < 5; i++) {
      await p.category.create({
        data: {
          title: `C${i}`,
          parentId: i < 3 ? root.id : null,
          displayOrder: i % 3,
          downloadCount: i * 3,
          description: `d${i}`,
          faIcon: `fa-${i}`,
          iconColor: i % 2 ? '#fff' : '',
          requireApproval: i % 2 === 0,
          requireCommentApproval: i % 3 === 0,
          enableVersioning: i % 2 === 1,
          allowMultiFile: i === 2,
          maxTeamMembers: i,
          maxFilesPerVersion: 10 + i,
          maxFileSize: 2n ** 60n + BigInt(i),
          maxVersionSize: BigInt(i) * 2n ** 40n,
          maxDownloadSize: 7n,
          allowedFileTypes: i === 1 ? 'zip,rar' : '',
          previewTextEnabled: i === 3,
          previewImageEnabled: i === 4,
        },
      });
    }
    guestKey = await t.key('GUEST', ['mc_dm_category:read', 'mc_dm_download:read']);
    const group = (await p.group.findFirstOrThrow()).id;
    const users = [];
    for (const username of ['ann', 'bob «ü»'])
      users.push((await p.user.create({ data: { username, primaryGroupId: group } })).id);
    userKey = await t.key('USER', ['all'], users[1]);
    const d = await p.download.create({
      data: { categoryId: root.id, userId: users[0]!, title: 'D «x»', description: 'long '.repeat(50), tagLine: 't' },
    });
    downloadId = d.id;
    const states = ['visible', 'moderated', 'deleted'] as const;
    for (let c = 0; c < 7; c++) {
      await p.comment.create({
        data: {
          downloadId: d.id,
          userId: users[c % 2]!,
          message: `m ${c} «\\» "q"`,
          state: states[c % 3],
          commentDate: new Date(Date.UTC(2026, 0, 1) + c * 60_000),
          lastEditDate: c % 2 ? new Date(Date.UTC(2026, 0, 2) + c) : null,
          editCount: c % 3,
        },
      });
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Raw comments-list response bodies, read once as the service reads them and once with the whole download. */
  async function commentsBothWays(
    request: () => Promise<string>,
  ): Promise<{ narrow: string; wide: string; whole: boolean[] }> {
    const whole: boolean[] = [];
    around.commentPage = (read, db, filter, slice, user, w) => {
      whole.push(w ?? true);
      return read(db, filter, slice, user, w);
    };
    t.app.readCache.clear(); // each request computes its answer: what it reads is the point
    const narrow = await request();
    around.commentPage = (read, db, filter, slice, user) => read(db, filter, slice, user, true);
    t.app.readCache.clear();
    const wide = await request();
    around.commentPage = undefined;
    return { narrow, wide, whole };
  }

  /** Raw response bodies, read once as the service reads them and once with every column. */
  async function bothWays(
    request: () => Promise<string>,
  ): Promise<{ narrow: string; wide: string; reads: CategoryRead[] }> {
    const seen: CategoryRead[] = [];
    around.categoryPage = (read, db, slice, columns) => {
      seen.push(columns ?? {});
      return read(db, slice, columns);
    };
    t.app.readCache.clear(); // each request computes its answer: what it reads is the point
    const narrow = await request();
    around.categoryPage = (read, db, slice, columns) => read(db, slice, { parent: columns?.parent });
    t.app.readCache.clear();
    const wide = await request();
    around.categoryPage = undefined;
    return { narrow, wide, reads: seen };
  }

  const rest =
    (query: string, key = SUPER_KEY) =>
    async () =>
      (await fetch(`${t.url}/api/mc-dm-categories/${query}`, { headers: { 'Forum-Api-Key': key } })).text();
  const gql =
    (query: string, key = SUPER_KEY) =>
    async () =>
      (
        await fetch(`${t.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'Forum-Api-Key': key },
          body: JSON.stringify({ query }),
        })
      ).text();

  it(`REST answers are the same as with every column read (${kind})`, async () => {
    for (const query of [
      '',
      '?with=full',
      '?order=title&direction=asc&per_page=3&page=2',
      '?with=full&order=download_count',
    ]) {
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
    expect(reads[0]!.columns).toEqual([
      'id',
      'parentId',
      'title',
      'description',
      'displayOrder',
      'downloadCount',
      'faIcon',
      'iconColor',
    ]);
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

  const restComments =
    (query: string, key = SUPER_KEY) =>
    async () =>
      (
        await fetch(`${t.url}/api/mc-dm-comments/?download_id=${downloadId}${query}`, {
          headers: { 'Forum-Api-Key': key },
        })
      ).text();

  it(`comments: REST and GraphQL answers are the same as with the whole download read (${kind})`, async () => {
    for (const query of ['', '&with=full', '&order=last_edit_date&direction=asc&per_page=2&page=2']) {
      for (const key of [SUPER_KEY, userKey, guestKey]) {
        const { narrow, wide, whole } = await commentsBothWays(restComments(query, key));
        expect(narrow).toBe(wide);
        expect(whole).toEqual([false]);
      }
    }
    // The permission checks ran on the narrow download: a user sees the visible comments, a super-user key all of them.
    const user = JSON.parse((await commentsBothWays(restComments('&with=full', userKey))).narrow);
    expect(user.comments.map((c: any) => c.comment_state)).toEqual(['visible', 'visible', 'visible']);
    const all = JSON.parse((await commentsBothWays(restComments('&with=full'))).narrow);
    expect(all.comments).toHaveLength(7);
    expect(all.comments.every((c: any) => c.can_edit && c.can_delete)).toBe(true);
    const every = `commentId downloadId userId username commentDate message commentState lastEditDate editCount isVisible canView canEdit canDelete id __typename`;
    const queries: [string, boolean][] = [
      [
        `{ comments(downloadId: ${downloadId}) { nodes { ${every} author { username } } pagination { total } } }`,
        false,
      ],
      [
        `{ comments(downloadId: ${downloadId}) { nodes { ${every} download { title description tagLine downloadId } } } }`,
        true,
      ],
      [`{ comments { nodes { commentId canEdit download { title } } } }`, true],
      [`{ comments { nodes { commentId canEdit canDelete } } }`, false],
    ];
    for (const [query, selectsDownload] of queries) {
      for (const key of [SUPER_KEY, userKey]) {
        if (key !== SUPER_KEY && !query.includes('downloadId:')) continue; // only super-user keys list every download's comments
        const { narrow, wide, whole } = await commentsBothWays(gql(query, key));
        expect(narrow).toBe(wide);
        expect(JSON.parse(narrow).errors, narrow).toBeUndefined();
        expect(whole, query).toEqual([selectsDownload]);
      }
    }
  });
});
