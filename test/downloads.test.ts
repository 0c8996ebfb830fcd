// Downloads end to end through REST and GraphQL, on every database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';
import { purgeExpiredDownloads } from '../src/jobs/purge.js';
import { todayVersionString } from '../src/modules/downloads/rules.js';

const FIELDS = [
  'download_id',
  'category_id',
  'user_id',
  'title',
  'tag_line',
  'description',
  'view_url',
  'icon_url',
  'cover_url',
  'rating_avg',
  'rating_count',
  'review_count',
  'download_count',
  'view_count',
  'last_update',
  'created_date',
  'download_state',
  'prefix_id',
  'current_version_id',
];
const FULL = [
  ...FIELDS,
  'can_view',
  'can_edit',
  'can_delete',
  'can_download',
  'is_visible',
  'is_password_protected',
  'tags',
  'Category',
  'CurrentVersion',
];

forEachDatabase((kind) => {
  let t: TestApp;
  let owner: { userId: number; key: string };
  let other: { userId: number; key: string };
  let mod: { userId: number; key: string };
  let cat: number;
  beforeAll(async () => {
    t = await startTestApp(kind);
    owner = await t.user('owner');
    other = await t.user('other');
    mod = await t.user('mod', { isModerator: true });
    cat = await category('Main');
  });
  afterAll(async () => {
    await t?.close();
  });

  async function category(title: string, knobs: Record<string, any> = {}, parent = 0): Promise<number> {
    const r = await t.rest('POST', '/api/mc-dm-categories/', { form: { title, parent_category_id: parent } });
    const id = r.body.category.category_id;
    if (Object.keys(knobs).length) await t.rest('PUT', `/api/mc-dm-categories/${id}/`, { form: knobs });
    return id;
  }
  const create = async (form: Record<string, any>, key = owner.key) => {
    const r = await t.rest('POST', '/api/mc-dm-downloads/', { key, form: { category_id: cat, ...form } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.download;
  };

  describe('create', () => {
    it('makes a visible download with its first version and tags', async () => {
      const r = await t.rest('POST', '/api/mc-dm-downloads/', {
        key: owner.key,
        query: { with: 'full' },
        form: {
          category_id: cat,
          title: ' First ',
          tag_line: 'Short',
          description: '[b]Bold[/b]',
          tags: ['Maps', ' maps ', 'Big  Map'],
          version_string: '1.2.3',
        },
      });
      expect(r.status).toBe(200);
      const d = r.body.download;
      expect(Object.keys(d)).toEqual(FULL);
      expect(d).toMatchObject({
        category_id: cat,
        user_id: owner.userId,
        title: 'First',
        tag_line: 'Short',
        description: '[b]Bold[/b]',
        download_state: 'visible',
        prefix_id: 0,
        cover_url: null,
        can_view: true,
        can_edit: true,
        can_delete: true,
        can_download: true,
        is_visible: true,
        is_password_protected: false,
      });
      expect(d.current_version_id).toBeGreaterThan(0);
      expect(d.view_url).toBe(`${t.url}/downloads/${d.download_id}/`);
      expect(d.CurrentVersion).toMatchObject({
        version_id: d.current_version_id,
        download_id: d.download_id,
        version_string: '1.2.3',
        download_count: 0,
        version_state: 'visible',
      });
      expect(Object.keys(d.CurrentVersion)).toEqual([
        'version_id',
        'download_id',
        'version_string',
        'release_date',
        'download_count',
        'version_state',
      ]);
      expect(d.Category).toMatchObject({ category_id: cat, title: 'Main' });
      expect(Object.keys(d.Category)).toHaveLength(9);
      expect(Math.abs(d.created_date - Date.now() / 1000)).toBeLessThan(60);
      const g = await t.gqlOk(`{ download(downloadId: ${d.download_id}) { tags } }`);
      expect(g.download.tags).toEqual(['big map', 'maps']);
      expect((await t.prisma.category.findUniqueOrThrow({ where: { id: cat } })).downloadCount).toBeGreaterThan(0);
    });

    it("defaults version_string to today's UTC date on a versioning category, and stores '' elsewhere", async () => {
      const d = await create({ title: 'Dated' });
      const v = await t.prisma.version.findUniqueOrThrow({ where: { id: d.current_version_id } });
      expect(v.versionString).toBe(todayVersionString());
      const flat = await category('Flat', { enable_versioning: 0 });
      const d2 = await create({ title: 'Unversioned', category_id: flat, version_string: '9.9' });
      expect((await t.prisma.version.findUniqueOrThrow({ where: { id: d2.current_version_id } })).versionString).toBe(
        '',
      );
    });

    it('is moderated when the category requires approval, unless the visitor bypasses it', async () => {
      const strict = await category('Strict', { require_approval: 1 });
      expect((await create({ title: 'Needs approval', category_id: strict })).download_state).toBe('moderated');
      expect((await create({ title: 'Moderator post', category_id: strict }, mod.key)).download_state).toBe('visible');
      expect((await t.prisma.category.findUniqueOrThrow({ where: { id: strict } })).downloadCount).toBe(1);
    });

    it('accepts a prefix assigned to the category and refuses others', async () => {
      const p = (await t.gqlOk(`mutation { createPrefix(input: { title: "Beta" }) { prefix { prefixId } } }`))
        .createPrefix.prefix.prefixId;
      const before = await t.prisma.download.count();
      const refused = await t.rest('POST', '/api/mc-dm-downloads/', {
        key: owner.key,
        form: { category_id: cat, title: 'x', prefix_id: p },
      });
      expect(refused.status).toBe(422);
      expect(refused.body.errors[0]).toMatchObject({
        code: 'mc_dm_api_error.prefix_not_allowed',
        params: { prefix_id: p, category_id: cat },
      });
      const unknown = await t.rest('POST', '/api/mc-dm-downloads/', {
        key: owner.key,
        form: { category_id: cat, title: 'x', prefix_id: 9999 },
      });
      expect(unknown.status).toBe(404);
      expect(unknown.body.errors[0].code).toBe('mc_dm_api_error.prefix_not_found');
      expect(await t.prisma.download.count()).toBe(before);
      await t.gqlOk(`mutation { assignPrefix(input: { prefixId: ${p}, categoryId: ${cat} }) { ok } }`);
      expect((await create({ title: 'Prefixed', prefix_id: p })).prefix_id).toBe(p);
    });

    it('refuses bad input, unknown categories and missing permission, creating nothing', async () => {
      const before = await t.prisma.download.count();
      const cases: [Record<string, any>, number, string, any][] = [
        [{}, 400, 'required_input_missing', { missing: ['category_id', 'title'] }],
        [{ category_id: 'abc', title: 'x' }, 400, 'invalid_input', { field: 'category_id' }],
        [{ category_id: 99999, title: 'x' }, 404, 'mc_dm_api_error.category_not_found', {}],
        [{ category_id: cat, title: '  ' }, 400, 'required_input_missing', { missing: ['title'] }],
        [{ category_id: cat, title: 'x'.repeat(101) }, 400, 'invalid_input', { field: 'title' }],
        [{ category_id: cat, title: 'x', tags: ['y'.repeat(51)] }, 400, 'invalid_input', { field: 'tags' }],
      ];
      for (const [form, status, code, params] of cases) {
        const r = await t.rest('POST', '/api/mc-dm-downloads/', { key: owner.key, form });
        expect(r.status, JSON.stringify(form)).toBe(status);
        expect(r.body.errors[0]).toMatchObject({ code, params });
      }
      const closed = await category('Closed');
      await t.gqlOk(
        `mutation { setCategoryPermission(input: { categoryId: ${closed}, group: "registered", permission: "add", value: DENY }) { ok } }`,
      );
      const denied = await t.rest('POST', '/api/mc-dm-downloads/', {
        key: owner.key,
        form: { category_id: closed, title: 'x' },
      });
      expect(denied.status).toBe(403);
      expect(denied.body.errors[0].code).toBe('do_not_have_permission');
      const asGuest = await t.rest('POST', '/api/mc-dm-downloads/', { form: { category_id: cat, title: 'x' } });
      expect(asGuest.status).toBe(403);
      const readOnly = await t.key('USER', ['mc_dm_download:read'], owner.userId);
      const scoped = await t.rest('POST', '/api/mc-dm-downloads/', {
        key: readOnly,
        form: { category_id: cat, title: 'x' },
      });
      expect(scoped.body.errors[0]).toMatchObject({
        code: 'api_scope_missing',
        params: { scope: 'mc_dm_download:write' },
      });
      expect(await t.prisma.download.count()).toBe(before);
    });
  });

  describe('get and visibility', () => {
    it('answers {download}; CurrentVersion is left out when no version is set', async () => {
      const d = await create({ title: 'Plain' });
      const plain = await t.rest('GET', `/api/mc-dm-downloads/${d.download_id}/`);
      expect(Object.keys(plain.body.download)).toEqual(FIELDS);
      await t.prisma.download.update({ where: { id: d.download_id }, data: { currentVersionId: null } });
      const full = await t.rest('GET', `/api/mc-dm-downloads/${d.download_id}`, { query: { with: 'full' } });
      expect(Object.keys(full.body.download)).toEqual(FULL.filter((k) => k !== 'CurrentVersion'));
      expect(full.body.download.current_version_id).toBe(0);
    });

    it('404 for unknown ids, 403 for downloads hidden from the visitor', async () => {
      expect((await t.rest('GET', '/api/mc-dm-downloads/99999/')).body.errors[0].code).toBe(
        'mc_dm_api_error.download_not_found',
      );
      expect((await t.rest('GET', '/api/mc-dm-downloads/x1/')).status).toBe(400);
      const strict = await category('Strict get', { require_approval: 1 });
      const d = await create({ title: 'Waiting', category_id: strict });
      expect((await t.rest('GET', `/api/mc-dm-downloads/${d.download_id}/`, { key: owner.key })).status).toBe(200);
      const hidden = await t.rest('GET', `/api/mc-dm-downloads/${d.download_id}/`, { key: other.key });
      expect(hidden.status).toBe(403);
      expect(hidden.body.errors[0].code).toBe('do_not_have_permission');
      expect((await t.rest('GET', `/api/mc-dm-downloads/${d.download_id}/`, { key: mod.key })).status).toBe(200);
      const full = await t.rest('GET', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: other.key,
        query: { with: 'full' },
      });
      expect(full.status).toBe(403);
    });

    it('with=full reports the visitor permissions', async () => {
      const d = await create({ title: 'Perms' });
      const asOther = (
        await t.rest('GET', `/api/mc-dm-downloads/${d.download_id}/`, { key: other.key, query: { with: 'full' } })
      ).body.download;
      expect(asOther).toMatchObject({ can_view: true, can_edit: false, can_delete: false, can_download: true });
      const asMod = (
        await t.rest('GET', `/api/mc-dm-downloads/${d.download_id}/`, { key: mod.key, query: { with: 'full' } })
      ).body.download;
      expect(asMod).toMatchObject({ can_edit: true, can_delete: true });
    });
  });

  describe('list', () => {
    let listCat: number;
    let ids: number[];
    beforeAll(async () => {
      listCat = await category('Listed');
      ids = [];
      for (const [i, title] of ['Charlie', 'Alpha', 'Bravo', 'Delta'].entries()) {
        const d = await create({ title, category_id: listCat });
        await t.prisma.download.update({
          where: { id: d.download_id },
          data: {
            lastUpdate: new Date(Date.UTC(2026, 0, 1 + i)),
            createdDate: new Date(Date.UTC(2025, 0, 10 - i)),
            downloadCount: [5, 50, 500, 0][i],
            viewCount: [3, 1, 2, 4][i],
          },
        });
        ids.push(d.download_id);
      }
    });
    const titles = (r: any) => r.body.downloads.map((d: any) => d.title);
    const list = (query: Record<string, any>, key?: string) =>
      t.rest('GET', '/api/mc-dm-downloads/', { key, query: { category_id: listCat, ...query } });

    it('defaults to last_update desc and orders by every whitelisted field', async () => {
      expect(titles(await list({}))).toEqual(['Delta', 'Bravo', 'Alpha', 'Charlie']);
      expect(titles(await list({ order: 'created_date', direction: 'asc' }))).toEqual([
        'Delta',
        'Bravo',
        'Alpha',
        'Charlie',
      ]);
      expect(titles(await list({ order: 'download_count' }))).toEqual(['Bravo', 'Alpha', 'Charlie', 'Delta']);
      expect(titles(await list({ order: 'view_count', direction: 'asc' }))).toEqual([
        'Alpha',
        'Bravo',
        'Charlie',
        'Delta',
      ]);
      expect(titles(await list({ order: 'title', direction: 'asc' }))).toEqual(['Alpha', 'Bravo', 'Charlie', 'Delta']);
      const r = await list({ per_page: 3, page: 2 });
      expect(titles(r)).toEqual(['Charlie']);
      expect(r.body.pagination).toEqual({ page: 2, per_page: 3, total: 4, last_page: 2 });
    });

    it('filters by since (ISO 8601 on last_update) and prefix', async () => {
      expect(titles(await list({ since: '2026-01-03T00:00:00Z' }))).toEqual(['Delta', 'Bravo']);
      expect(titles(await list({ since: '2026-01-02' }))).toEqual(['Delta', 'Bravo', 'Alpha']);
      expect(titles(await list({ prefix_id: 0 }))).toHaveLength(4);
    });

    it('forces download_state=visible for non-moderators, honours it for moderators', async () => {
      await t.prisma.download.update({ where: { id: ids[0] }, data: { state: 'moderated' } });
      expect(titles(await list({ download_state: 'moderated' }, other.key))).toEqual(['Delta', 'Bravo', 'Alpha']);
      expect(titles(await list({ download_state: 'moderated' }, mod.key))).toEqual(['Charlie']);
      expect(titles(await list({}, mod.key))).toEqual(['Delta', 'Bravo', 'Alpha', 'Charlie']);
      await t.prisma.download.update({ where: { id: ids[0] }, data: { state: 'visible' } });
    });

    it('counts total before the permission filter and drops hidden rows after paging', async () => {
      const sub = await category('Hidden sub', {}, listCat);
      await create({ title: 'Zulu', category_id: sub });
      await t.gqlOk(
        `mutation { setCategoryPermission(input: { categoryId: ${sub}, group: "registered", permission: "view", value: DENY }) { ok } }`,
      );
      const r = await t.rest('GET', '/api/mc-dm-downloads/', {
        key: other.key,
        query: { order: 'title', direction: 'desc', per_page: 2 },
      });
      const all = await t.prisma.download.count({ where: { state: 'visible' } });
      expect(r.body.pagination.total).toBe(all);
      expect(titles(r)).not.toContain('Zulu');
      expect(r.body.downloads.length).toBeLessThan(2);
    });

    it('refuses malformed filters with 400 invalid_input', async () => {
      for (const [query, field] of [
        [{ since: 'yesterday' }, 'since'],
        [{ since: '2026-13-45' }, 'since'],
        [{ since: '2026-02-30' }, 'since'],
        [{ since: '2026-11-22T25:00:00Z' }, 'since'],
        [{ download_state: 'gone' }, 'download_state'],
        [{ order: 'rating' }, 'order'],
        [{ category_id: '-1' }, 'category_id'],
        [{ prefix_id: 'x' }, 'prefix_id'],
      ] as const) {
        const r = await t.rest('GET', '/api/mc-dm-downloads/', { query: query as any });
        expect(r.status, JSON.stringify(query)).toBe(400);
        expect(r.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field } });
      }
    });

    it('a list of 100 downloads with with=full runs the same number of SQL statements as a list of 5', async () => {
      const big = await category('Big');
      const rows = await t.prisma.download.createManyAndReturn({
        data: Array.from({ length: 100 }, (_, i) => ({ categoryId: big, userId: owner.userId, title: `Bulk ${i}` })),
      });
      for (const d of rows) {
        const v = await t.prisma.version.create({ data: { downloadId: d.id, versionString: '1' } });
        await t.prisma.download.update({ where: { id: d.id }, data: { currentVersionId: v.id } });
      }
      const count = async (perPage: number) => {
        t.app.readCache.clear(); // what computing the answer costs, not what giving it again costs
        const before = t.app.db.statements();
        const r = await t.rest('GET', '/api/mc-dm-downloads/', {
          key: owner.key,
          query: { category_id: big, per_page: perPage, with: 'full' },
        });
        expect(r.body.downloads).toHaveLength(perPage);
        expect(r.body.downloads[0].CurrentVersion.version_string).toBe('1');
        return t.app.db.statements() - before;
      };
      await count(5); // warm the per-process caches (key, permission tables)
      // The fewest of three runs: a background job's statement (view flush, outbox) may fall in one.
      const fewest = async (perPage: number) =>
        Math.min(await count(perPage), await count(perPage), await count(perPage));
      const small = await fewest(5);
      const large = await fewest(100);
      expect(large).toBe(small);
      expect(small).toBeLessThanOrEqual(8);
    });
  });

  describe('update', () => {
    it('changes only the sent fields; empty strings clear; no keys changes nothing', async () => {
      const d = await create({ title: 'Editable', tag_line: 'Tag', description: 'Desc', tags: ['a'] });
      await t.prisma.download.update({
        where: { id: d.download_id },
        data: { lastUpdate: new Date(Date.UTC(2020, 0, 1)) },
      });
      const same = await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, { key: owner.key });
      expect(same.status).toBe(200);
      expect(same.body.download.last_update).toBe(Date.UTC(2020, 0, 1) / 1000);
      const r = await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: owner.key,
        form: { tag_line: '', title: 'Edited', tags: ['b', 'c'] },
      });
      expect(r.body.download).toMatchObject({ title: 'Edited', tag_line: '', description: 'Desc' });
      expect(r.body.download.last_update).toBeGreaterThan(Date.UTC(2020, 0, 1) / 1000);
      expect((await t.gqlOk(`{ download(downloadId: ${d.download_id}) { tags } }`)).download.tags).toEqual(['b', 'c']);
    });

    it('prefix_id=0 clears the prefix', async () => {
      const p = (await t.gqlOk(`mutation { createPrefix(input: { title: "Old" }) { prefix { prefixId } } }`))
        .createPrefix.prefix.prefixId;
      await t.gqlOk(`mutation { assignPrefix(input: { prefixId: ${p}, categoryId: ${cat} }) { ok } }`);
      const d = await create({ title: 'Has prefix', prefix_id: p });
      const r = await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: owner.key,
        form: { prefix_id: 0 },
      });
      expect(r.body.download.prefix_id).toBe(0);
    });

    it('only editors may edit; moving needs moveAny and keeps category counts right', async () => {
      const d = await create({ title: 'Movable' });
      const target = await category('Target');
      const denied = await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: other.key,
        form: { title: 'Mine now' },
      });
      expect(denied.status).toBe(403);
      const noMove = await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: owner.key,
        form: { category_id: target },
      });
      expect(noMove.status).toBe(403);
      expect((await t.prisma.download.findUniqueOrThrow({ where: { id: d.download_id } })).categoryId).toBe(cat);
      const missing = await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: mod.key,
        form: { category_id: 99999 },
      });
      expect(missing.status).toBe(404);
      const before = (await t.prisma.category.findUniqueOrThrow({ where: { id: cat } })).downloadCount;
      const moved = await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: mod.key,
        form: { category_id: target },
      });
      expect(moved.body.download.category_id).toBe(target);
      expect((await t.prisma.category.findUniqueOrThrow({ where: { id: cat } })).downloadCount).toBe(before - 1);
      expect((await t.prisma.category.findUniqueOrThrow({ where: { id: target } })).downloadCount).toBe(1);
    });

    it('refuses an empty title and changes nothing', async () => {
      const d = await create({ title: 'Keep title' });
      const r = await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: owner.key,
        form: { title: '', tag_line: 'new' },
      });
      expect(r.status).toBe(400);
      expect(r.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'title' } });
      expect((await t.prisma.download.findUniqueOrThrow({ where: { id: d.download_id } })).tagLine).toBe('');
    });

    it('concurrent updates of different fields lose none of them', async () => {
      const d = await create({ title: 'Racy' });
      const fields = ['title', 'tag_line', 'description'] as const;
      await Promise.all(
        fields.map((f) =>
          t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, { key: owner.key, form: { [f]: `new ${f}` } }),
        ),
      );
      expect(await t.prisma.download.findUniqueOrThrow({ where: { id: d.download_id } })).toMatchObject({
        title: 'new title',
        tagLine: 'new tag_line',
        description: 'new description',
      });
    });
  });

  describe('delete and restore', () => {
    it('soft delete keeps the row, remembers the state and audits the reason', async () => {
      const d = await create({ title: 'Soft' });
      const r = await t.rest('DELETE', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: owner.key,
        query: { reason: 'Outdated' },
      });
      expect(r.body).toEqual({ success: true });
      const row = await t.prisma.download.findUniqueOrThrow({ where: { id: d.download_id } });
      expect(row).toMatchObject({ state: 'deleted', stateBeforeDelete: 'visible' });
      expect(row.deletedAt).not.toBeNull();
      expect(
        await t.prisma.auditLog.findFirst({ where: { contentId: d.download_id, action: 'download.soft_deleted' } }),
      ).toMatchObject({ reason: 'Outdated', userId: owner.userId });
      expect((await t.rest('GET', `/api/mc-dm-downloads/${d.download_id}/`, { key: owner.key })).status).toBe(403);
      expect(
        (await t.rest('GET', `/api/mc-dm-downloads/${d.download_id}/`, { key: mod.key })).body.download.download_state,
      ).toBe('deleted');

      const restore = `mutation($i: RestoreDownloadInput!) { restoreDownload(input: $i) { download { downloadState } } }`;
      expect((await t.gql(restore, { i: { downloadId: d.download_id } }, owner.key)).codes).toEqual([
        'do_not_have_permission',
      ]);
      expect(
        (await t.gqlOk(restore, { i: { downloadId: d.download_id } }, mod.key)).restoreDownload.download.downloadState,
      ).toBe('VISIBLE');
      expect((await t.gql(restore, { i: { downloadId: d.download_id } }, mod.key)).codes).toEqual([
        'mc_dm_api_error.download_not_deleted',
      ]);
    });

    it('hard delete needs the scope and hardDeleteAny, then removes everything and audits', async () => {
      const d = await create({ title: 'Hard', tags: ['x'] });
      await t.prisma.comment.create({ data: { downloadId: d.download_id, userId: other.userId, message: 'hi' } });
      const noScope = await t.rest('DELETE', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: await t.key('SUPER', ['mc_dm_download:write']),
        query: { hard: 1 },
      });
      expect(noScope.status).toBe(403);
      expect(noScope.body.errors[0]).toMatchObject({
        code: 'api_scope_missing',
        params: { scope: 'mc_dm_download:delete_hard' },
      });
      const ownerHard = await t.rest('DELETE', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: owner.key,
        query: { hard: 1 },
      });
      expect(ownerHard.status).toBe(403);
      expect(await t.prisma.download.count({ where: { id: d.download_id } })).toBe(1);
      const r = await t.rest('DELETE', `/api/mc-dm-downloads/${d.download_id}/`, {
        key: mod.key,
        form: { hard: 1, reason: 'Spam' },
      });
      expect(r.body).toEqual({ success: true });
      expect(await t.prisma.download.count({ where: { id: d.download_id } })).toBe(0);
      expect(await t.prisma.version.count({ where: { downloadId: d.download_id } })).toBe(0);
      expect(await t.prisma.comment.count({ where: { downloadId: d.download_id } })).toBe(0);
      expect(await t.prisma.downloadTag.count({ where: { downloadId: d.download_id } })).toBe(0);
      expect(
        await t.prisma.auditLog.findFirst({ where: { contentId: d.download_id, action: 'download.hard_deleted' } }),
      ).toMatchObject({ reason: 'Spam', userId: mod.userId });
      expect((await t.rest('DELETE', `/api/mc-dm-downloads/${d.download_id}/`, { key: mod.key })).status).toBe(404);
    });

    it('others may not delete', async () => {
      const d = await create({ title: 'Not yours' });
      expect((await t.rest('DELETE', `/api/mc-dm-downloads/${d.download_id}/`, { key: other.key })).status).toBe(403);
      expect((await t.prisma.download.findUniqueOrThrow({ where: { id: d.download_id } })).state).toBe('visible');
    });

    it('the purge job removes soft-deleted downloads after the retention window, audited as download.purged', async () => {
      const d = await create({ title: 'Old trash' });
      const fresh = await create({ title: 'New trash' });
      await t.rest('DELETE', `/api/mc-dm-downloads/${d.download_id}/`, { key: owner.key });
      await t.rest('DELETE', `/api/mc-dm-downloads/${fresh.download_id}/`, { key: owner.key });
      await t.prisma.download.update({
        where: { id: d.download_id },
        data: { deletedAt: new Date(Date.now() - 31 * 86_400_000) },
      });
      const purged = await purgeExpiredDownloads(t.prisma, t.app.services.storage, 30);
      expect(purged).toContain(d.download_id);
      expect(purged).not.toContain(fresh.download_id);
      expect(await t.prisma.download.count({ where: { id: d.download_id } })).toBe(0);
      expect(await t.prisma.auditLog.count({ where: { contentId: d.download_id, action: 'download.purged' } })).toBe(1);
      const later = await purgeExpiredDownloads(
        t.prisma,
        t.app.services.storage,
        30,
        new Date(Date.now() + 31 * 86_400_000),
      );
      expect(later).toContain(fresh.download_id);
    });
  });

  describe('versions and team', () => {
    it('createVersion makes a new current version', async () => {
      const d = await create({ title: 'Versioned', version_string: '1.0' });
      const r = await t.gqlOk(
        `mutation { createVersion(input: { downloadId: ${d.download_id}, versionString: "2.0" }) { version { versionId versionString versionState } download { currentVersionId currentVersion { versionString } versions { versionString } } } }`,
        {},
        owner.key,
      );
      expect(r.createVersion.version).toMatchObject({ versionString: '2.0', versionState: 'VISIBLE' });
      expect(r.createVersion.download.currentVersionId).toBe(r.createVersion.version.versionId);
      expect(r.createVersion.download.versions.map((v: any) => v.versionString)).toEqual(['2.0', '1.0']);
      expect(
        (
          await t.gql(
            `mutation { createVersion(input: { downloadId: ${d.download_id} }) { version { versionId } } }`,
            {},
            other.key,
          )
        ).codes,
      ).toEqual(['do_not_have_permission']);
      const flat = await category('Flat 2', { enable_versioning: 0 });
      const d2 = await create({ title: 'Flat', category_id: flat });
      expect(
        (
          await t.gql(
            `mutation { createVersion(input: { downloadId: ${d2.download_id} }) { version { versionId } } }`,
            {},
            owner.key,
          )
        ).codes,
      ).toEqual(['mc_dm_api_error.versioning_disabled']);
    });

    it('team members get edit rights; the team is capped by max_team_members', async () => {
      const small = await category('Small team', { max_team_members: 1 });
      const d = await create({ title: 'Team work', category_id: small });
      const add = (userId: number, key = owner.key) =>
        t.gql(`mutation { addTeamMember(input: { downloadId: ${d.download_id}, userId: ${userId} }) { ok } }`, {}, key);
      expect((await add(other.userId, other.key)).codes).toEqual(['do_not_have_permission']);
      expect((await add(other.userId)).data.addTeamMember).toEqual({ ok: true });
      expect(
        (
          await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, {
            key: other.key,
            form: { tag_line: 'team edit' },
          })
        ).status,
      ).toBe(200);
      expect((await add(mod.userId)).codes).toEqual(['mc_dm_api_error.too_many_team_members']);
      expect((await add(99999)).codes).toEqual(['mc_dm_api_error.user_not_found']);
      expect((await add(owner.userId)).codes).toEqual(['invalid_input']);
      await t.gqlOk(
        `mutation { removeTeamMember(input: { downloadId: ${d.download_id}, userId: ${other.userId} }) { ok } }`,
        {},
        owner.key,
      );
      expect(
        (
          await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, {
            key: other.key,
            form: { tag_line: 'no more' },
          })
        ).status,
      ).toBe(403);
    });
  });

  describe('GraphQL face', () => {
    it('lists, creates, updates and deletes with the same rules and codes', async () => {
      const created = await t.gqlOk(
        `mutation($i: CreateDownloadInput!) { createDownload(input: $i) { download { downloadId title downloadState tags category { title } currentVersion { versionString } } } }`,
        { i: { categoryId: cat, title: 'Via GraphQL', tags: ['Q'], versionString: '0.1' } },
        owner.key,
      );
      const d = created.createDownload.download;
      expect(d).toMatchObject({
        title: 'Via GraphQL',
        downloadState: 'VISIBLE',
        tags: ['q'],
        category: { title: 'Main' },
        currentVersion: { versionString: '0.1' },
      });
      const list = await t.gqlOk(
        `{ downloads(categoryId: ${cat}, order: TITLE, direction: ASC, perPage: 2) { nodes { title } pagination { perPage total } } }`,
        {},
        other.key,
      );
      expect(list.downloads.pagination.perPage).toBe(2);
      expect((await t.gql(`{ downloads(since: "soon") { nodes { title } } }`)).codes).toEqual(['invalid_input']);
      const upd = await t.gqlOk(
        `mutation { updateDownload(input: { downloadId: ${d.downloadId}, description: "new" }) { download { description title } } }`,
        {},
        owner.key,
      );
      expect(upd.updateDownload.download).toEqual({ description: 'new', title: 'Via GraphQL' });
      expect(
        (
          await t.gql(
            `mutation { updateDownload(input: { downloadId: ${d.downloadId}, title: "x" }) { download { title } } }`,
            {},
            other.key,
          )
        ).codes,
      ).toEqual(['do_not_have_permission']);
      expect(
        (
          await t.gql(
            `mutation { deleteDownload(input: { downloadId: ${d.downloadId}, hard: true }) { success } }`,
            {},
            owner.key,
          )
        ).codes,
      ).toEqual(['do_not_have_permission']);
      expect(
        (
          await t.gqlOk(
            `mutation { deleteDownload(input: { downloadId: ${d.downloadId}, hard: true, reason: "gql" }) { success } }`,
            {},
            mod.key,
          )
        ).deleteDownload,
      ).toEqual({ success: true });
      const node = Buffer.from(`Download:${d.downloadId}`).toString('base64url');
      const gone = await t.gql(`{ node(id: "${node}") { id } }`);
      expect([gone.codes, gone.data]).toEqual([[], { node: null }]);
    });
  });
});
