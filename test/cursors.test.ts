// Cursors are sealed (contract §9): decoding one reveals no stored text, not even of rows the visitor may not see;
// one altered byte, a cut, or a cursor sealed with another secret answers 400 invalid_input naming the argument;
// instances sharing a database without CURSOR_SECRET agree on a generated secret (also when they start together),
// and the embedded database keeps its generated secret across a restart.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, freshPostgres, startTestApp, type TestApp } from './helpers/app.js';

const SECRET_A = 'cursor secret of instance A, 32 characters or more';
const SECRET_B = 'cursor secret of instance B, 32 characters or more';
const BY_TITLE = `query($a: String) { categoriesConnection(first: 50, after: $a, order: TITLE, direction: ASC) {
  edges { cursor node { title } } pageInfo { startCursor endCursor } } }`;

/** Every way a client might try to read a cursor: base64url and base64, as bytes. */
const readings = (cursor: string) => [
  Buffer.from(cursor, 'base64url').toString('latin1'),
  Buffer.from(cursor, 'base64').toString('latin1'),
  cursor,
];

async function makeCategories(t: TestApp) {
  const make = async (title: string) =>
    (await t.rest('POST', '/api/mc-dm-categories/', { form: { title } })).body.category.category_id as number;
  await make('Aardvark Public Notes');
  const hidden = await make('Zebra Secret Roadmap');
  await t.gqlOk(
    `mutation($c: Int!) { setCategoryPermission(input: { categoryId: $c, group: "guest", permission: "view", value: DENY }) { ok } }`,
    { c: hidden },
  );
}

/**
 * A query given `cursor`: its error codes and params. (GraphQL answers an executed operation 200 with the error in
 * the body, as the GraphQL-over-HTTP spec asks; invalid_input is the code whose status is 400, src/http/statuses.ts.)
 */
async function refused(t: TestApp, cursor: string, field: 'after' | 'before' = 'after') {
  const q =
    field === 'after'
      ? BY_TITLE
      : `query($a: String) { categoriesConnection(last: 5, before: $a, order: TITLE, direction: ASC) { edges { cursor } } }`;
  const r = await t.gql(q, { a: cursor });
  return { codes: r.codes, params: r.errors?.[0]?.extensions?.params, data: r.data };
}

