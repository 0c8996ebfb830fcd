// Relay cursor connections: the root connections beside the page-numbered lists, the nested ones, keyset paging
// that stays stable while rows arrive, backward paging, the same permission rules as the lists, bad cursors and
// arguments refused with invalid_input, and a fixed number of SQL statements whatever the page sizes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';
import { CursorSeal, decodeCursor, encodeCursor, windowOf, type KeysetSpec } from '../src/db/keyset.js';

const PAGE = `pageInfo { hasNextPage hasPreviousPage startCursor endCursor }`;

/** Every row of a connection, paging forward `size` at a time; also checks that `nodes` mirrors `edges`. */
async function pageAll(
  t: TestApp,
  field: string,
  args: string,
  select: string,
  size: number,
  key?: string,
  vars: Record<string, unknown> = {},
) {
  const ids: number[] = [];
  let after: string | null = null;
  let pages = 0;
  let total = -1;
  for (;;) {
    const q = `query($after: String) { c: ${field}(${args}${args ? ', ' : ''}first: ${size}, after: $after) {
      totalCount edges { cursor node { ${select} } } nodes { ${select} } ${PAGE} } }`;
    const data = await t.gqlOk(q, { ...vars, after }, key);
    const c = data.c;
    expect(c.nodes).toEqual(c.edges.map((e: any) => e.node));
    expect(c.pageInfo.hasPreviousPage).toBe(after !== null);
    // A page's cursors are its first and last rows read: rows the visitor may not see can stand at its ends.
    if (c.edges.length && key === undefined) {
      expect(c.pageInfo.startCursor).toBe(c.edges[0].cursor);
      expect(c.pageInfo.endCursor).toBe(c.edges.at(-1).cursor);
    }
    total = c.totalCount;
    ids.push(...c.edges.map((e: any) => Object.values(e.node)[0] as number));
    pages++;
    if (!c.pageInfo.hasNextPage) break;
    after = c.pageInfo.endCursor;
    if (pages > 100) throw new Error('no end');
  }
  return { ids, pages, total };
}

/** Every row paging backward from the end with last/before. */
async function pageAllBackward(t: TestApp, field: string, args: string, select: string, size: number, key?: string) {
  const ids: number[] = [];
  let before: string | null = null;
  for (let pages = 0; ; pages++) {
    const data = await t.gqlOk(
      `query($before: String) { c: ${field}(${args}${args ? ', ' : ''}last: ${size}, before: $before) {
      edges { node { ${select} } } ${PAGE} } }`,
      { before },
      key,
    );
    const c = data.c;
    expect(c.pageInfo.hasNextPage).toBe(before !== null);
    ids.unshift(...c.edges.map((e: any) => Object.values(e.node)[0] as number));
    if (!c.pageInfo.hasPreviousPage) break;
    before = c.pageInfo.startCursor;
    if (pages > 100) throw new Error('no start');
  }
  return ids;
}

