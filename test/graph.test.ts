// The GraphQL face as a graph: global ids on every entity, node/nodes, links between objects under the same
// permission rules as the root fields, nullability that confines a refusal to its field, payloads for caches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isObjectType, type GraphQLObjectType } from 'graphql';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';
import { schema } from '../src/modules/index.js';

const gid = (type: string, id: number) => Buffer.from(`${type}:${id}`).toString('base64url');

describe('schema shape', () => {
  it('every entity type (one with a numeric …Id key of its own) has id: ID! and implements Node', () => {
    const entities = Object.values(schema.getTypeMap())
      .filter((t): t is GraphQLObjectType => isObjectType(t) && !t.name.startsWith('__'))
      .filter((t) => `${t.name[0]!.toLowerCase()}${t.name.slice(1)}Id` in t.getFields());
    expect(entities.map((t) => t.name).sort()).toEqual([
      'ApiKey',
      'Category',
      'Comment',
      'Download',
      'File',
      'Group',
      'Prefix',
      'Report',
      'Review',
      'User',
      'Version',
      'Webhook',
    ]);
    for (const t of entities) {
      expect(
        t.getInterfaces().map((i) => i.name),
        t.name,
      ).toContain('Node');
      expect(String(t.getFields().id?.type), t.name).toBe('ID!');
    }
  });

  it('fields that can be refused on their own are nullable, so a refusal nulls only them', () => {
    const q = schema.getQueryType()!.getFields();
    for (const f of [
      'categories',
      'downloads',
      'comments',
      'files',
      'category',
      'download',
      'comment',
      'file',
      'node',
    ]) {
      expect(String(q[f]!.type).endsWith('!'), f).toBe(false);
    }
    for (const [name, f] of Object.entries(schema.getMutationType()!.getFields())) {
      expect(String(f.type).endsWith('!'), name).toBe(false);
    }
    expect(String((schema.getType('Comment') as GraphQLObjectType).getFields().edits!.type).endsWith('!')).toBe(false);
    expect(String((schema.getType('Category') as GraphQLObjectType).getFields().parent!.type)).toBe('Category');
  });
});