forEachDatabase((kind) => {
  describe('sealed cursors', () => {
    let a: TestApp;
    let b: TestApp;
    let guestKey: string;
    beforeAll(async () => {
      a = await startTestApp(kind, { cursorSecret: SECRET_A });
      b = await startTestApp(kind, { cursorSecret: SECRET_B });
      await makeCategories(a);
      await makeCategories(b);
      guestKey = await a.key('GUEST', ['mc_dm_category:read']);
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
    });

    it('reveal no title, not even of a category the visitor may not see', async () => {
      const all = (await a.gqlOk(BY_TITLE)).categoriesConnection;
      expect(all.edges.map((e: any) => e.node.title)).toEqual(['Aardvark Public Notes', 'Zebra Secret Roadmap']);
      // The guest does not see the hidden category, yet the page's end cursor is its position.
      const guest = (await a.gqlOk(BY_TITLE, {}, guestKey)).categoriesConnection;
      expect(guest.edges.map((e: any) => e.node.title)).toEqual(['Aardvark Public Notes']);
      const cursors = [...all.edges.map((e: any) => e.cursor), guest.pageInfo.startCursor, guest.pageInfo.endCursor];
      for (const cursor of cursors) {
        expect(cursor).toMatch(/^[A-Za-z0-9_-]{40,200}$/);
        for (const text of readings(cursor)) {
          for (const leak of ['Aardvark', 'Zebra', 'Secret', 'Roadmap', 'categoriesConnection', 'title'])
            expect(text).not.toContain(leak);
        }
      }
      // Still a working cursor: paging on after the hidden row finds nothing more.
      expect((await a.gqlOk(BY_TITLE, { a: guest.pageInfo.endCursor }, guestKey)).categoriesConnection.edges).toEqual(
        [],
      );
      expect(
        (await a.gqlOk(BY_TITLE, { a: all.edges[0].cursor })).categoriesConnection.edges.map((e: any) => e.node.title),
      ).toEqual(['Zebra Secret Roadmap']);
    });

    it('one byte altered, or the cursor cut: 400 invalid_input naming the argument', async () => {
      const cursor = (await a.gqlOk(BY_TITLE)).categoriesConnection.pageInfo.startCursor as string;
      const raw = Buffer.from(cursor, 'base64url');
      const altered: string[] = [];
      for (const i of [0, 1, 7, 13, raw.length >> 1, raw.length - 17, raw.length - 1]) {
        const copy = Buffer.from(raw);
        copy[i] ^= 0x04;
        altered.push(copy.toString('base64url'));
      }
      for (const bad of [
        ...altered,
        cursor.slice(0, -1),
        cursor.slice(0, -2),
        `${cursor.slice(0, -1)}${cursor.endsWith('A') ? 'B' : 'A'}`,
      ]) {
        expect(await refused(a, bad), bad).toMatchObject({
          codes: ['invalid_input'],
          params: { field: 'after' },
          data: { categoriesConnection: null },
        });
      }
      expect(await refused(a, altered[3]!, 'before')).toMatchObject({
        codes: ['invalid_input'],
        params: { field: 'before' },
      });
      expect((await a.gqlOk(BY_TITLE, { a: cursor })).categoriesConnection.edges).toHaveLength(1);
    });

    it('a cursor of an instance with another CURSOR_SECRET: 400 invalid_input', async () => {
      const fromB = (await b.gqlOk(BY_TITLE)).categoriesConnection.pageInfo.startCursor as string;
      expect((await b.gqlOk(BY_TITLE, { a: fromB })).categoriesConnection.edges).toHaveLength(1);
      expect(await refused(a, fromB)).toMatchObject({ codes: ['invalid_input'], params: { field: 'after' } });
    });
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('instances on one PostgreSQL database without CURSOR_SECRET', () => {
  let fresh: Awaited<ReturnType<typeof freshPostgres>>;
  let apps: TestApp[] = [];
  beforeAll(async () => {
    fresh = await freshPostgres();
  });
  afterAll(async () => {
    for (const t of apps.reverse()) await t.close();
    await fresh?.drop();
  });

  it("started together, accept each other's cursors", async () => {
    // Both start on the fresh database at once: each generates a secret, one is kept, both read it back.
    apps = await Promise.all([
      startTestApp('postgres', { allowSplitStorage: true }, { url: fresh.url }),
      startTestApp('postgres', { allowSplitStorage: true }, { url: fresh.url }),
    ]);
    const [a, b] = apps as [TestApp, TestApp];
    await makeCategories(a);
    const fromA = (await a.gqlOk(BY_TITLE)).categoriesConnection.pageInfo.startCursor as string;
    const fromB = (await b.gqlOk(BY_TITLE)).categoriesConnection.pageInfo.startCursor as string;
    expect((await b.gqlOk(BY_TITLE, { a: fromA })).categoriesConnection.edges.map((e: any) => e.node.title)).toEqual([
      'Zebra Secret Roadmap',
    ]);
    expect((await a.gqlOk(BY_TITLE, { a: fromB })).categoriesConnection.edges.map((e: any) => e.node.title)).toEqual([
      'Zebra Secret Roadmap',
    ]);
    // A third, started later, too.
    const c = await startTestApp('postgres', { allowSplitStorage: true }, { url: fresh.url });
    apps.push(c);
    expect((await c.gqlOk(BY_TITLE, { a: fromA })).categoriesConnection.edges).toHaveLength(1);
  });
});

describe('the embedded database without CURSOR_SECRET', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-cursors-'));
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('keeps its generated secret across a restart: cursors issued before still work', async () => {
    const target = { pgliteDir: path.join(dataDir, 'db') };
    const first = await startTestApp('pglite', { dataDir }, target);
    let cursor: string;
    try {
      await makeCategories(first);
      cursor = (await first.gqlOk(BY_TITLE)).categoriesConnection.pageInfo.startCursor;
    } finally {
      await first.close();
    }
    const second = await startTestApp('pglite', { dataDir }, target);
    try {
      expect(
        (await second.gqlOk(BY_TITLE, { a: cursor })).categoriesConnection.edges.map((e: any) => e.node.title),
      ).toEqual(['Zebra Secret Roadmap']);
    } finally {
      await second.close();
    }
    // Another embedded database generates its own secret: the cursor means nothing there.
    const other = await startTestApp('pglite');
    try {
      await makeCategories(other);
      expect(await refused(other, cursor)).toMatchObject({ codes: ['invalid_input'], params: { field: 'after' } });
    } finally {
      await other.close();
    }
  });
});