describe('keyset cursors (unit)', () => {
  const spec: KeysetSpec = {
    list: 'downloadsConnection',
    order: 'last_update',
    direction: 'desc',
    column: { name: 'lastUpdate', kind: 'date' },
  };
  const seal = new CursorSeal('unit-test cursor secret, thirty-two characters or more');

  it('round-trip a position and are bound to their list, order and direction', () => {
    const cursor = encodeCursor(seal, spec, { id: 7, lastUpdate: new Date('2026-01-02T03:04:05.678Z') });
    expect(decodeCursor(seal, spec, cursor, 'after')).toEqual({ value: new Date('2026-01-02T03:04:05.678Z'), id: 7 });
    for (const other of [
      { ...spec, list: 'Category.downloads' },
      { ...spec, order: 'created_date' },
      { ...spec, direction: 'asc' as const },
    ]) {
      expect(() => decodeCursor(seal, other, cursor, 'after')).toThrow(/another (list|order)/);
    }
  });

  it('are sealed: nothing of the row can be read from them, and only the same secret opens them', () => {
    const titles: KeysetSpec = { ...spec, order: 'title', column: { name: 'title', kind: 'string' } };
    const title = 'Hidden Launch Plans';
    const cursor = encodeCursor(seal, titles, { id: 4242, title });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    for (const text of [
      Buffer.from(cursor, 'base64url').toString('latin1'),
      Buffer.from(cursor, 'base64').toString('latin1'),
    ]) {
      for (const leak of [title, 'Hidden', 'title', 'downloadsConnection', '4242']) expect(text).not.toContain(leak);
    }
    expect(cursor.length).toBeLessThan(160);
    // A random IV: the same position seals differently each time, and both open.
    const again = encodeCursor(seal, titles, { id: 4242, title });
    expect(again).not.toBe(cursor);
    expect(decodeCursor(seal, titles, again, 'after')).toEqual({ value: title, id: 4242 });
    const foreign = new CursorSeal('another deployment, another secret of 32+ characters');
    expect(() => decodeCursor(foreign, titles, cursor, 'after')).toThrow(/not a cursor issued by this service/);
    // Every single byte altered, and every cut, is refused.
    const raw = Buffer.from(cursor, 'base64url');
    for (let i = 0; i < raw.length; i++) {
      const flipped = Buffer.from(raw);
      flipped[i] ^= 0x01;
      expect(() => decodeCursor(seal, titles, flipped.toString('base64url'), 'after'), `byte ${i}`).toThrow(
        /not a cursor issued by this service/,
      );
    }
    for (const cut of [cursor.slice(0, -1), cursor.slice(0, -4), cursor.slice(1), cursor.slice(0, 40), `${cursor}A`]) {
      expect(() => decodeCursor(seal, titles, cut, 'after')).toThrow(/not a cursor issued by this service/);
    }
  });

  it('refuse sealed cursors whose values the column cannot hold', () => {
    const made = (payload: unknown) => seal.seal(Buffer.from(JSON.stringify(payload)));
    const base = [spec.list, spec.order, spec.direction];
    expect(decodeCursor(seal, spec, made([...base, '2026-01-01T00:00:00.000Z', 3]), 'after')).toEqual({
      value: new Date('2026-01-01T00:00:00.000Z'),
      id: 3,
    });
    for (const bad of [
      [...base, '+275760-09-13T00:00:00.000Z', 3],
      [...base, '2026-02-30T00:00:00.000Z', 3],
      [...base, null, 3],
      [...base, '2026-01-01T00:00:00.000Z', 0],
      [...base, '2026-01-01T00:00:00.000Z', 2 ** 31],
      [...base, 5, 1],
      [1, 2],
      { l: spec.list },
    ])
      expect(() => decodeCursor(seal, spec, made(bad), 'after'), JSON.stringify(bad)).toThrow(
        /not a cursor issued by this service/,
      );
    expect(() => decodeCursor(seal, spec, seal.seal(Buffer.from('not json')), 'after')).toThrow(
      /not a cursor issued by this service/,
    );
    const ints: KeysetSpec = { ...spec, order: 'download_count', column: { name: 'downloadCount', kind: 'int' } };
    expect(() =>
      decodeCursor(seal, ints, made([spec.list, 'download_count', spec.direction, 2 ** 40, 1]), 'after'),
    ).toThrow(/not a cursor/);
    const sizes: KeysetSpec = { ...spec, order: 'file_size', column: { name: 'fileSize', kind: 'bigint' } };
    expect(
      decodeCursor(seal, sizes, made([spec.list, 'file_size', spec.direction, '5000000000', 1]), 'after').value,
    ).toBe(5_000_000_000n);
    expect(() =>
      decodeCursor(seal, sizes, made([spec.list, 'file_size', spec.direction, '9999999999999999999', 1]), 'after'),
    ).toThrow(/not a cursor/);
    const titles: KeysetSpec = { ...spec, order: 'title', column: { name: 'title', kind: 'string' } };
    expect(() =>
      decodeCursor(seal, titles, made([spec.list, 'title', spec.direction, 'a\u0000b', 1]), 'after'),
    ).toThrow(/not a cursor/);
  });

  it('clamp page sizes to 100 and refuse 0, negatives and mixed directions', () => {
    expect(windowOf(seal, spec, { first: 1000 }).size).toBe(100);
    expect(windowOf(seal, spec, {}).size).toBe(20);
    expect(windowOf(seal, spec, { last: 5 })).toMatchObject({ size: 5, backward: true, cursor: null });
    expect(() => windowOf(seal, spec, { first: 0 })).toThrow(/first must be a whole number from 1 to 100/);
    expect(() => windowOf(seal, spec, { last: -1 })).toThrow(/last must be/);
    expect(() => windowOf(seal, spec, { first: 1, last: 1 })).toThrow(/not both/);
  });
});