forEachDatabase((kind) => {
  let t: TestApp;
  let owner: { userId: number; key: string };
  let reader: { userId: number; key: string };
  let cat: number;
  let hidden: number;
  let child: number;
  let dl: number;
  let version: number;
  let comment: number;
  let prefix: number;

  beforeAll(async () => {
    t = await startTestApp(kind, { commentFloodSeconds: 0 });
    owner = await t.user(`graph_owner_${kind}`);
    reader = await t.user(`graph_reader_${kind}`);
    cat = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Graph' } })).body.category.category_id;
    hidden = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Staff only' } })).body.category
      .category_id;
    child = (
      await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Open child', parent_category_id: hidden } })
    ).body.category.category_id;
    for (const group of ['guest', 'registered']) {
      await t.gqlOk(`mutation($i: SetCategoryPermissionInput!) { setCategoryPermission(input: $i) { ok } }`, {
        i: { categoryId: hidden, group, permission: 'view', value: 'DENY' },
      });
      await t.gqlOk(`mutation($i: SetCategoryPermissionInput!) { setCategoryPermission(input: $i) { ok } }`, {
        i: { categoryId: child, group, permission: 'view', value: 'ALLOW' },
      });
    }
    prefix = (await t.gqlOk(`mutation { createPrefix(input: { title: "Beta" }) { prefix { prefixId } } }`)).createPrefix
      .prefix.prefixId;
    await t.gqlOk(`mutation($p: Int!, $c: Int!) { assignPrefix(input: { prefixId: $p, categoryId: $c }) { ok } }`, {
      p: prefix,
      c: cat,
    });
    const d = await t.rest('POST', '/api/mc-dm-downloads/', {
      key: owner.key,
      form: { category_id: cat, title: 'Linked', prefix_id: prefix },
    });
    dl = d.body.download.download_id;
    version = d.body.download.current_version_id;
    comment = (
      await t.rest('POST', '/api/mc-dm-comments/', { key: reader.key, form: { download_id: dl, message: 'Linked up' } })
    ).body.comment.comment_id;
  });
  afterAll(async () => {
    await t?.close();
  });

  describe('links', () => {
    it('a download links to its category, owner, prefix and current version; a comment to its author and download', async () => {
      const data = await t.gqlOk(
        `query($d: Int!, $c: Int!) {
        download(downloadId: $d) { id downloadId category { id title } owner { id userId username } prefix { id title }
          currentVersion { id versionId download { downloadId } } versions { versionId } }
        comment(commentId: $c) { id author { username } download { title } }
      }`,
        { d: dl, c: comment },
        reader.key,
      );
      expect(data.download).toMatchObject({
        id: gid('Download', dl),
        downloadId: dl,
        category: { id: gid('Category', cat), title: 'Graph' },
        owner: { id: gid('User', owner.userId), userId: owner.userId, username: `graph_owner_${kind}` },
        prefix: { id: gid('Prefix', prefix), title: 'Beta' },
        currentVersion: { id: gid('Version', version), versionId: version, download: { downloadId: dl } },
      });
      expect(data.comment).toEqual({
        id: gid('Comment', comment),
        author: { username: `graph_reader_${kind}` },
        download: { title: 'Linked' },
      });
    });

    it('a parent category the visitor may not view is null; the rest of the response stays', async () => {
      const q = `query($c: Int!) { category(categoryId: $c) { title parent { title } } }`;
      const asReader = await t.gql(q, { c: child }, reader.key);
      expect(asReader.errors).toBeUndefined();
      expect(asReader.data.category).toEqual({ title: 'Open child', parent: null });
      expect((await t.gqlOk(q, { c: child })).category).toEqual({
        title: 'Open child',
        parent: { title: 'Staff only' },
      });
    });
  });

  describe('node and nodes', () => {
    it('fetch every entity type again by its id', async () => {
      const ids = [
        gid('Category', cat),
        gid('Download', dl),
        gid('Version', version),
        gid('Comment', comment),
        gid('User', owner.userId),
        gid('Prefix', prefix),
      ];
      const r = await t.gqlOk(`query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }`, { ids });
      expect(r.nodes.map((n: any) => n.__typename)).toEqual([
        'Category',
        'Download',
        'Version',
        'Comment',
        'User',
        'Prefix',
      ]);
      expect(r.nodes.map((n: any) => n.id)).toEqual(ids);
      const one = await t.gqlOk(`query($id: ID!) { node(id: $id) { ... on Download { title } } }`, {
        id: gid('Download', dl),
      });
      expect(one.node).toEqual({ title: 'Linked' });
      const group = (await t.prisma.group.findUniqueOrThrow({ where: { name: 'guest' } })).id;
      const admin = await t.gqlOk(`query($id: ID!) { node(id: $id) { ... on Group { name permissions } } }`, {
        id: gid('Group', group),
      });
      expect(admin.node).toEqual({ name: 'guest', permissions: ['download', 'view', 'viewComments'] });
    });

    it('answers null for what the visitor may not see, and leaves the other entries intact', async () => {
      const r = await t.gql(
        `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`,
        {
          ids: [
            gid('Category', hidden),
            gid('Download', 999999),
            gid('Category', child),
            gid('ApiKey', 1),
            gid('Group', 1),
          ],
        },
        reader.key,
      );
      expect(r.errors).toBeUndefined();
      expect(r.data.nodes).toEqual([null, null, { id: gid('Category', child) }, null, null]);
    });

    it('a missing scope nulls only that entry, with its own error', async () => {
      const narrow = await t.key('USER', ['mc_dm_category:read'], reader.userId);
      const r = await t.gql(
        `query($ids: [ID!]!) { nodes(ids: $ids) { id } viewer { userId } }`,
        { ids: [gid('Download', dl), gid('Category', cat)] },
        narrow,
      );
      expect(r.data).toEqual({ nodes: [null, { id: gid('Category', cat) }], viewer: { userId: reader.userId } });
      expect(r.codes).toEqual(['api_scope_missing']);
      expect(r.errors![0].path).toEqual(['nodes', 0]);
    });

    it('refuses malformed ids, ids of unknown types, ids beyond the id range and more than 100 ids', async () => {
      const bad = [
        '',
        'nonsense',
        gid('Download', 0),
        gid('Download', 2_147_483_648),
        gid('Download', 99999999999),
        gid('Secret', 1),
        Buffer.from('Download:1:2').toString('base64url'),
        Buffer.from('Download:-1').toString('base64url'),
        'x'.repeat(500),
      ];
      for (const id of bad) {
        const r = await t.gql(`query($id: ID!) { node(id: $id) { id } viewer { userId } }`, { id });
        expect(r.codes, id).toEqual(['invalid_input']);
        expect(r.errors![0].extensions.params.field, id).toBe('id');
        expect(r.data.viewer, id).toEqual({ userId: 0 });
        expect(r.status, id).toBeLessThan(500);
      }
      const many = Array.from({ length: 101 }, () => gid('Download', dl));
      const r = await t.gql(`query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, { ids: many });
      expect(r.codes).toEqual(['invalid_input']);
      const mixed = await t.gql(`query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, {
        ids: [gid('Download', dl), 'nonsense'],
      });
      expect(mixed.codes).toEqual(['invalid_input']);
    });
  });

  describe('nullability', () => {
    it("a non-moderator asking for a comment's edit history gets null there and everything else", async () => {
      const r = await t.gql(
        `query($c: Int!) { comment(commentId: $c) { message edits { oldMessage } } viewer { userId } }`,
        { c: comment },
        reader.key,
      );
      expect(r.data).toEqual({ comment: { message: 'Linked up', edits: null }, viewer: { userId: reader.userId } });
      expect(r.codes).toEqual(['do_not_have_permission']);
    });

    it('a list the key has no scope for is null; the lists it may read are answered', async () => {
      const narrow = await t.key('USER', ['mc_dm_category:read'], reader.userId);
      const r = await t.gql(
        `{ downloads { nodes { title } } categories(perPage: 100) { pagination { total } } }`,
        {},
        narrow,
      );
      expect(r.data.downloads).toBeNull();
      expect(r.data.categories.pagination.total).toBeGreaterThan(0);
      expect(r.codes).toEqual(['api_scope_missing']);
    });

    it('of two mutations in one request, the refused one is null and the other is applied', async () => {
      const r = await t.gql(
        `mutation($d: Int!) {
        ok: createComment(input: { downloadId: $d, message: "applied" }) { comment { message } }
        refused: deleteCategory(input: { categoryId: ${cat}, hard: true }) { success }
      }`,
        { d: dl },
        reader.key,
      );
      expect(r.data).toEqual({ ok: { comment: { message: 'applied' } }, refused: null });
      expect(r.codes).toEqual(['do_not_have_permission']);
    });
  });

  describe('payloads for client caches', () => {
    it('deletes return the deleted id, and the object after a soft delete', async () => {
      const d = (
        await t.rest('POST', '/api/mc-dm-downloads/', { key: owner.key, form: { category_id: cat, title: 'Doomed' } })
      ).body.download.download_id;
      const c = (
        await t.rest('POST', '/api/mc-dm-comments/', { key: reader.key, form: { download_id: d, message: 'bye' } })
      ).body.comment.comment_id;
      const soft = await t.gqlOk(
        `mutation($c: Int!) { deleteComment(input: { commentId: $c }) { success deletedId comment { id commentState } } }`,
        { c },
      );
      expect(soft.deleteComment).toEqual({
        success: true,
        deletedId: gid('Comment', c),
        comment: { id: gid('Comment', c), commentState: 'DELETED' },
      });
      const asOwner = await t.gqlOk(
        `mutation($d: Int!) { deleteDownload(input: { downloadId: $d }) { success deletedId download { id } } }`,
        { d },
        owner.key,
      );
      // The owner may no longer see a soft-deleted download (viewDeleted is a moderator's permission).
      expect(asOwner.deleteDownload).toEqual({ success: true, deletedId: gid('Download', d), download: null });
      const hard = await t.gqlOk(
        `mutation($d: Int!) { deleteDownload(input: { downloadId: $d, hard: true }) { success deletedId download { id } } }`,
        { d },
      );
      expect(hard.deleteDownload).toEqual({ success: true, deletedId: gid('Download', d), download: null });
      const c2 = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Short-lived' } })).body.category
        .category_id;
      expect(
        (
          await t.gqlOk(
            `mutation($c: Int!) { deleteCategory(input: { categoryId: $c, hard: true }) { success deletedId } }`,
            { c: c2 },
          )
        ).deleteCategory,
      ).toEqual({ success: true, deletedId: gid('Category', c2) });
    });

    it('team, prefix and permission changes return the objects they changed', async () => {
      const team = await t.gqlOk(
        `mutation($d: Int!, $u: Int!) { addTeamMember(input: { downloadId: $d, userId: $u }) { ok download { id } user { id username } } }`,
        { d: dl, u: reader.userId },
        owner.key,
      );
      expect(team.addTeamMember).toEqual({
        ok: true,
        download: { id: gid('Download', dl) },
        user: { id: gid('User', reader.userId), username: `graph_reader_${kind}` },
      });
      const removed = await t.gqlOk(
        `mutation($d: Int!, $u: Int!) { removeTeamMember(input: { downloadId: $d, userId: $u }) { ok user { userId } } }`,
        { d: dl, u: reader.userId },
        owner.key,
      );
      expect(removed.removeTeamMember).toEqual({ ok: true, user: { userId: reader.userId } });
      const assigned = await t.gqlOk(
        `mutation($p: Int!, $c: Int!) { assignPrefix(input: { prefixId: $p, categoryId: $c }) { ok prefix { title } category { categoryId } } }`,
        { p: prefix, c: child },
      );
      expect(assigned.assignPrefix).toEqual({ ok: true, prefix: { title: 'Beta' }, category: { categoryId: child } });
      const granted = await t.gqlOk(
        `mutation { setGroupPermission(input: { group: "guest", permission: "comment", value: ALLOW }) { ok group { name permissions } } }`,
      );
      expect(granted.setGroupPermission.group.permissions).toContain('comment');
      await t.gqlOk(
        `mutation { setGroupPermission(input: { group: "guest", permission: "comment", value: DENY }) { ok } }`,
      );
      const overridden = await t.gqlOk(
        `mutation($c: Int!) { setCategoryPermission(input: { categoryId: $c, group: "guest", permission: "view", value: INHERIT }) { ok category { categoryId } } }`,
        { c: child },
      );
      expect(overridden.setCategoryPermission).toEqual({ ok: true, category: { categoryId: child } });
    });
  });
});
