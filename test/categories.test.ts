// Categories end to end, through REST and GraphQL, on every database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';

const BASE_FIELDS = [
  'category_id',
  'parent_category_id',
  'title',
  'description',
  'display_order',
  'download_count',
  'fa_icon',
  'icon_color',
  'view_url',
];
const FULL_FIELDS = [
  ...BASE_FIELDS,
  'require_approval',
  'max_team_members',
  'max_files_per_version',
  'max_file_size',
  'max_version_size',
  'max_download_size',
  'allowed_file_types',
  'preview_text_enabled',
  'preview_image_enabled',
  'require_comment_approval',
  'enable_versioning',
  'allow_multi_file',
];

forEachDatabase((kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => {
    await t?.close();
  });

  const create = async (form: Record<string, any>) => {
    const r = await t.rest('POST', '/api/mc-dm-categories/', { form });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.category;
  };
  const clear = async () => {
    await t.prisma.categoryPermission.deleteMany();
    await t.prisma.download.deleteMany();
    await t.prisma.category.updateMany({ data: { parentId: null } });
    await t.prisma.category.deleteMany();
  };

  describe('create', () => {
    it('answers 200 with {category} in the spec field order, defaults filled in', async () => {
      const r = await t.rest('POST', '/api/mc-dm-categories/', {
        form: {
          title: '  Maps  ',
          description: 'All maps',
          display_order: 5,
          fa_icon: 'fa-map',
          icon_color: '#1E90FF',
        },
      });
      expect(r.status).toBe(200);
      expect(Object.keys(r.body)).toEqual(['category']);
      const c = r.body.category;
      expect(Object.keys(c)).toEqual(BASE_FIELDS);
      expect(c).toMatchObject({
        parent_category_id: 0,
        title: 'Maps',
        description: 'All maps',
        display_order: 5,
        download_count: 0,
        fa_icon: 'fa-map',
        icon_color: '#1E90FF',
      });
      expect(c.view_url).toBe(`${t.url}/downloads/categories/${c.category_id}/`);
    });

    it('ignores configuration knobs sent on create', async () => {
      const c = await create({
        title: 'Knobs',
        require_approval: 1,
        max_files_per_version: 1,
        allowed_file_types: 'exe',
        enable_versioning: 0,
      });
      const row = await t.prisma.category.findUniqueOrThrow({ where: { id: c.category_id } });
      expect(row).toMatchObject({
        requireApproval: false,
        maxFilesPerVersion: 10,
        allowedFileTypes: '',
        enableVersioning: true,
      });
    });

    it('accepts a JSON body and a path without the trailing slash', async () => {
      const r = await t.rest('POST', '/api/mc-dm-categories', { json: { title: 'Json', display_order: 2 } });
      expect(r.status).toBe(200);
      expect(r.body.category).toMatchObject({ title: 'Json', display_order: 2 });
    });

    it('nests under a parent', async () => {
      const parent = await create({ title: 'Parent' });
      const child = await create({ title: 'Child', parent_category_id: parent.category_id });
      expect(child.parent_category_id).toBe(parent.category_id);
    });

    it('refuses bad input with the contract codes and creates nothing', async () => {
      const before = await t.prisma.category.count();
      const cases: [Record<string, any>, number, string, any][] = [
        [{}, 400, 'required_input_missing', { missing: ['title'] }],
        [{ title: '   ' }, 400, 'required_input_missing', { missing: ['title'] }],
        [{ title: 'x', display_order: -1 }, 400, 'invalid_input', { field: 'display_order' }],
        [{ title: 'x', display_order: 'abc' }, 400, 'invalid_input', { field: 'display_order' }],
        [{ title: 'x', parent_category_id: 1.5 }, 400, 'invalid_input', { field: 'parent_category_id' }],
        [{ title: 'x', icon_color: 'red' }, 400, 'invalid_input', { field: 'icon_color' }],
        [{ title: 'x'.repeat(101) }, 400, 'invalid_input', { field: 'title' }],
        [
          { title: 'x', parent_category_id: 999999 },
          404,
          'mc_dm_api_error.category_not_found',
          { category_id: 999999 },
        ],
      ];
      for (const [form, status, code, params] of cases) {
        const r = await t.rest('POST', '/api/mc-dm-categories/', { form });
        expect(r.status, JSON.stringify(form)).toBe(status);
        expect(r.body.errors[0].code).toBe(code);
        expect(r.body.errors[0].params).toMatchObject(params);
        expect(typeof r.body.errors[0].message).toBe('string');
      }
      expect(await t.prisma.category.count()).toBe(before);
    });
  });

  describe('get', () => {
    it('answers {category}; with=full adds every knob; other with values are ignored', async () => {
      const c = await create({ title: 'Get me' });
      const plain = await t.rest('GET', `/api/mc-dm-categories/${c.category_id}/`);
      expect(plain.body).toEqual({ category: c });
      const full = await t.rest('GET', `/api/mc-dm-categories/${c.category_id}/`, { query: { with: 'full' } });
      expect(Object.keys(full.body.category)).toEqual(FULL_FIELDS);
      expect(full.body.category).toMatchObject({
        require_approval: false,
        max_team_members: 5,
        max_files_per_version: 10,
        max_file_size: 104857600,
        max_version_size: 1073741824,
        max_download_size: 10737418240,
        allowed_file_types: '',
        preview_text_enabled: false,
        preview_image_enabled: false,
        require_comment_approval: false,
        enable_versioning: true,
        allow_multi_file: true,
      });
      const other = await t.rest('GET', `/api/mc-dm-categories/${c.category_id}/`, { query: { with: 'everything' } });
      expect(other.body).toEqual({ category: c });
    });

    it('404 for an unknown id, 400 for a malformed one', async () => {
      const r = await t.rest('GET', '/api/mc-dm-categories/424242/');
      expect(r.status).toBe(404);
      expect(r.body.errors[0]).toMatchObject({
        code: 'mc_dm_api_error.category_not_found',
        params: { category_id: 424242 },
      });
      const bad = await t.rest('GET', '/api/mc-dm-categories/abc/');
      expect(bad.status).toBe(400);
      expect(bad.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'category_id' } });
    });
  });

  describe('list', () => {
    let ids: number[] = [];
    beforeAll(async () => {
      await clear();
      ids = [];
      // display orders 1..5, titles reversed, download counts scrambled
      const specs = [
        ['E', 1, 30],
        ['D', 2, 10],
        ['C', 3, 50],
        ['B', 4, 20],
        ['A', 5, 40],
      ] as const;
      for (const [title, order, count] of specs) {
        const c = await create({ title, display_order: order });
        await t.prisma.category.update({ where: { id: c.category_id }, data: { downloadCount: count } });
        ids.push(c.category_id);
      }
    });
    const titles = (r: any) => r.body.categories.map((c: any) => c.title);

    it('defaults to display_order desc, page 1, 20 per page', async () => {
      const r = await t.rest('GET', '/api/mc-dm-categories/');
      expect(titles(r)).toEqual(['A', 'B', 'C', 'D', 'E']);
      expect(r.body.pagination).toEqual({ page: 1, per_page: 20, total: 5, last_page: 1 });
      expect(Object.keys(r.body)).toEqual(['categories', 'pagination']);
    });

    it('orders by each whitelisted field in both directions', async () => {
      expect(
        titles(await t.rest('GET', '/api/mc-dm-categories/', { query: { order: 'display_order', direction: 'asc' } })),
      ).toEqual(['E', 'D', 'C', 'B', 'A']);
      expect(
        titles(await t.rest('GET', '/api/mc-dm-categories/', { query: { order: 'title', direction: 'asc' } })),
      ).toEqual(['A', 'B', 'C', 'D', 'E']);
      expect(titles(await t.rest('GET', '/api/mc-dm-categories/', { query: { order: 'title' } }))).toEqual([
        'E',
        'D',
        'C',
        'B',
        'A',
      ]);
      expect(
        titles(
          await t.rest('GET', '/api/mc-dm-categories/', { query: { order: 'download_count', direction: 'DESC' } }),
        ),
      ).toEqual(['C', 'A', 'E', 'B', 'D']);
    });

    it('pages with page and per_page; a page past the end is empty with true pagination', async () => {
      const p2 = await t.rest('GET', '/api/mc-dm-categories/', { query: { per_page: 2, page: 2 } });
      expect(titles(p2)).toEqual(['C', 'D']);
      expect(p2.body.pagination).toEqual({ page: 2, per_page: 2, total: 5, last_page: 3 });
      const past = await t.rest('GET', '/api/mc-dm-categories/', { query: { per_page: 2, page: 9 } });
      expect(past.body).toEqual({ categories: [], pagination: { page: 9, per_page: 2, total: 5, last_page: 3 } });
      const clamped = await t.rest('GET', '/api/mc-dm-categories/', { query: { per_page: 1000 } });
      expect(clamped.body.pagination.per_page).toBe(100);
    });

    it('with=full adds the verbose fields to every row', async () => {
      const r = await t.rest('GET', '/api/mc-dm-categories/', { query: { with: 'full', per_page: 1 } });
      expect(Object.keys(r.body.categories[0])).toEqual(FULL_FIELDS);
    });

    it('refuses malformed list parameters with 400 invalid_input naming the field', async () => {
      for (const [query, field] of [
        [{ order: 'created_date' }, 'order'],
        [{ direction: 'up' }, 'direction'],
        [{ per_page: 0 }, 'per_page'],
        [{ per_page: 'ten' }, 'per_page'],
        [{ page: 0 }, 'page'],
        [{ page: -1 }, 'page'],
      ] as const) {
        const r = await t.rest('GET', '/api/mc-dm-categories/', { query: query as any });
        expect(r.status, JSON.stringify(query)).toBe(400);
        expect(r.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field } });
      }
    });

    it('drops rows the visitor cannot view, after paging, with total counted before the filter', async () => {
      const viewer = await t.user(`lister_${kind}`, { scopes: ['mc_dm_category:read'] });
      await t.gqlOk(`mutation($i: SetCategoryPermissionInput!) { setCategoryPermission(input: $i) { ok } }`, {
        i: { categoryId: ids[2], group: 'registered', permission: 'view', value: 'DENY' },
      }); // hides C
      const r = await t.rest('GET', '/api/mc-dm-categories/', { key: viewer.key, query: { per_page: 3 } });
      expect(titles(r)).toEqual(['A', 'B']);
      expect(r.body.pagination).toEqual({ page: 1, per_page: 3, total: 5, last_page: 2 });
      const hidden = await t.rest('GET', `/api/mc-dm-categories/${ids[2]}/`, { key: viewer.key });
      expect(hidden.status).toBe(403);
      expect(hidden.body.errors[0].code).toBe('do_not_have_permission');
      // the super-user key still sees it
      expect(titles(await t.rest('GET', '/api/mc-dm-categories/', { query: { per_page: 3 } }))).toEqual([
        'A',
        'B',
        'C',
      ]);
      // a subcategory inherits the deny
      const child = await create({ title: 'Under C', parent_category_id: ids[2] });
      expect((await t.rest('GET', `/api/mc-dm-categories/${child.category_id}/`, { key: viewer.key })).status).toBe(
        403,
      );
    });
  });

  describe('update', () => {
    it('changes only the sent fields, and sets knobs', async () => {
      const c = await create({ title: 'Before', description: 'keep me', fa_icon: 'fa-a' });
      const r = await t.rest('PUT', `/api/mc-dm-categories/${c.category_id}/`, {
        form: {
          title: 'After',
          require_approval: 1,
          enable_versioning: 'false',
          allow_multi_file: 0,
          max_files_per_version: 3,
          allowed_file_types: 'ZIP, .rar ,7z',
          max_file_size: 2048,
        },
        query: { with: 'full' },
      });
      expect(r.status).toBe(200);
      expect(r.body.category).toMatchObject({
        title: 'After',
        description: 'keep me',
        fa_icon: 'fa-a',
        require_approval: true,
        enable_versioning: false,
        allow_multi_file: false,
        max_files_per_version: 3,
        allowed_file_types: 'zip,rar,7z',
        max_file_size: 2048,
      });
      const none = await t.rest('PUT', `/api/mc-dm-categories/${c.category_id}/`, { query: { with: 'full' } });
      expect(none.body.category).toEqual(r.body.category);
      const cleared = await t.rest('PUT', `/api/mc-dm-categories/${c.category_id}/`, { form: { description: '' } });
      expect(cleared.body.category.description).toBe('');
    });

    it('moves a category and refuses loops', async () => {
      const a = await create({ title: 'Loop A' });
      const b = await create({ title: 'Loop B', parent_category_id: a.category_id });
      const c = await create({ title: 'Loop C', parent_category_id: b.category_id });
      for (const target of [a.category_id, c.category_id]) {
        const r = await t.rest('PUT', `/api/mc-dm-categories/${a.category_id}/`, {
          form: { parent_category_id: target },
        });
        expect(r.status).toBe(400);
        expect(r.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'parent_category_id' } });
      }
      const moved = await t.rest('PUT', `/api/mc-dm-categories/${c.category_id}/`, { form: { parent_category_id: 0 } });
      expect(moved.body.category.parent_category_id).toBe(0);
    });

    it('refuses bad values, unknown ids and changes nothing', async () => {
      const c = await create({ title: 'Stable' });
      const before = await t.prisma.category.findUniqueOrThrow({ where: { id: c.category_id } });
      for (const [form, field] of [
        [{ title: 'New', require_approval: 'yes' }, 'require_approval'],
        [{ title: 'New', allowed_file_types: 'zip,../etc' }, 'allowed_file_types'],
        [{ title: 'New', max_file_size: -5 }, 'max_file_size'],
        [{ title: '' }, 'title'],
      ] as const) {
        const r = await t.rest('PUT', `/api/mc-dm-categories/${c.category_id}/`, { form: form as any });
        expect(r.status, JSON.stringify(form)).toBe(400);
        expect(r.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field } });
      }
      expect(await t.prisma.category.findUniqueOrThrow({ where: { id: c.category_id } })).toEqual(before);
      const missing = await t.rest('PUT', '/api/mc-dm-categories/777777/', { form: { title: 'x' } });
      expect(missing.status).toBe(404);
      expect(missing.body.errors[0].code).toBe('mc_dm_api_error.category_not_found');
    });
  });

  describe('delete', () => {
    it('needs hard=1 (422) and then answers {success:true}', async () => {
      const c = await create({ title: 'Doomed' });
      const soft = await t.rest('DELETE', `/api/mc-dm-categories/${c.category_id}/`);
      expect(soft.status).toBe(422);
      expect(soft.body.errors[0].code).toBe('mc_dm_api_error.category_hard_delete_required');
      const zero = await t.rest('DELETE', `/api/mc-dm-categories/${c.category_id}/`, { query: { hard: 0 } });
      expect(zero.status).toBe(422);
      expect(await t.prisma.category.count({ where: { id: c.category_id } })).toBe(1);
      const hard = await t.rest('DELETE', `/api/mc-dm-categories/${c.category_id}/`, { form: { hard: 1 } });
      expect(hard.status).toBe(200);
      expect(hard.body).toEqual({ success: true });
      expect((await t.rest('GET', `/api/mc-dm-categories/${c.category_id}/`)).status).toBe(404);
      expect((await t.rest('DELETE', `/api/mc-dm-categories/${c.category_id}/`, { query: { hard: 1 } })).status).toBe(
        404,
      );
    });

    it('reassign policy: children and downloads move to the parent; a top-level category with downloads is refused', async () => {
      const owner = await t.user(`owner_${kind}`);
      const top = await create({ title: 'Top' });
      const mid = await create({ title: 'Mid', parent_category_id: top.category_id });
      const leaf = await create({ title: 'Leaf', parent_category_id: mid.category_id });
      const dl = await t.prisma.download.create({
        data: { title: 'In mid', categoryId: mid.category_id, userId: owner.userId },
      });
      await t.prisma.download.create({ data: { title: 'In top', categoryId: top.category_id, userId: owner.userId } });

      const r = await t.rest('DELETE', `/api/mc-dm-categories/${mid.category_id}/`, { query: { hard: 1 } });
      expect(r.body).toEqual({ success: true });
      expect((await t.prisma.category.findUniqueOrThrow({ where: { id: leaf.category_id } })).parentId).toBe(
        top.category_id,
      );
      expect((await t.prisma.download.findUniqueOrThrow({ where: { id: dl.id } })).categoryId).toBe(top.category_id);
      expect((await t.prisma.category.findUniqueOrThrow({ where: { id: top.category_id } })).downloadCount).toBe(2);

      const refused = await t.rest('DELETE', `/api/mc-dm-categories/${top.category_id}/`, { query: { hard: 1 } });
      expect(refused.status).toBe(422);
      expect(refused.body.errors[0]).toMatchObject({
        code: 'mc_dm_api_error.category_not_empty',
        params: { download_count: 2 },
      });
      expect(await t.prisma.category.count({ where: { id: top.category_id } })).toBe(1);
      expect(await t.prisma.download.count({ where: { categoryId: top.category_id } })).toBe(2);
    });
  });

  describe('cascade policy', () => {
    it('CATEGORY_DELETE_POLICY=cascade deletes the subtree with its downloads and their blobs, each download audited', async () => {
      const c = await startTestApp(kind, { categoryDeletePolicy: 'cascade' });
      try {
        const u = await c.user('cascader');
        const mk = async (title: string, parent = 0) =>
          (await c.rest('POST', '/api/mc-dm-categories/', { form: { title, parent_category_id: parent } })).body
            .category.category_id;
        const top = await mk('Top');
        const mid = await mk('Mid', top);
        const leaf = await mk('Leaf', mid);
        const other = await mk('Other');
        const dl = async (category: number) =>
          (await c.rest('POST', '/api/mc-dm-downloads/', { key: u.key, form: { category_id: category, title: 'd' } }))
            .body.download;
        const inMid = await dl(mid);
        const inLeaf = await dl(leaf);
        const kept = await dl(other);
        const form = new FormData();
        form.append('version_id', String(inLeaf.current_version_id));
        form.append('file', new Blob([new Uint8Array([1, 2, 3])]), 'blob.bin');
        const file = (await (
          await fetch(`${c.url}/api/mc-dm-files/`, { method: 'POST', headers: { 'Forum-Api-Key': u.key }, body: form })
        ).json()) as any;
        const row = await c.prisma.file.findUniqueOrThrow({ where: { id: file.file.file_id } });
        expect(await c.app.services.storage.exists(row.storageKey!)).toBe(true);

        const r = await c.rest('DELETE', `/api/mc-dm-categories/${top}/`, { query: { hard: 1 } });
        expect(r.body).toEqual({ success: true });
        expect(await c.prisma.category.count({ where: { id: { in: [top, mid, leaf] } } })).toBe(0);
        expect(await c.prisma.download.count({ where: { id: { in: [inMid.download_id, inLeaf.download_id] } } })).toBe(
          0,
        );
        expect(await c.prisma.download.count({ where: { id: kept.download_id } })).toBe(1);
        expect(
          await c.prisma.auditLog.count({
            where: { action: 'download.hard_deleted', contentId: { in: [inMid.download_id, inLeaf.download_id] } },
          }),
        ).toBe(2);
        expect(await c.app.services.storage.exists(row.storageKey!)).toBe(false);
      } finally {
        await c.close();
      }
    });
  });

  describe('permissions and scopes', () => {
    it('writes need admin rights: a plain user gets 403, an admin-flagged user succeeds', async () => {
      const plain = await t.user(`plain_${kind}`);
      const admin = await t.user(`admin_${kind}`, { isAdmin: true });
      const denied = await t.rest('POST', '/api/mc-dm-categories/', { key: plain.key, form: { title: 'No' } });
      expect(denied.status).toBe(403);
      expect(denied.body.errors[0].code).toBe('do_not_have_permission');
      const ok = await t.rest('POST', '/api/mc-dm-categories/', { key: admin.key, form: { title: 'Yes' } });
      expect(ok.status).toBe(200);
      const id = ok.body.category.category_id;
      expect(
        (await t.rest('PUT', `/api/mc-dm-categories/${id}/`, { key: plain.key, form: { title: 'x' } })).status,
      ).toBe(403);
      expect(
        (await t.rest('DELETE', `/api/mc-dm-categories/${id}/`, { key: plain.key, query: { hard: 1 } })).status,
      ).toBe(403);
      expect(
        (await t.rest('DELETE', `/api/mc-dm-categories/${id}/`, { key: admin.key, query: { hard: 1 } })).body,
      ).toEqual({ success: true });
    });

    it('a super-user key acting as a plain user still passes admin checks', async () => {
      const plain = await t.user(`acted_${kind}`);
      const r = await t.rest('POST', '/api/mc-dm-categories/', {
        form: { title: 'As user' },
        headers: { 'Forum-Api-User': String(plain.userId) },
      });
      expect(r.status).toBe(200);
    });

    it('each route needs its scope: 403 api_scope_missing with params.scope', async () => {
      const readOnly = await t.key('SUPER', ['mc_dm_category:read']);
      const writeOnly = await t.key('SUPER', ['mc_dm_category:write']);
      const downloadsOnly = await t.key('SUPER', ['mc_dm_download:read', 'mc_dm_download:write']);
      const c = await create({ title: 'Scoped' });
      const expectScope = (r: any, scope: string) => {
        expect(r.status).toBe(403);
        expect(r.body.errors[0]).toMatchObject({ code: 'api_scope_missing', params: { scope } });
      };
      expectScope(await t.rest('GET', '/api/mc-dm-categories/', { key: downloadsOnly }), 'mc_dm_category:read');
      expectScope(
        await t.rest('GET', `/api/mc-dm-categories/${c.category_id}/`, { key: writeOnly }),
        'mc_dm_category:read',
      );
      expectScope(
        await t.rest('POST', '/api/mc-dm-categories/', { key: readOnly, form: { title: 'x' } }),
        'mc_dm_category:write',
      );
      expectScope(
        await t.rest('PUT', `/api/mc-dm-categories/${c.category_id}/`, { key: readOnly, form: { title: 'x' } }),
        'mc_dm_category:write',
      );
      expectScope(
        await t.rest('DELETE', `/api/mc-dm-categories/${c.category_id}/`, { key: writeOnly, query: { hard: 1 } }),
        'mc_dm_category:delete_hard',
      );
      expect(await t.prisma.category.findUniqueOrThrow({ where: { id: c.category_id } })).toMatchObject({
        title: 'Scoped',
      });
    });
  });

  describe('GraphQL face', () => {
    it('lists, gets, creates, updates and deletes with the same rules', async () => {
      await clear();
      const created = await t.gql(
        `mutation { createCategory(input: { title: "G1", displayOrder: 1 }) { category { categoryId parentCategoryId title viewUrl } } }`,
      );
      expect(created.errors).toBeUndefined();
      const id = created.data.createCategory.category.categoryId;
      await t.gqlOk(`mutation { createCategory(input: { title: "G2", displayOrder: 2 }) { category { categoryId } } }`);
      const list = await t.gqlOk(
        `{ categories(order: TITLE, direction: ASC, perPage: 1) { nodes { title } pagination { page perPage total lastPage } } }`,
      );
      expect(list.categories).toEqual({
        nodes: [{ title: 'G1' }],
        pagination: { page: 1, perPage: 1, total: 2, lastPage: 2 },
      });
      const def = await t.gqlOk(`{ categories { nodes { title } } }`);
      expect(def.categories.nodes.map((n: any) => n.title)).toEqual(['G2', 'G1']);

      const upd = await t.gqlOk(
        `mutation($i: UpdateCategoryInput!) { updateCategory(input: $i) { category { title requireApproval maxFileSize allowedFileTypes } } }`,
        { i: { categoryId: id, requireApproval: true, maxFileSize: 5000000000, allowedFileTypes: 'Zip' } },
      );
      expect(upd.updateCategory.category).toEqual({
        title: 'G1',
        requireApproval: true,
        maxFileSize: 5000000000,
        allowedFileTypes: 'zip',
      });

      const soft = await t.gql(`mutation { deleteCategory(input: { categoryId: ${id} }) { success } }`);
      expect(soft.codes).toEqual(['mc_dm_api_error.category_hard_delete_required']);
      const hard = await t.gqlOk(`mutation { deleteCategory(input: { categoryId: ${id}, hard: true }) { success } }`);
      expect(hard.deleteCategory).toEqual({ success: true });
      const gone = await t.gql(`{ category(categoryId: ${id}) { title } viewer { userId } }`);
      expect(gone.codes).toEqual(['mc_dm_api_error.category_not_found']);
      expect(gone.data).toEqual({ category: null, viewer: { userId: 0 } });
    });

    it('carries the contract codes for bad input, permissions and scopes', async () => {
      const plain = await t.user(`gqlplain_${kind}`);
      expect(
        (await t.gql(`mutation { createCategory(input: { title: "x" }) { category { title } } }`, {}, plain.key)).codes,
      ).toEqual(['do_not_have_permission']);
      expect(
        (await t.gql(`mutation { createCategory(input: { title: "x", iconColor: "blue" }) { category { title } } }`))
          .codes,
      ).toEqual(['invalid_input']);
      expect((await t.gql(`{ categories(perPage: 0) { nodes { title } } }`)).codes).toEqual(['invalid_input']);
      expect((await t.gql(`{ categories(order: NOPE) { nodes { title } } }`)).codes).toEqual(['invalid_input']);
      const dlKey = await t.key('SUPER', ['mc_dm_download:read']);
      const scoped = await t.gql(`{ categories { nodes { title } } }`, {}, dlKey);
      expect(scoped.codes).toEqual(['api_scope_missing']);
      expect(scoped.errors![0].extensions.params).toEqual({ scope: 'mc_dm_category:read' });
      // knobs are not part of the create input
      expect(
        (
          await t.gql(
            `mutation { createCategory(input: { title: "x", requireApproval: true }) { category { title } } }`,
          )
        ).codes,
      ).toEqual(['invalid_input']);
    });
  });

  describe('node(id)', () => {
    it('fetches a category by its global id with the same permission and scope rules', async () => {
      const c = await t.gqlOk(`mutation { createCategory(input: { title: "Noded" }) { category { id categoryId } } }`);
      const { id, categoryId } = c.createCategory.category;
      const found = await t.gqlOk(`query($id: ID!) { node(id: $id) { id ... on Category { categoryId title } } }`, {
        id,
      });
      expect(found.node).toEqual({ id, categoryId, title: 'Noded' });
      const u = await t.user(`noder_${kind}`);
      await t.gqlOk(`mutation($i: SetCategoryPermissionInput!) { setCategoryPermission(input: $i) { ok } }`, {
        i: { categoryId, group: 'registered', permission: 'view', value: 'DENY' },
      });
      // A node the visitor may not see answers null, without an error (nothing to tell apart from "no such node").
      const hidden = await t.gql(`query($id: ID!) { node(id: $id) { id } }`, { id }, u.key);
      expect([hidden.codes, hidden.data]).toEqual([[], { node: null }]);
      const noScope = await t.key('SUPER', ['mc_dm_download:read']);
      expect((await t.gql(`query($id: ID!) { node(id: $id) { id } }`, { id }, noScope)).codes).toEqual([
        'api_scope_missing',
      ]);
      expect((await t.gql(`{ node(id: "bm9wZToxMjM") { id } }`)).codes).toEqual(['invalid_input']);
      const gone = Buffer.from('Category:999999').toString('base64url');
      const missing = await t.gql(`query($id: ID!) { node(id: $id) { id } }`, { id: gone });
      expect([missing.codes, missing.data]).toEqual([[], { node: null }]);
    });
  });

  describe('REST routing', () => {
    it('404 endpoint_not_found for unknown paths and 405 method_not_allowed for known ones', async () => {
      const nf = await t.rest('GET', '/api/mc-dm-nothing/');
      expect(nf.status).toBe(404);
      expect(nf.body.errors[0].code).toBe('endpoint_not_found');
      const na = await t.rest('PATCH', '/api/mc-dm-categories/1/');
      expect(na.status).toBe(405);
      expect(na.body.errors[0].code).toBe('method_not_allowed');
      expect(na.headers.get('allow')).toBe('GET, PUT, DELETE');
    });

    it('413 request_too_large for a body over the limit, before anything is written', async () => {
      const before = await t.prisma.category.count();
      const r = await t.rest('POST', '/api/mc-dm-categories/', {
        form: { title: 'big', description: 'x'.repeat(t.config.maxBodyBytes + 10) },
      });
      expect(r.status).toBe(413);
      expect(r.body.errors[0].code).toBe('request_too_large');
      expect(await t.prisma.category.count()).toBe(before);
    });

    it('400 invalid_input for a malformed path segment or query encoding', async () => {
      const r = await t.rest('GET', '/api/mc-dm-categories/%E0%A4%A/');
      expect(r.status).toBe(400);
      expect(r.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'category_id' } });
    });

    it('400 invalid_input for a malformed JSON body', async () => {
      const r = await fetch(`${t.url}/api/mc-dm-categories/`, {
        method: 'POST',
        headers: { 'Forum-Api-Key': SUPER_KEY, 'content-type': 'application/json' },
        body: '{"title":',
      });
      expect(r.status).toBe(400);
      expect(((await r.json()) as any).errors[0].code).toBe('invalid_input');
    });
  });
});