forEachDatabase((kind) => {
  let t: TestApp;
  let owner: { userId: number; key: string };
  let member: { userId: number; key: string };
  let reader: { userId: number; key: string };
  let helper: { userId: number; key: string };
  let guestKey: string;
  let cat: number;
  let hidden: number;
  let downloadIds: number[];
  let dl: number;
  let version: number;

  const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute));

  beforeAll(async () => {
    t = await startTestApp(kind, { commentFloodSeconds: 0 });
    owner = await t.user(`conn_owner_${kind}`);
    member = await t.user(`conn_member_${kind}`);
    reader = await t.user(`conn_reader_${kind}`);
    helper = await t.user(`conn_helper_${kind}`);
    guestKey = await t.key('GUEST', ['all']);
    cat = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Connections' } })).body.category
      .category_id;
    hidden = (
      await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Hidden from guests', parent_category_id: cat } })
    ).body.category.category_id;
    await t.gqlOk(`mutation($i: SetCategoryPermissionInput!) { setCategoryPermission(input: $i) { ok } }`, {
      i: { categoryId: hidden, group: 'guest', permission: 'view', value: 'DENY' },
    });
    for (let i = 0; i < 4; i++)
      await t.rest('POST', '/api/mc-dm-categories/', {
        form: { title: `Child ${i}`, parent_category_id: cat, display_order: i % 2 },
      });
    // 30 downloads: lastUpdate ties in pairs, titles tie in threes, so the id tiebreaker matters; 4 moderated.
    const rows = await t.prisma.download.createManyAndReturn({
      data: Array.from({ length: 30 }, (_, i) => ({
        categoryId: i % 5 === 0 ? hidden : cat,
        userId: owner.userId,
        title: `T${String(Math.floor(i / 3)).padStart(2, '0')}`,
        lastUpdate: at(Math.floor(i / 2)),
        createdDate: at(i),
        downloadCount: i % 4,
        state: i % 7 === 3 ? ('moderated' as const) : ('visible' as const),
      })),
    });
    downloadIds = rows.map((r) => r.id);
    dl = downloadIds[1]!;
    const v = await t.prisma.version.create({ data: { downloadId: dl, versionString: '1.0', releaseDate: at(0) } });
    version = v.id;
    await t.prisma.version.createMany({
      data: [1, 2, 3].map((i) => ({ downloadId: dl, versionString: `1.${i}`, releaseDate: at(i) })),
    });
    await t.prisma.download.update({ where: { id: dl }, data: { currentVersionId: v.id } });
    await t.prisma.file.createMany({
      data: Array.from({ length: 7 }, (_, i) => ({
        // The failed file comes first in the default order (DISPLAY_ORDER, DESC).
        versionId: v.id,
        filename: `f${i}.zip`,
        fileSize: BigInt(i % 3) * 5_000_000_000n,
        displayOrder: i === 6 ? 5 : i % 2,
        validationStatus: i === 6 ? ('failed' as const) : ('passed' as const),
        isDeleted: i === 5,
      })),
    });
    await t.prisma.comment.createManyAndReturn({
      data: Array.from({ length: 12 }, (_, i) => ({
        downloadId: dl,
        userId: i % 2 ? reader.userId : owner.userId,
        message: `c${i}`,
        commentDate: at(Math.floor(i / 2)),
        lastEditDate: i % 3 === 0 ? null : at(100 + (i % 4)),
        state: i === 11 ? ('moderated' as const) : ('visible' as const),
      })),
    });
    await t.gqlOk(`mutation($d: Int!, $u: Int!) { addTeamMember(input: { downloadId: $d, userId: $u }) { ok } }`, {
      d: dl,
      u: member.userId,
    });
    await t.gqlOk(`mutation($d: Int!, $u: Int!) { addTeamMember(input: { downloadId: $d, userId: $u }) { ok } }`, {
      d: dl,
      u: helper.userId,
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** The ids of `rows` sorted by `key` then id, in `dir`; nulls smallest. */
  const sorted = <R extends { id: number }>(rows: R[], key: (r: R) => number | string | null, dir: 'asc' | 'desc') => {
    const s = [...rows].sort((a, b) => {
      const ka = key(a);
      const kb = key(b);
      const c = ka === kb ? a.id - b.id : ka === null ? -1 : kb === null ? 1 : ka < kb ? -1 : 1;
      return dir === 'asc' ? c : -c;
    });
    return s.map((r) => r.id);
  };

  describe('root connections', () => {
    it('downloadsConnection pages through every row once, in the order and with the filters of downloads', async () => {
      const all = await t.prisma.download.findMany({ where: { categoryId: { in: [cat, hidden] } } });
      for (const [order, dir, key] of [
        ['LAST_UPDATE', 'desc', (d: any) => d.lastUpdate.getTime()],
        ['TITLE', 'asc', (d: any) => d.title],
        ['DOWNLOAD_COUNT', 'desc', (d: any) => d.downloadCount],
        ['CREATED_DATE', 'asc', (d: any) => d.createdDate.getTime()],
      ] as const) {
        const got = await pageAll(
          t,
          'downloadsConnection',
          `order: ${order}, direction: ${dir.toUpperCase()}`,
          'downloadId',
          7,
        );
        expect(got.ids, order).toEqual(sorted(all, key, dir));
        expect(got.total).toBe(30);
        expect(got.pages).toBe(5);
        const back = await pageAllBackward(
          t,
          'downloadsConnection',
          `order: ${order}, direction: ${dir.toUpperCase()}`,
          'downloadId',
          4,
        );
        expect(back, `${order} backward`).toEqual(got.ids);
      }
      // The same rows as the page-numbered sibling, filters included.
      const list = await t.gqlOk(
        `query($c: Int!) { downloads(categoryId: $c, perPage: 100) { nodes { downloadId } pagination { total } } }`,
        { c: cat },
        reader.key,
      );
      const conn = await pageAll(t, 'downloadsConnection', `categoryId: ${cat}`, 'downloadId', 100, reader.key);
      expect(conn.ids).toEqual(list.downloads.nodes.map((n: any) => n.downloadId));
      expect(conn.total).toBe(list.downloads.pagination.total);
      expect(conn.ids.length).toBe(all.filter((d) => d.categoryId === cat && d.state === 'visible').length);
    });

    it('relations selected under edges.node and under nodes are both loaded with the rows', async () => {
      const r = await t.gqlOk(
        `{ downloadsConnection(categoryId: ${cat}, first: 3) {
        edges { node { downloadId owner { username } } } nodes { downloadId category { title } } } }`,
        {},
        reader.key,
      );
      const c = r.downloadsConnection;
      expect(c.edges.map((e: any) => e.node.downloadId)).toEqual(c.nodes.map((n: any) => n.downloadId));
      for (const e of c.edges) expect(e.node.owner.username).toBe(`conn_owner_${kind}`);
      for (const n of c.nodes) expect(n.category.title).toBe('Connections');
    });

    it('pages stay stable while rows arrive before and after the page boundary', async () => {
      const first = await t.gqlOk(
        `{ downloadsConnection(categoryId: ${cat}, order: TITLE, direction: ASC, first: 5) { edges { node { downloadId title } } ${PAGE} } }`,
      );
      const seen = first.downloadsConnection.edges.map((e: any) => e.node.downloadId);
      const boundary = first.downloadsConnection.edges.at(-1).node.title;
      const original = sorted(await t.prisma.download.findMany({ where: { categoryId: cat } }), (d) => d.title, 'asc');
      // New rows sorting before the cursor (would shift an offset page) and after it, one tying with the boundary.
      const inserted = await t.prisma.download.createManyAndReturn({
        data: ['A0', 'A1', 'A2', boundary, 'ZZ'].map((title) => ({ categoryId: cat, userId: owner.userId, title })),
      });
      try {
        const rest = await pageAll(
          t,
          'downloadsConnection',
          `categoryId: ${cat}, order: TITLE, direction: ASC`,
          'downloadId',
          5,
          undefined,
          {},
        );
        // pageAll starts from the beginning; continue from the first page's end cursor instead:
        const next = await t.gqlOk(
          `query($a: String) { downloadsConnection(categoryId: ${cat}, order: TITLE, direction: ASC, first: 100, after: $a) { edges { node { downloadId } } } }`,
          { a: first.downloadsConnection.pageInfo.endCursor },
        );
        const after = next.downloadsConnection.edges.map((e: any) => e.node.downloadId);
        expect(after.filter((id: number) => seen.includes(id))).toEqual([]);
        const newIds = inserted.map((d) => d.id);
        // Every original row exactly once across the two fetches, in the original order.
        expect([...seen, ...after.filter((id: number) => !newIds.includes(id))]).toEqual(original);
        // The rows inserted after the boundary appear; those before it do not.
        expect(after).toContain(inserted.at(-1)!.id);
        expect(after).toContain(inserted[3]!.id); // ties with the boundary title, and its id is larger
        for (const d of inserted.slice(0, 3)) expect(after).not.toContain(d.id);
        expect(rest.total).toBe(original.length + inserted.length);
      } finally {
        await t.prisma.download.deleteMany({ where: { id: { in: inserted.map((d) => d.id) } } });
      }
    });

    it('totalCount counts rows before the permission check; hidden rows are dropped and paging goes on past them', async () => {
      const asGuest = await pageAll(t, 'downloadsConnection', '', 'downloadId categoryId', 4, guestKey);
      const visible = await t.prisma.download.findMany({ where: { state: 'visible' } });
      expect(asGuest.total).toBe(visible.length);
      expect(asGuest.ids).toEqual(
        sorted(
          visible.filter((d) => d.categoryId !== hidden),
          (d) => d.lastUpdate.getTime(),
          'desc',
        ),
      );
      const page = await t.gqlOk(`{ downloadsConnection(first: 5) { edges { node { downloadId } } } }`, {}, guestKey);
      expect(page.downloadsConnection.edges.length).toBeLessThan(5); // a row of the hidden category fell on page 1
    });

    it('categoriesConnection, commentsConnection (nulls of LAST_EDIT_DATE) and filesConnection (bigint sizes)', async () => {
      const cats = await t.prisma.category.findMany();
      const got = await pageAll(t, 'categoriesConnection', 'order: DISPLAY_ORDER, direction: ASC', 'categoryId', 2);
      expect(got.ids).toEqual(sorted(cats, (c) => c.displayOrder, 'asc'));
      const asGuest = await pageAll(t, 'categoriesConnection', 'order: TITLE', 'categoryId', 3, guestKey);
      expect(asGuest.total).toBe(cats.length);
      expect(asGuest.ids).toEqual(
        sorted(
          cats.filter((c) => c.id !== hidden),
          (c) => c.title,
          'desc',
        ),
      );

      const comments = await t.prisma.comment.findMany({ where: { downloadId: dl } });
      for (const dir of ['asc', 'desc'] as const) {
        const c = await pageAll(
          t,
          'commentsConnection',
          `downloadId: ${dl}, order: LAST_EDIT_DATE, direction: ${dir.toUpperCase()}`,
          'commentId',
          3,
        );
        expect(c.ids, dir).toEqual(sorted(comments, (x) => x.lastEditDate?.getTime() ?? null, dir));
        expect(
          await pageAllBackward(
            t,
            'commentsConnection',
            `downloadId: ${dl}, order: LAST_EDIT_DATE, direction: ${dir.toUpperCase()}`,
            'commentId',
            2,
          ),
        ).toEqual(c.ids);
      }
      const asReader = await pageAll(t, 'commentsConnection', `downloadId: ${dl}`, 'commentId', 5, reader.key);
      expect(asReader.ids).toEqual(
        sorted(
          comments.filter((c) => c.state === 'visible'),
          (x) => x.commentDate.getTime(),
          'desc',
        ),
      );
      expect(asReader.total).toBe(11);

      const files = await t.prisma.file.findMany({ where: { versionId: version, isDeleted: false } });
      const f = await pageAll(
        t,
        'filesConnection',
        `versionId: ${version}, order: FILE_SIZE, direction: ASC`,
        'fileId',
        2,
      );
      expect(f.ids).toEqual(sorted(files, (x) => Number(x.fileSize), 'asc'));
      // The failed file is counted but shown only to those who manage the download's files.
      const fr = await pageAll(t, 'filesConnection', `versionId: ${version}`, 'fileId', 10, reader.key);
      expect(fr.total).toBe(6);
      expect(fr.ids).toEqual(
        sorted(
          files.filter((x) => x.validationStatus !== 'failed'),
          (x) => x.displayOrder,
          'desc',
        ),
      );
      const fm = await pageAll(t, 'filesConnection', `versionId: ${version}`, 'fileId', 10, member.key);
      expect(fm.ids).toHaveLength(6);
    });

    it('the list rules of the siblings apply: required filters, hidden comments, scopes', async () => {
      const noVersion = await t.gql(`{ filesConnection { totalCount } }`, {}, reader.key);
      expect(noVersion.codes).toEqual(['required_input_missing']);
      expect(noVersion.data).toEqual({ filesConnection: null });
      const noDownload = await t.gql(`{ commentsConnection { totalCount } }`, {}, reader.key);
      expect(noDownload.codes).toEqual(['required_input_missing']);
      const hiddenDl = downloadIds[0]!; // in the category guests may not view
      const r = await t.gql(
        `{ commentsConnection(downloadId: ${hiddenDl}) { totalCount } downloadsConnection(first: 1) { totalCount } }`,
        {},
        guestKey,
      );
      expect(r.codes).toEqual(['do_not_have_permission']);
      expect(r.data.commentsConnection).toBeNull();
      expect(r.data.downloadsConnection.totalCount).toBeGreaterThan(0);
      const catOnly = await t.key('GUEST', ['mc_dm_category:read']);
      const s = await t.gql(
        `{ categoriesConnection(first: 1) { totalCount } downloadsConnection { totalCount } }`,
        {},
        catOnly,
      );
      expect(s.codes).toEqual(['api_scope_missing']);
      expect(s.data.downloadsConnection).toBeNull();
      expect(s.data.categoriesConnection.totalCount).toBeGreaterThan(0);
    });
  });

  describe('nested connections', () => {
    it('Category.children and Category.downloads page like the root lists, per parent', async () => {
      const children = await t.prisma.category.findMany({ where: { parentId: cat } });
      const collect = async (key?: string) => {
        const ids: number[] = [];
        let after: string | null = null;
        for (;;) {
          const d = await t.gqlOk(
            `query($a: String) { category(categoryId: ${cat}) { children(first: 2, after: $a, order: TITLE, direction: ASC) { totalCount edges { cursor node { categoryId } } ${PAGE} } } }`,
            { a: after },
            key,
          );
          const c = d.category.children;
          expect(c.totalCount).toBe(children.length);
          ids.push(...c.edges.map((e: any) => e.node.categoryId));
          if (!c.pageInfo.hasNextPage) return ids;
          after = c.pageInfo.endCursor;
        }
      };
      expect(await collect()).toEqual(sorted(children, (c) => c.title, 'asc'));
      expect(await collect(guestKey)).toEqual(
        sorted(
          children.filter((c) => c.id !== hidden),
          (c) => c.title,
          'asc',
        ),
      );

      const q = `query($a: String) { category(categoryId: ${cat}) { downloads(first: 4, after: $a, order: TITLE, direction: ASC) { totalCount edges { node { downloadId } } ${PAGE} } } }`;
      const ids: number[] = [];
      let after: string | null = null;
      for (;;) {
        const d = await t.gqlOk(q, { a: after }, reader.key);
        ids.push(...d.category.downloads.edges.map((e: any) => e.node.downloadId));
        if (!d.category.downloads.pageInfo.hasNextPage) break;
        after = d.category.downloads.pageInfo.endCursor;
      }
      const visibleHere = await t.prisma.download.findMany({ where: { categoryId: cat, state: 'visible' } });
      expect(ids).toEqual(sorted(visibleHere, (d) => d.title, 'asc'));
      const all = await t.gqlOk(`{ category(categoryId: ${cat}) { downloads(first: 100) { totalCount } } }`);
      expect(all.category.downloads.totalCount).toBe(await t.prisma.download.count({ where: { categoryId: cat } }));
    });

    it('Download.comments, Download.team, Download.versionsConnection and Version.files', async () => {
      const d = await t.gqlOk(
        `query($d: Int!) { download(downloadId: $d) {
        comments(first: 4) { totalCount edges { node { commentId author { username } canView } } ${PAGE} }
        team { totalCount edges { addedAt node { userId username } } }
        versionsConnection(first: 2) { totalCount nodes { versionString } ${PAGE} }
        currentVersion { files(first: 3, order: FILE_SIZE, direction: DESC) { totalCount nodes { fileId } ${PAGE} } }
      } }`,
        { d: dl },
        reader.key,
      );
      const comments = await t.prisma.comment.findMany({
        where: { downloadId: dl, state: 'visible' },
        include: { user: true },
      });
      const expected = sorted(comments, (c) => c.commentDate.getTime(), 'desc').slice(0, 4);
      expect(d.download.comments.edges.map((e: any) => e.node.commentId)).toEqual(expected);
      expect(d.download.comments.edges[0].node.author.username).toBe(
        comments.find((c) => c.id === expected[0])!.user.username,
      );
      expect(d.download.comments.edges.every((e: any) => e.node.canView)).toBe(true);
      expect(d.download.comments).toMatchObject({
        totalCount: 11,
        pageInfo: { hasNextPage: true, hasPreviousPage: false },
      });
      expect(d.download.team.totalCount).toBe(2);
      expect(d.download.team.edges.map((e: any) => e.node.userId)).toEqual([member.userId, helper.userId]);
      expect(typeof d.download.team.edges[0].addedAt).toBe('number');
      expect(d.download.versionsConnection).toMatchObject({
        totalCount: 4,
        nodes: [{ versionString: '1.3' }, { versionString: '1.2' }],
        pageInfo: { hasNextPage: true },
      });
      const files = await t.prisma.file.findMany({
        where: { versionId: version, isDeleted: false, validationStatus: { not: 'failed' } },
      });
      expect(d.download.currentVersion.files.nodes.map((n: any) => n.fileId)).toEqual(
        sorted(files, (f) => Number(f.fileSize), 'desc').slice(0, 3),
      );
      expect(d.download.currentVersion.files.totalCount).toBe(6);

      // Files by size (bigint cursors) page on through the nested cursor.
      const rest = await t.gqlOk(
        `query($a: String) {
        v: node(id: "${Buffer.from(`Version:${version}`).toString('base64url')}") { ... on Version { files(first: 10, after: $a, order: FILE_SIZE, direction: DESC) { nodes { fileId } pageInfo { hasNextPage hasPreviousPage } } } } }`,
        { a: d.download.currentVersion.files.pageInfo.endCursor },
        reader.key,
      );
      expect(rest.v.files.nodes.map((n: any) => n.fileId)).toEqual(
        sorted(files, (f) => Number(f.fileSize), 'desc').slice(3),
      );
      expect(rest.v.files.pageInfo).toEqual({ hasNextPage: false, hasPreviousPage: true });

      // The next page of comments through the nested cursor, then backward again.
      const next = await t.gqlOk(
        `query($d: Int!, $a: String) { download(downloadId: $d) { comments(first: 100, after: $a) { edges { node { commentId } } ${PAGE} } } }`,
        { d: dl, a: d.download.comments.pageInfo.endCursor },
        reader.key,
      );
      expect(next.download.comments.edges.map((e: any) => e.node.commentId)).toEqual(
        sorted(comments, (c) => c.commentDate.getTime(), 'desc').slice(4),
      );
      const back = await t.gqlOk(
        `query($d: Int!, $b: String) { download(downloadId: $d) { comments(last: 2, before: $b) { edges { node { commentId } } ${PAGE} } } }`,
        { d: dl, b: next.download.comments.pageInfo.startCursor },
        reader.key,
      );
      expect(back.download.comments.edges.map((e: any) => e.node.commentId)).toEqual(expected.slice(2));
      expect(back.download.comments.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
    });

    it('a nested list the visitor may not see nulls alone, with its error', async () => {
      await t.gqlOk(`mutation($i: SetCategoryPermissionInput!) { setCategoryPermission(input: $i) { ok } }`, {
        i: { categoryId: cat, group: 'registered', permission: 'viewComments', value: 'DENY' },
      });
      try {
        const r = await t.gql(
          `query($d: Int!) { download(downloadId: $d) { title comments { totalCount } team { totalCount } } }`,
          { d: dl },
          reader.key,
        );
        expect(r.codes).toEqual(['do_not_have_permission']);
        expect(r.errors![0].path).toEqual(['download', 'comments']);
        expect(r.data.download).toEqual({ title: expect.any(String), comments: null, team: { totalCount: 2 } });
      } finally {
        await t.gqlOk(`mutation($i: SetCategoryPermissionInput!) { setCategoryPermission(input: $i) { ok } }`, {
          i: { categoryId: cat, group: 'registered', permission: 'viewComments', value: 'INHERIT' },
        });
      }
      const catOnly = await t.key('GUEST', ['mc_dm_category:read']);
      const s = await t.gql(
        `{ category(categoryId: ${cat}) { title children { totalCount } downloads { totalCount } } }`,
        {},
        catOnly,
      );
      expect(s.codes).toEqual(['api_scope_missing']);
      expect(s.data.category).toEqual({ title: 'Connections', children: { totalCount: 5 }, downloads: null });
    });
  });

  describe('bad input', () => {
    const cursorOf = async (q: string) => {
      const d = await t.gqlOk(q);
      return Object.values(d)[0] as any;
    };

    it('cursors of another list, order or direction, tampered or garbage: 400 invalid_input naming the argument', async () => {
      const dls = await cursorOf(`{ downloadsConnection(first: 2) { pageInfo { endCursor } } }`);
      const byTitle = await cursorOf(`{ downloadsConnection(first: 2, order: TITLE) { pageInfo { endCursor } } }`);
      const asc = await cursorOf(`{ downloadsConnection(first: 2, direction: ASC) { pageInfo { endCursor } } }`);
      const cats = await cursorOf(`{ categoriesConnection(first: 2) { pageInfo { endCursor } } }`);
      const good = dls.pageInfo.endCursor as string;
      // A cursor made by hand the way the unsealed ones of earlier versions were: a readable position, checksummed.
      const forged = Buffer.from(
        JSON.stringify({ l: 'downloadsConnection', o: 'last_update', d: 'desc', v: '2026-01-01T00:00:00.000Z', i: 1 }),
      ).toString('base64url');
      const raw = Buffer.from(good, 'base64url');
      raw[raw.length >> 1] ^= 0x20;
      const cases: [string, string, RegExp][] = [
        [`downloadsConnection(after: "${cats.pageInfo.endCursor}")`, 'after', /another list/],
        [`downloadsConnection(after: "${byTitle.pageInfo.endCursor}")`, 'after', /another order/],
        [`downloadsConnection(after: "${asc.pageInfo.endCursor}")`, 'after', /another order/],
        [
          `downloadsConnection(last: 2, before: "${good.slice(0, -1)}${good.endsWith('A') ? 'B' : 'A'}")`,
          'before',
          /altered/,
        ],
        [`downloadsConnection(after: "${forged}")`, 'after', /not a cursor/],
        [`downloadsConnection(after: "${forged}.${'A'.repeat(12)}")`, 'after', /not a cursor/],
        [`downloadsConnection(after: "${raw.toString('base64url')}")`, 'after', /altered/],
        [`downloadsConnection(after: "${good.slice(0, -3)}")`, 'after', /altered/],
        [`downloadsConnection(after: "bm90IGEgY3Vyc29y")`, 'after', /not a cursor/],
        [`downloadsConnection(after: "%%%")`, 'after', /not a cursor/],
        [`downloadsConnection(after: "")`, 'after', /not a cursor/],
        [`downloadsConnection(first: 2, last: 2)`, 'last', /not both/],
        [`downloadsConnection(first: 2, before: "${good}")`, 'before', /not both/],
        [`downloadsConnection(first: 0)`, 'first', /first must be a whole number from 1 to 100/],
        [`downloadsConnection(first: -1)`, 'first', /first must be/],
        [`downloadsConnection(last: 0)`, 'last', /last must be/],
        [`categoriesConnection(after: "${good}")`, 'after', /another list/],
        [`download(downloadId: ${dl}) { comments(after: "${good}") { totalCount } }`, 'after', /another list/],
      ];
      const before = await t.prisma.download.count();
      for (const [field, arg, message] of cases) {
        const q = field.includes('{') ? `{ ${field} }` : `{ ${field} { totalCount } }`;
        const r = await t.gql(q);
        expect(r.codes, field).toEqual(['invalid_input']);
        expect(r.errors![0].extensions.params, field).toEqual({ field: arg });
        expect(r.errors![0].message, field).toMatch(message);
        const fieldName = Object.keys(r.data ?? {})[0];
        if (fieldName) expect(r.data[fieldName] === null || r.data[fieldName].comments === null, field).toBe(true);
      }
      expect(await t.prisma.download.count()).toBe(before);
    });

    it('first over 100 is clamped like perPage; a cursor of the nested list works only there', async () => {
      const r = await t.gqlOk(
        `{ downloadsConnection(first: 5000) { totalCount edges { cursor } pageInfo { hasNextPage } } }`,
      );
      expect(r.downloadsConnection.edges).toHaveLength(Math.min(100, r.downloadsConnection.totalCount));
      const nested = await t.gqlOk(`{ download(downloadId: ${dl}) { comments(first: 1) { pageInfo { endCursor } } } }`);
      const cursor = nested.download.comments.pageInfo.endCursor;
      const root = await t.gql(`{ commentsConnection(downloadId: ${dl}, after: "${cursor}") { totalCount } }`);
      expect(root.codes).toEqual(['invalid_input']);
      const ok = await t.gqlOk(
        `query($c: String) { download(downloadId: ${dl}) { comments(first: 2, after: $c) { edges { node { commentId } } } } }`,
        { c: cursor },
      );
      expect(ok.download.comments.edges).toHaveLength(2);
    });
  });

  describe('SQL statements', () => {
    const statements = async (query: string, vars: Record<string, unknown>, key: string) => {
      await t.gqlOk(query, vars, key); // warm the per-process caches (key, permission tables)
      // The fewest of three runs: the outbox dispatcher's round after the setup's writes may fall in one.
      let n = Number.POSITIVE_INFINITY;
      let data: any;
      for (let i = 0; i < 3; i++) {
        t.app.readCache.clear(); // what computing the answer costs, not what giving it again costs
        const before = t.app.db.statements();
        data = await t.gqlOk(query, vars, key);
        n = Math.min(n, t.app.db.statements() - before);
      }
      return { n, data };
    };

    it('a download page (category, owner, current version with files, first comments with authors) costs the same whatever the page sizes', async () => {
      const q = `query($d: Int!, $files: Int!, $comments: Int!) { download(downloadId: $d) {
        title category { title } owner { username }
        currentVersion { versionString files(first: $files) { totalCount edges { node { filename } } } }
        comments(first: $comments) { totalCount edges { cursor node { message author { username } } } pageInfo { endCursor } }
      } }`;
      // As the owner: the failed file (first in the order) is shown, after the one lookup of the visitor's teams.
      const small = await statements(q, { d: dl, files: 1, comments: 1 }, owner.key);
      const large = await statements(q, { d: dl, files: 50, comments: 10 }, owner.key);
      expect(small.data.download.comments.edges).toHaveLength(1);
      expect(large.data.download.comments.edges).toHaveLength(10);
      expect(large.data.download.currentVersion.files.edges).toHaveLength(6);
      expect(small.data.download.currentVersion.files.edges[0].node.filename).toBe('f6.zip');
      expect(large.n).toBe(small.n);
      expect(large.n).toBeLessThanOrEqual(8);
    });

    it('nested connections over 2 or 20 parents with 5 or 50 rows each cost the same', async () => {
      const many = await t.prisma.download.findMany({ where: { categoryId: cat }, select: { id: true } });
      await t.prisma.comment.createMany({
        data: many.flatMap((d) =>
          Array.from({ length: 6 }, (_, i) => ({
            downloadId: d.id,
            userId: i % 2 ? reader.userId : owner.userId,
            message: `bulk ${i}`,
          })),
        ),
      });
      const q = `query($parents: Int!, $rows: Int!) { downloadsConnection(categoryId: ${cat}, first: $parents) { edges { node {
        downloadId category { title children(first: $rows) { totalCount } }
        comments(first: $rows) { totalCount edges { node { message author { username } } } }
        team(first: $rows) { nodes { username } }
        versionsConnection(first: $rows) { nodes { versionString files(first: $rows) { totalCount } } }
      } } } }`;
      const counts: number[] = [];
      for (const [parents, rows] of [
        [2, 5],
        [20, 5],
        [2, 50],
        [20, 50],
      ]) {
        const { n, data } = await statements(q, { parents, rows }, owner.key);
        expect(data.downloadsConnection.edges).toHaveLength(parents);
        expect(data.downloadsConnection.edges[1].node.comments.edges.length).toBe(Math.min(rows, 6));
        counts.push(n);
      }
      expect(new Set(counts).size, JSON.stringify(counts)).toBe(1);
    });
  });
});
