// Versions as a resource, end to end on both faces: list/get/create/update/delete/restore, channels, compatibility,
// dependencies, the current version, and every bad input answering a defined error that changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';

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

    it('publishes versionReleased for a version created through REST', async () => {
      const { downloadId } = await download('Announced');
      const stream = t.app.services.events.subscribe('versionReleased');
      let next = stream.next(); // listening starts with the first next()
      const made = await create({ download_id: downloadId, version_string: '1.0.1' });
      expect(made.status).toBe(200);
      // Events come from the outbox: those of earlier writes may still be on their way; this one arrives too.
      const wanted = { versionId: made.body.version.version_id, downloadId };
      for (;;) {
        const { value } = await next;
        next = stream.next();
        if (value?.versionId === wanted.versionId) {
          // Events carry the id of their outbox row (what instances tell repeats apart by) beside their payload.
          expect(value).toEqual({ ...wanted, eventId: expect.any(String) });
          break;
        }
      }
      await stream.return(undefined as never);
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

  describe('simultaneous writes', () => {
    it('keep the current version the newest visible release, and answer no 500', async () => {
      const { downloadId, versionId: first } = await download('Busy', '1.0.0');
      const made = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          create({ download_id: downloadId, version_string: `1.${i + 1}.0`, channel: i % 2 ? 'beta' : 'release' }),
        ),
      );
      expect(made.map((r) => r.status)).toEqual(Array(6).fill(200));
      const newestRelease = async () =>
        (
          await t.prisma.version.findFirst({
            where: { downloadId, state: 'visible', channel: 'release' },
            orderBy: [{ releaseDate: 'desc' }, { id: 'desc' }],
          })
        )?.id ?? null;
      expect((await currentOf(downloadId)).id).toBe(await newestRelease());
      // Every version deleted at once, soft and hard, twice each: one of each pair wins, the other finds nothing.
      const ids = [first, ...made.map((r) => r.body.version.version_id as number)];
      const deletes = await Promise.all(
        ids.flatMap((id, i) => {
          const form = { hard: i % 3 === 0 ? 1 : 0 };
          return [
            t.rest('DELETE', `/api/mc-dm-versions/${id}/`, { form }),
            t.rest('DELETE', `/api/mc-dm-versions/${id}/`, { form }),
          ];
        }),
      );
      for (const r of deletes) expect([200, 404], JSON.stringify(r.body)).toContain(r.status);
      expect((await currentOf(downloadId)).id).toBeNull();
      await Promise.all(
        ids.map((id) =>
          t.gql('mutation($i: RestoreVersionInput!) { restoreVersion(input: $i) { version { versionId } } }', {
            i: { versionId: id },
          }),
        ),
      );
      expect((await currentOf(downloadId)).id).toBe(await newestRelease());
      expect(await newestRelease()).not.toBeNull();
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
      // The download's own lists of versions leave the deleted one out too.
      const lists = await t.gql(
        'query($d: Int!) { download(downloadId: $d) { versions { versionId } versionsConnection { totalCount nodes { versionId } } } }',
        { d: downloadId },
        owner.key,
      );
      expect(lists.data.download.versions).toEqual([{ versionId }]);
      expect(lists.data.download.versionsConnection).toEqual({ totalCount: 1, nodes: [{ versionId }] });
    });
  });

  describe('update check', () => {
    /** Uploads `text` as a file of a version (REST multipart) and answers its hashes. */
    async function upload(versionId: number, text: string) {
      const form = new FormData();
      form.append('version_id', String(versionId));
      form.append('file', new Blob([text]), 'mod.txt');
      const res = await fetch(`${t.url}/api/mc-dm-files/`, {
        method: 'POST',
        headers: { 'Forum-Api-Key': owner.key },
        body: form,
      });
      const body = (await res.json()) as any;
      expect(res.status, JSON.stringify(body)).toBe(200);
      const row = await t.prisma.file.findUniqueOrThrow({ where: { id: body.file.file_id } });
      return { fileId: row.id, sha256: row.fileHash, sha1: row.sha1, sha512: row.sha512 };
    }
    const check = (json: Record<string, unknown>, key = reader) => t.rest('POST', '/api/mc-dm-updates/', { key, json });

    it('answers, for each known hash, its version and the newest matching one, on both faces', async () => {
      const { downloadId, versionId: v1 } = await download('Updatable', '1.0.0');
      const installed = await upload(v1, `updatable 1.0.0 ${kind}`);
      const v2 = (await create({ download_id: downloadId, version_string: '1.1.0', compatible_with: ['1.20'] })).body
        .version.version_id;
      const newest = await upload(v2, `updatable 1.1.0 ${kind}`);
      const v3 = (
        await create({
          download_id: downloadId,
          version_string: '1.2.0-beta.1',
          channel: 'beta',
          compatible_with: ['1.20'],
        })
      ).body.version.version_id;
      const unknown = `sha256:${'0'.repeat(64)}`;

      const r = await check({ hashes: [installed.sha256, unknown, `sha1:${installed.sha1.slice(5).toUpperCase()}`] });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      // One answer per known hash, in the order sent, with the hash as sent; the unknown one is absent.
      expect(r.body.updates.map((u: any) => u.hash)).toEqual([
        installed.sha256,
        `sha1:${installed.sha1.slice(5).toUpperCase()}`,
      ]);
      expect(r.body.updates[1].current_version.version_id).toBe(v1);
      expect(r.body.updates[0].current_version.version_id).toBe(v1);
      // No channel: any channel, so the beta is newest.
      expect(r.body.updates[0].latest_version.version_id).toBe(v3);
      const stable = await check({ hashes: [installed.sha512], channel: 'release' });
      expect(stable.body.updates[0].latest_version.version_id).toBe(v2);
      expect(stable.body.updates[0].latest_version.Files.map((f: any) => f.file_id)).toEqual([newest.fileId]);
      expect(stable.body.updates[0].latest_version.Files[0].file_hash).toBe(newest.sha256);
      const beta = await check({ hashes: [installed.sha256], channel: 'beta', compatible_with: ['1.20'] });
      expect(beta.body.updates[0].latest_version.version_id).toBe(v3);
      const none = await check({ hashes: [installed.sha256], compatible_with: ['1.21'] });
      expect(none.body.updates[0].latest_version).toBeNull();
      // Form bodies take the list as hashes[].
      const form = await t.rest('POST', '/api/mc-dm-updates/', {
        key: reader,
        form: { hashes: [installed.sha256], channel: 'release' },
      });
      expect(form.body.updates[0].latest_version.version_id).toBe(v2);
      // The files of a version's list are read with only what their visibility needs: a field asking for their
      // version or download gets the whole row, read for it.
      const nested = await t.gql(
        `query($h: [String!]!) { updates(hashes: $h, channel: RELEASE) { latest { fileList(first: 1) {
           fileId fileSize version { versionId versionString download { downloadId title } } } } } }`,
        { h: [installed.sha256] },
        reader,
      );
      expect(nested.errors).toBeUndefined();
      expect(nested.data.updates[0].latest.fileList).toEqual([
        {
          fileId: newest.fileId,
          fileSize: expect.anything(),
          version: { versionId: v2, versionString: '1.1.0', download: { downloadId, title: 'Updatable' } },
        },
      ]);

      // The same statements for one hash as for several (no statement per hash or per version).
      // The fewest of five runs: the outbox dispatcher's statements (events of earlier writes) may fall in one.
      const count = async (hashes: string[]) => {
        let fewest = Number.POSITIVE_INFINITY;
        for (let i = 0; i < 5; i++) {
          t.app.readCache.clear(); // a miss: the statements are counted, not a kept answer
          const before = t.app.db.statements();
          expect((await check({ hashes, channel: 'release' })).status).toBe(200);
          fewest = Math.min(fewest, t.app.db.statements() - before);
        }
        return fewest;
      };
      const one = await count([installed.sha256]);
      expect(one).toBeGreaterThan(0); // measured, not answered from the read cache
      expect(await count([installed.sha256, installed.sha1, installed.sha512, newest.sha256])).toBe(one);

      const g = await t.gql(
        'query($h: [String!]!) { updates(hashes: $h, channel: RELEASE) { hash current { versionId } latest { versionId fileList(first: 1) { fileId } } } }',
        { h: [installed.sha256, unknown] },
        reader,
      );
      expect(g.data.updates).toEqual([
        {
          hash: installed.sha256,
          current: { versionId: v1 },
          latest: { versionId: v2, fileList: [{ fileId: newest.fileId }] },
        },
      ]);
    });

    it('leaves out what the visitor may not view', async () => {
      const { downloadId, versionId } = await download('Hidden later', '1.0.0');
      const f = await upload(versionId, `hidden ${kind}`);
      const v2 = (await create({ download_id: downloadId, version_string: '2.0.0' })).body.version.version_id;
      // A deleted version is no update, and a file of a deleted version is unknown to readers.
      await t.rest('DELETE', `/api/mc-dm-versions/${v2}/`, { key: owner.key });
      expect((await check({ hashes: [f.sha256] })).body.updates[0].latest_version.version_id).toBe(versionId);
      await t.rest('DELETE', `/api/mc-dm-versions/${versionId}/`, { key: owner.key });
      expect((await check({ hashes: [f.sha256] })).body.updates).toEqual([]);
      expect((await check({ hashes: [f.sha256] }, owner.key)).body.updates[0].latest_version).toBeNull();
      await t.rest('DELETE', `/api/mc-dm-downloads/${downloadId}/`, { key: owner.key });
      expect((await check({ hashes: [f.sha256] })).body.updates).toEqual([]);
    });

    it("hides a soft-deleted version's files from readers, on every read path", async () => {
      const { downloadId } = await download('Withdrawn', '1.0.0');
      const v2 = (await create({ download_id: downloadId, version_string: '2.0.0' })).body.version.version_id;
      const f = await upload(v2, `withdrawn ${kind}`);
      await t.rest('DELETE', `/api/mc-dm-versions/${v2}/`, { key: owner.key });
      expect((await t.rest('GET', `/api/mc-dm-files/${f.fileId}/`, { key: reader })).status).toBe(404);
      expect((await t.rest('GET', `/api/mc-dm-files/${f.fileId}/data/`, { key: reader })).status).toBe(404);
      const list = await t.rest('GET', '/api/mc-dm-files/', { key: reader, query: { version_id: v2 } });
      expect(list.body.files).toEqual([]);
      const byHash = await t.rest('GET', '/api/mc-dm-files/', { key: reader, query: { hash: f.sha256 } });
      expect(byHash.body.files).toEqual([]);
      const g = await t.gql('query($id: Int!) { file(fileId: $id) { fileId } }', { id: f.fileId }, reader);
      expect(g.codes).toEqual(['mc_dm_api_error.file_not_found']);
      // The owner still sees and gets them.
      expect((await t.rest('GET', `/api/mc-dm-files/${f.fileId}/`, { key: owner.key })).status).toBe(200);
      expect((await t.rest('GET', `/api/mc-dm-files/${f.fileId}/data/`, { key: owner.key })).status).toBe(200);
      const owned = await t.rest('GET', '/api/mc-dm-files/', { key: owner.key, query: { version_id: v2 } });
      expect(owned.body.files.map((x: any) => x.file_id)).toEqual([f.fileId]);
    });

    it('answers the defined errors for bad input', async () => {
      const bad: [Record<string, unknown>, number, string, string?][] = [
        [{}, 400, 'required_input_missing'],
        [{ hashes: [] }, 400, 'required_input_missing'],
        [{ hashes: ['md5:abc'] }, 400, 'invalid_input', 'hashes'],
        [{ hashes: [`sha256:${'a'.repeat(63)}`] }, 400, 'invalid_input', 'hashes'],
        [
          { hashes: Array.from({ length: 501 }, (_, i) => `sha1:${i.toString(16).padStart(40, '0')}`) },
          400,
          'invalid_input',
          'hashes',
        ],
        [{ hashes: [`sha1:${'a'.repeat(40)}`], channel: 'stable' }, 400, 'invalid_input', 'channel'],
        [
          { hashes: [`sha1:${'a'.repeat(40)}`], compatible_with: ['x'.repeat(51)] },
          400,
          'invalid_input',
          'compatible_with',
        ],
        [{ hashes: 'sha1:zz' }, 400, 'invalid_input', 'hashes'],
      ];
      for (const [body, status, code, field] of bad) {
        const r = await check(body);
        expect(r.status, `${JSON.stringify(body).slice(0, 60)} → ${JSON.stringify(r.body)}`).toBe(status);
        expect(r.body.errors[0].code).toBe(code);
        if (field) expect(r.body.errors[0].params.field).toBe(field);
      }
      const full = await check({
        hashes: Array.from({ length: 500 }, (_, i) => `sha1:${i.toString(16).padStart(40, '0')}`),
      });
      expect(full.status).toBe(200);
      expect(full.body.updates).toEqual([]);
      const noScope = await t.key('USER', ['mc_dm_category:read'], other.userId);
      expect((await check({ hashes: [`sha1:${'a'.repeat(40)}`] }, noScope)).body.errors[0].code).toBe(
        'api_scope_missing',
      );
      expect((await t.rest('GET', '/api/mc-dm-updates/', { key: reader })).status).toBe(405);
    });
  });

  describe('dependency resolution', () => {
    /** A download with versions (the first made with the download), each optionally with fields; answers their ids. */
    async function release(title: string, specs: [string, Record<string, unknown>?][]) {
      const { downloadId, versionId } = await download(title, specs[0]![0]);
      const ids = [versionId];
      if (specs[0]![1]) {
        const r = await t.rest('PUT', `/api/mc-dm-versions/${versionId}/`, { key: owner.key, json: specs[0]![1] });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
      }
      for (const [versionString, fields] of specs.slice(1)) {
        const r = await create({ download_id: downloadId, version_string: versionString, ...fields });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        ids.push(r.body.version.version_id);
      }
      return { downloadId, ids };
    }
    const needs = (rows: [number, string, string?][]) =>
      rows.map(([download_id, version_range, kind]) => ({ download_id, version_range, kind: kind ?? 'required' }));
    const resolve = (versionId: number, query: Record<string, string> = {}, key = reader) =>
      t.rest('GET', `/api/mc-dm-versions/${versionId}/dependencies/`, { key, query });

    it('picks the newest matching version of each download, transitively, and reports conflicts and cycles', async () => {
      const lib = await release('Lib', [['1.0.0'], ['1.5.0'], ['2.0.0']]);
      const dated = await release('Dated', [['2026-01-01']]);
      const api = await release('Api', [['3.0.0']]);
      const gone = await release('Gone', [['1.0.0']]);
      const enemy = await release('Enemy', [['1.0.0']]);
      const extra = await release('Extra', [['1.0.0']]);
      const app = await release('App', [['1.0.0']]);
      // Lib 1.5.0 needs Api >=4 (none), Gone (deleted later), Enemy; it points back at App: a cycle.
      await t.rest('PUT', `/api/mc-dm-versions/${lib.ids[1]}/`, {
        key: owner.key,
        json: {
          dependencies: needs([
            [api.downloadId, '>=4'],
            [gone.downloadId, '*'],
            [enemy.downloadId, '*'],
            [app.downloadId, '^1'],
          ]),
        },
      });
      // Dated needs Lib ^2 (Lib 1.5.0 was chosen first: a version conflict), and a non-semver range would not parse.
      await t.rest('PUT', `/api/mc-dm-versions/${dated.ids[0]}/`, {
        key: owner.key,
        json: { dependencies: needs([[lib.downloadId, '^2.0.0']]) },
      });
      const set = await t.rest('PUT', `/api/mc-dm-versions/${app.ids[0]}/`, {
        key: owner.key,
        json: {
          dependencies: needs([
            [lib.downloadId, '^1.0.0'],
            [dated.downloadId, '*'],
            [enemy.downloadId, '*', 'incompatible'],
            [extra.downloadId, '*', 'optional'],
          ]),
        },
      });
      expect(set.status, JSON.stringify(set.body)).toBe(200);
      await t.rest('DELETE', `/api/mc-dm-downloads/${gone.downloadId}/`, { key: owner.key });

      const r = await resolve(app.ids[0]!);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(Object.keys(r.body)).toEqual(['versions', 'conflicts', 'cycles']);
      expect(r.body.versions.map((v: any) => v.version_id)).toEqual([lib.ids[1], dated.ids[0], enemy.ids[0]]);
      const reasons = r.body.conflicts.map((c: any) => [c.download_id, c.reason]);
      expect(reasons).toEqual(
        expect.arrayContaining([
          [api.downloadId, 'unsatisfiable'],
          [gone.downloadId, 'unavailable'],
          [lib.downloadId, 'version_conflict'],
          [enemy.downloadId, 'incompatible'],
        ]),
      );
      expect(reasons).toHaveLength(4);
      expect(r.body.conflicts.find((c: any) => c.reason === 'incompatible')).toMatchObject({
        version_id: app.ids[0],
        version_range: '*',
      });
      expect(r.body.cycles).toEqual([[app.ids[0], lib.ids[1]]]);
      // A super-user key may view the deleted download: it is then available.
      const sup = await resolve(app.ids[0]!, {}, SUPER_KEY);
      expect(sup.body.conflicts.map((c: any) => c.reason)).not.toContain('unavailable');

      const g = await t.gql(
        'query($id: Int!) { version(versionId: $id) { resolvedDependencies { versions { versionId } conflicts { downloadId reason } cycles } } }',
        { id: app.ids[0] },
        reader,
      );
      expect(g.errors).toBeUndefined();
      expect(g.data.version.resolvedDependencies.versions.map((v: any) => v.versionId)).toEqual(
        r.body.versions.map((v: any) => v.version_id),
      );
      expect(g.data.version.resolvedDependencies.cycles).toEqual(r.body.cycles);
      expect(g.data.version.resolvedDependencies.conflicts.map((c: any) => c.reason)).toContain('VERSION_CONFLICT');
    });

    it('filters by compatible_with and prefers releases', async () => {
      const lib = await release('Loader lib', [
        ['1.0.0', { compatible_with: ['fabric'] }],
        ['1.1.0', { compatible_with: ['forge'] }],
        ['1.2.0', { channel: 'beta', compatible_with: ['forge'] }],
      ]);
      const app = await release('Loader app', [['1.0.0']]);
      await t.rest('PUT', `/api/mc-dm-versions/${app.ids[0]}/`, {
        key: owner.key,
        json: { dependencies: needs([[lib.downloadId, '*']]) },
      });
      expect((await resolve(app.ids[0]!)).body.versions.map((v: any) => v.version_id)).toEqual([lib.ids[1]]);
      const fabric = await resolve(app.ids[0]!, { compatible_with: 'fabric' });
      expect(fabric.body.versions.map((v: any) => v.version_id)).toEqual([lib.ids[0]]);
      const none = await resolve(app.ids[0]!, { compatible_with: 'quilt' });
      expect(none.body).toEqual({
        versions: [],
        conflicts: [
          { version_id: app.ids[0], download_id: lib.downloadId, version_range: '*', reason: 'unsatisfiable' },
        ],
        cycles: [],
      });
      // Only a beta matches: it is taken.
      await t.rest('PUT', `/api/mc-dm-versions/${app.ids[0]}/`, {
        key: owner.key,
        json: { dependencies: needs([[lib.downloadId, '>=1.2.0-0']]) },
      });
      expect((await resolve(app.ids[0]!)).body.versions.map((v: any) => v.version_id)).toEqual([lib.ids[2]]);
    });

    it('stops at the depth bound and never loops', async () => {
      const chain: { downloadId: number; ids: number[] }[] = [];
      for (let i = 0; i < 13; i++) chain.push(await release(`Chain ${i}`, [['1.0.0']]));
      for (let i = 0; i < 12; i++) {
        const r = await t.rest('PUT', `/api/mc-dm-versions/${chain[i]!.ids[0]}/`, {
          key: owner.key,
          json: { dependencies: needs([[chain[i + 1]!.downloadId, '*']]) },
        });
        expect(r.status).toBe(200);
      }
      // The last one points back at the ninth: a cycle, beyond the bound from the first.
      await t.rest('PUT', `/api/mc-dm-versions/${chain[12]!.ids[0]}/`, {
        key: owner.key,
        json: { dependencies: needs([[chain[8]!.downloadId, '*']]) },
      });
      const r = await resolve(chain[0]!.ids[0]!);
      expect(r.body.versions).toHaveLength(10);
      expect(r.body.conflicts).toEqual([
        {
          version_id: chain[10]!.ids[0],
          download_id: chain[11]!.downloadId,
          version_range: '*',
          reason: 'depth_limit',
        },
      ]);
      // From the middle the cycle is within reach: reported once, not followed.
      const mid = await resolve(chain[6]!.ids[0]!);
      expect(mid.body.cycles).toEqual([chain.slice(8).map((c) => c.ids[0])]);
      expect(mid.body.versions).toHaveLength(6);
      expect(mid.body.conflicts).toEqual([]);
    });

    it('reads one statement per level of the graph (the versions and their downloads together)', async () => {
      const a = await release('Level A', [['1.0.0']]);
      const b = await release('Level B', [['1.0.0']]);
      const c = await release('Level C', [['1.0.0']]);
      for (const [from, to] of [
        [a, b],
        [b, c],
      ] as const) {
        const r = await t.rest('PUT', `/api/mc-dm-versions/${from.ids[0]}/`, {
          key: owner.key,
          json: { dependencies: needs([[to.downloadId, '^1.0.0']]) },
        });
        expect(r.status).toBe(200);
      }
      // The fewest of five runs: the outbox dispatcher's statements (events of earlier writes) may fall in one.
      const count = async (versionId: number) => {
        let fewest = Number.POSITIVE_INFINITY;
        for (let i = 0; i < 5; i++) {
          t.app.readCache.clear(); // a miss: the statements are counted, not a kept answer
          const before = t.app.db.statements();
          const r = await t.gql(
            'query($v: Int!) { resolveDependencies(versionId: $v) { versions { versionId } } }',
            { v: versionId },
            reader,
          );
          expect(r.errors).toBeUndefined();
          fewest = Math.min(fewest, t.app.db.statements() - before);
        }
        return fewest;
      };
      expect((await resolve(a.ids[0]!)).body.versions.map((v: any) => v.version_id)).toEqual([b.ids[0], c.ids[0]]);
      // A needs B needs C: two levels; B needs C: one. One more level, one more statement.
      expect((await count(a.ids[0]!)) - (await count(b.ids[0]!))).toBe(1);
    });

    it('answers the defined errors for bad input', async () => {
      expect((await resolve(999999)).body.errors[0].code).toBe('mc_dm_api_error.version_not_found');
      expect((await resolve(0)).body.errors[0]).toMatchObject({
        code: 'invalid_input',
        params: { field: 'version_id' },
      });
      const { versionId, downloadId } = await download('Resolve bad');
      const long = await resolve(versionId, { compatible_with: 'x'.repeat(51) });
      expect(long.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'compatible_with' } });
      await t.rest('DELETE', `/api/mc-dm-downloads/${downloadId}/`, { key: owner.key });
      expect((await resolve(versionId)).status).toBe(403);
      const noScope = await t.key('USER', ['mc_dm_category:read'], other.userId);
      expect((await resolve(versionId, {}, noScope)).body.errors[0].code).toBe('api_scope_missing');
    });
  });
});
