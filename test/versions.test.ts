// Versions as a resource, end to end on both faces: list/get/create/update/delete/restore, channels, compatibility,
// dependencies, the current version, and every bad input answering a defined error that changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

const FIELDS = [
  'version_id',
  'download_id',
  'version_string',
  'release_date',
  'download_count',
  'version_state',
  'channel',
];

forEachDatabase((kind) => {
  let t: TestApp;
  let categoryId: number;
  let owner: { userId: number; key: string };
  let other: { userId: number; key: string };
  let reader: string;

  /** A download of `owner`, with its first version (1.0.0), by REST. */
  async function download(title = 'Mod', versionString = '1.0.0') {
    const r = await t.rest('POST', '/api/mc-dm-downloads/', {
      key: owner.key,
      form: { category_id: categoryId, title, version_string: versionString },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return {
      downloadId: r.body.download.download_id as number,
      versionId: r.body.download.current_version_id as number,
    };
  }
  async function currentOf(downloadId: number) {
    const d = await t.prisma.download.findUniqueOrThrow({ where: { id: downloadId } });
    return { id: d.currentVersionId, pinned: d.currentVersionPinned };
  }
  /** Creates a version by REST (JSON body) and answers the response. */
  const create = (body: Record<string, unknown>, key = owner.key) =>
    t.rest('POST', '/api/mc-dm-versions/', { key, json: body });
  /** The rows of the version table, to prove a refusal changed nothing. */
  const snapshot = async () =>
    JSON.stringify(await t.prisma.version.findMany({ orderBy: { id: 'asc' } })) +
    JSON.stringify(
      await t.prisma.download.findMany({
        orderBy: { id: 'asc' },
        select: { id: true, currentVersionId: true, currentVersionPinned: true },
      }),
    );

  beforeAll(async () => {
    t = await startTestApp(kind);
    const c = await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Mods' } });
    categoryId = c.body.category.category_id;
    owner = await t.user('owner');
    other = await t.user('other');
    reader = await t.key('USER', ['mc_dm_download:read'], other.userId);
  }, 60_000);
  afterAll(() => t?.close());

  describe('REST /api/mc-dm-versions/', () => {
    it('creates, gets, lists, updates and deletes a version', async () => {
      const { downloadId, versionId: first } = await download();
      const made = await create({
        download_id: downloadId,
        version_string: '1.1.0',
        channel: 'beta',
        changelog: '[b]New[/b] things',
        compatible_with: ['1.20.1', 'fabric', ' fabric '],
        dependencies: [],
      });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      const v = made.body.version;
      expect(Object.keys(v)).toEqual([...FIELDS, 'compatible_with', 'dependencies']);
      expect(v).toMatchObject({
        download_id: downloadId,
        version_string: '1.1.0',
        channel: 'beta',
        version_state: 'visible',
      });
      expect(v.compatible_with).toEqual(['1.20.1', 'fabric']);
      // A beta does not become current.
      expect((await currentOf(downloadId)).id).toBe(first);

      const got = await t.rest('GET', `/api/mc-dm-versions/${v.version_id}/`, { key: reader, query: { with: 'full' } });
      expect(got.status, JSON.stringify(got.body)).toBe(200);
      expect(got.body.version.changelog).toBe('[b]New[/b] things');
      expect(got.body.version.Files).toEqual([]);

      const list = await t.rest('GET', '/api/mc-dm-versions/', { key: reader, query: { download_id: downloadId } });
      expect(list.status).toBe(200);
      expect(list.body.versions.map((x: any) => x.version_id)).toEqual([v.version_id, first]);
      expect(list.body.pagination).toEqual({ page: 1, per_page: 20, total: 2, last_page: 1 });
      const betas = await t.rest('GET', '/api/mc-dm-versions/', {
        key: reader,
        query: { download_id: downloadId, channel: 'beta' },
      });
      expect(betas.body.versions.map((x: any) => x.version_id)).toEqual([v.version_id]);
      const fabric = await t.rest('GET', '/api/mc-dm-versions/', {
        key: reader,
        query: { download_id: downloadId, compatible_with: 'fabric' },
      });
      expect(fabric.body.versions.map((x: any) => x.version_id)).toEqual([v.version_id]);

      // Moved to release: it is the newest release, so it becomes current.
      const up = await t.rest('PUT', `/api/mc-dm-versions/${v.version_id}/`, {
        key: owner.key,
        json: { channel: 'release' },
      });
      expect(up.status, JSON.stringify(up.body)).toBe(200);
      expect(up.body.version.channel).toBe('release');
      expect((await currentOf(downloadId)).id).toBe(v.version_id);

      // Deleting the current version moves current_version_id to the newest remaining visible release.
      const del = await t.rest('DELETE', `/api/mc-dm-versions/${v.version_id}/`, { key: owner.key });
      expect(del.status, JSON.stringify(del.body)).toBe(200);
      expect(del.body).toEqual({ success: true });
      expect((await currentOf(downloadId)).id).toBe(first);
      // Deleted: gone for readers (404), listed to nobody, still there for the owner.
      expect((await t.rest('GET', `/api/mc-dm-versions/${v.version_id}/`, { key: reader })).body.errors[0].code).toBe(
        'mc_dm_api_error.version_not_found',
      );
      const owned = await t.rest('GET', `/api/mc-dm-versions/${v.version_id}/`, { key: owner.key });
      expect(owned.body.version.version_state).toBe('deleted');
      const after = await t.rest('GET', '/api/mc-dm-versions/', { key: owner.key, query: { download_id: downloadId } });
      expect(after.body.versions.map((x: any) => x.version_id)).toEqual([first]);
    });

    it('hard delete needs the delete_hard scope and removes the row', async () => {
      const { downloadId } = await download();
      const v = (await create({ download_id: downloadId, version_string: '2.0.0' })).body.version;
      const noHard = await t.key('USER', ['mc_dm_download:read', 'mc_dm_download:write'], owner.userId);
      const refused = await t.rest('DELETE', `/api/mc-dm-versions/${v.version_id}/`, {
        key: noHard,
        form: { hard: 1 },
      });
      expect(refused.status).toBe(403);
      expect(refused.body.errors[0].code).toBe('api_scope_missing');
      // The owner (registered) lacks hardDeleteAny.
      const denied = await t.rest('DELETE', `/api/mc-dm-versions/${v.version_id}/`, {
        key: owner.key,
        form: { hard: 1 },
      });
      expect(denied.body.errors[0].code).toBe('do_not_have_permission');
      const hard = await t.rest('DELETE', `/api/mc-dm-versions/${v.version_id}/`, { form: { hard: 1 } });
      expect(hard.body).toEqual({ success: true });
      expect(await t.prisma.version.findUnique({ where: { id: v.version_id } })).toBeNull();
      expect((await currentOf(downloadId)).id).not.toBe(v.version_id);
    });

    it('answers the defined errors for bad input, and changes nothing', async () => {
      const { downloadId, versionId } = await download('Target');
      const { downloadId: depId } = await download('Library');
      const before = await snapshot();
      const cases: [Record<string, unknown>, number, string, string?][] = [
        [{ download_id: downloadId, channel: 'nightly' }, 400, 'invalid_input', 'channel'],
        [{ download_id: downloadId, compatible_with: ['x'.repeat(51)] }, 400, 'invalid_input', 'compatible_with'],
        [
          { download_id: downloadId, compatible_with: Array.from({ length: 101 }, (_, i) => `v${i}`) },
          400,
          'invalid_input',
          'compatible_with',
        ],
        [{ download_id: downloadId, compatible_with: ['  '] }, 400, 'invalid_input', 'compatible_with'],
        [
          { download_id: downloadId, dependencies: [{ download_id: depId, version_range: 'not a range' }] },
          400,
          'invalid_input',
          'dependencies.version_range',
        ],
        [
          { download_id: downloadId, dependencies: [{ download_id: downloadId }] },
          400,
          'invalid_input',
          'dependencies.download_id',
        ],
        [
          { download_id: downloadId, dependencies: [{ download_id: 999999 }] },
          400,
          'invalid_input',
          'dependencies.download_id',
        ],
        [
          { download_id: downloadId, dependencies: [{ download_id: depId }, { download_id: depId }] },
          400,
          'invalid_input',
          'dependencies.download_id',
        ],
        [
          { download_id: downloadId, dependencies: [{ download_id: depId, kind: 'sometimes' }] },
          400,
          'invalid_input',
          'dependencies.kind',
        ],
        [
          { download_id: downloadId, dependencies: Array.from({ length: 101 }, (_, i) => ({ download_id: i + 1 })) },
          400,
          'invalid_input',
          'dependencies',
        ],
        [{ download_id: downloadId, changelog: 'x'.repeat(50_001) }, 400, 'invalid_input', 'changelog'],
        [{ download_id: downloadId, version_string: 'x'.repeat(51) }, 400, 'invalid_input', 'version_string'],
        [{ download_id: 999999 }, 404, 'mc_dm_api_error.download_not_found'],
        [{ download_id: 0 }, 400, 'invalid_input', 'download_id'],
        [{ download_id: 'abc' }, 400, 'invalid_input', 'download_id'],
        [{}, 400, 'required_input_missing'],
      ];
      for (const [body, status, code, field] of cases) {
        const r = await create(body);
        expect(r.status, `${JSON.stringify(body).slice(0, 80)} → ${JSON.stringify(r.body)}`).toBe(status);
        expect(r.body.errors[0].code).toBe(code);
        if (field) expect(r.body.errors[0].params.field).toBe(field);
      }
      // Another user's download: 403; an unknown version: 404; a read-only key: api_scope_missing.
      expect((await create({ download_id: downloadId }, other.key)).body.errors[0].code).toBe('do_not_have_permission');
      const put = await t.rest('PUT', `/api/mc-dm-versions/${versionId}/`, {
        key: other.key,
        json: { channel: 'beta' },
      });
      expect(put.status).toBe(403);
      expect((await t.rest('PUT', '/api/mc-dm-versions/999999/', { json: { channel: 'beta' } })).status).toBe(404);
      expect((await t.rest('DELETE', '/api/mc-dm-versions/999999/')).body.errors[0].code).toBe(
        'mc_dm_api_error.version_not_found',
      );
      expect((await t.rest('DELETE', `/api/mc-dm-versions/${versionId}/`, { key: other.key })).status).toBe(403);
      expect((await create({ download_id: downloadId }, reader)).body.errors[0].code).toBe('api_scope_missing');
      const badUpdate = await t.rest('PUT', `/api/mc-dm-versions/${versionId}/`, {
        key: owner.key,
        json: { dependencies: [{ download_id: depId, version_range: '>>1' }] },
      });
      expect(badUpdate.status).toBe(400);
      expect(await snapshot()).toBe(before);
    });

    it('requires download_id for non-super keys, and checks the list filters', async () => {
      const missing = await t.rest('GET', '/api/mc-dm-versions/', { key: reader });
      expect(missing.status).toBe(400);
      expect(missing.body.errors[0]).toMatchObject({
        code: 'required_input_missing',
        params: { missing: ['download_id'] },
      });
      const superList = await t.rest('GET', '/api/mc-dm-versions/');
      expect(superList.status).toBe(200);
      const bad = await t.rest('GET', '/api/mc-dm-versions/', { key: reader, query: { download_id: 1, channel: 'x' } });
      expect(bad.body.errors[0].params.field).toBe('channel');
      const unknown = await t.rest('GET', '/api/mc-dm-versions/', { key: reader, query: { download_id: 999999 } });
      expect(unknown.body.errors[0].code).toBe('mc_dm_api_error.download_not_found');
      const longCompat = await t.rest('GET', '/api/mc-dm-versions/', {
        key: reader,
        query: { download_id: 1, compatible_with: 'x'.repeat(51) },
      });
      expect(longCompat.body.errors[0].params.field).toBe('compatible_with');
    });

    it('keeps a hidden download’s versions from visitors who may not view it', async () => {
      const { downloadId, versionId } = await download('Secret');
      await t.rest('DELETE', `/api/mc-dm-downloads/${downloadId}/`, { key: owner.key });
      expect((await t.rest('GET', `/api/mc-dm-versions/${versionId}/`, { key: reader })).status).toBe(403);
      const list = await t.rest('GET', '/api/mc-dm-versions/', { key: reader, query: { download_id: downloadId } });
      expect(list.status).toBe(403);
    });
  });

  describe('the current version', () => {
    it('follows the newest visible release unless pinned; unpinning and restoring settle it again', async () => {
      const { downloadId, versionId: v1 } = await download('Pinned', '1.0.0');
      const v2 = (await create({ download_id: downloadId, version_string: '2.0.0' })).body.version.version_id;
      expect(await currentOf(downloadId)).toEqual({ id: v2, pinned: false });
      // Pin the older one: a newer release no longer moves it.
      const pin = await t.rest('PUT', `/api/mc-dm-versions/${v1}/`, { key: owner.key, json: { current: true } });
      expect(pin.status, JSON.stringify(pin.body)).toBe(200);
      expect(await currentOf(downloadId)).toEqual({ id: v1, pinned: true });
      const v3 = (await create({ download_id: downloadId, version_string: '3.0.0' })).body.version.version_id;
      expect(await currentOf(downloadId)).toEqual({ id: v1, pinned: true });
      // Unpin: it follows the newest release again.
      await t.rest('PUT', `/api/mc-dm-versions/${v1}/`, { key: owner.key, json: { current: false } });
      expect(await currentOf(downloadId)).toEqual({ id: v3, pinned: false });
      // Deleting the pinned current version unpins it.
      await t.rest('PUT', `/api/mc-dm-versions/${v2}/`, { key: owner.key, json: { current: true } });
      await t.rest('DELETE', `/api/mc-dm-versions/${v2}/`, { key: owner.key });
      expect(await currentOf(downloadId)).toEqual({ id: v3, pinned: false });
      // A deleted version cannot be pinned.
      const refused = await t.rest('PUT', `/api/mc-dm-versions/${v2}/`, { key: owner.key, json: { current: true } });
      expect(refused.body.errors[0].params.field).toBe('current');
      // Deleting every release leaves none current; restoring brings the newest back.
      await t.rest('DELETE', `/api/mc-dm-versions/${v3}/`, { key: owner.key });
      await t.rest('DELETE', `/api/mc-dm-versions/${v1}/`, { key: owner.key });
      expect((await currentOf(downloadId)).id).toBeNull();
      const r = await t.gql(
        'mutation($i: RestoreVersionInput!) { restoreVersion(input: $i) { version { versionState } download { currentVersionId } } }',
        { i: { versionId: v3 } },
        owner.key,
      );
      expect(r.data.restoreVersion).toEqual({
        version: { versionState: 'VISIBLE' },
        download: { currentVersionId: v3 },
      });
      const again = await t.gql(
        'mutation($i: RestoreVersionInput!) { restoreVersion(input: $i) { version { versionId } } }',
        { i: { versionId: v3 } },
        owner.key,
      );
      expect(again.codes).toEqual(['mc_dm_api_error.version_not_deleted']);
    });
  });

  describe('GraphQL', () => {
    it('answers version, versions and the mutations with the same rules', async () => {
      const { downloadId, versionId } = await download('Graph');
      const { downloadId: libId } = await download('Lib');
      const made = await t.gql(
        `mutation($i: CreateVersionInput!) { createVersion(input: $i) { version { versionId channel compatibleWith dependencies { downloadId versionRange kind } } } }`,
        {
          i: {
            downloadId,
            versionString: '1.1.0',
            channel: 'ALPHA',
            compatibleWith: ['forge'],
            dependencies: [
              { downloadId: libId, versionRange: '^1.0.0' },
              { downloadId: 1, kind: 'OPTIONAL' },
            ].filter((d) => d.downloadId !== downloadId),
          },
        },
        owner.key,
      );
      expect(made.errors).toBeUndefined();
      expect(made.data.createVersion.version.dependencies[0]).toEqual({
        downloadId: libId,
        versionRange: '^1.0.0',
        kind: 'REQUIRED',
      });
      const id = made.data.createVersion.version.versionId;
      const one = await t.gql(
        'query($id: Int!) { version(versionId: $id) { versionId channel fileList { fileId } } }',
        { id },
        reader,
      );
      expect(one.data.version).toEqual({ versionId: id, channel: 'ALPHA', fileList: [] });
      const list = await t.gql(
        'query($d: Int) { versions(downloadId: $d, channel: ALPHA) { nodes { versionId } pagination { total } } }',
        { d: downloadId },
        reader,
      );
      expect(list.data.versions).toEqual({ nodes: [{ versionId: id }], pagination: { total: 1 } });
      const bad = await t.gql(
        'mutation($i: UpdateVersionInput!) { updateVersion(input: $i) { version { versionId } } }',
        { i: { versionId, compatibleWith: ['x'.repeat(51)] } },
        owner.key,
      );
      expect(bad.codes).toEqual(['invalid_input']);
      expect(bad.errors?.[0].extensions.params.field).toBe('compatible_with');
      const unknown = await t.gql('query { version(versionId: 999999) { versionId } }', {}, reader);
      expect(unknown.codes).toEqual(['mc_dm_api_error.version_not_found']);
      const del = await t.gql(
        'mutation($i: DeleteVersionInput!) { deleteVersion(input: $i) { success deletedId version { versionState } } }',
        { i: { versionId: id } },
        owner.key,
      );
      expect(del.data.deleteVersion).toMatchObject({ success: true, version: { versionState: 'DELETED' } });
    });
  });
});
