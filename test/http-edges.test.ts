// Edges of the HTTP surface: HEAD on the data route answers headers and counts no download; every 405 names the
// allowed methods in Allow; an id or number out of range is refused with the real range, on both faces.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';

const MAX = 2147483647;
const ID_RANGE = 'a whole number from 1 to 2147483647';
const NUMBER_RANGE = 'a whole number from 0 to 2147483647';

forEachDatabase((kind) => {
  let t: TestApp;
  let owner: { userId: number; key: string };
  let categoryId: number;
  let download: { download_id: number; current_version_id: number };
  let fileId: number;
  let linkId: number;
  const BYTES = '0123456789'.repeat(100);

  beforeAll(async () => {
    t = await startTestApp(kind, { externalUrlAllowPrivate: true });
    owner = await t.user('owner');
    categoryId = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Maps' } })).body.category
      .category_id;
    download = (
      await t.rest('POST', '/api/mc-dm-downloads/', {
        key: owner.key,
        form: { category_id: categoryId, title: 'Pack' },
      })
    ).body.download;
    const form = new FormData();
    form.append('version_id', String(download.current_version_id));
    form.append('file', new Blob([BYTES]), 'digits.txt');
    fileId = (
      (await (
        await fetch(`${t.url}/api/mc-dm-files/`, {
          method: 'POST',
          headers: { 'Forum-Api-Key': owner.key },
          body: form,
        })
      ).json()) as any
    ).file.file_id;
    linkId = (
      await t.rest('POST', '/api/mc-dm-files/', {
        key: owner.key,
        form: { version_id: download.current_version_id, external_url: 'https://example.com/tool.zip', link_only: 1 },
      })
    ).body.file.file_id;
  });
  afterAll(async () => {
    await t?.close();
  });

  const counts = async () => {
    // Kept answers may show a counter up to a second or two late (the read cache's documented rule); these checks
    // are about what was counted, so they read afresh.
    t.app.readCache.clear();
    const g = await t.gqlOk(
      `{ file(fileId: ${fileId}) { downloadCount } link: file(fileId: ${linkId}) { downloadCount } download(downloadId: ${download.download_id}) { downloadCount currentVersion { downloadCount } } }`,
    );
    const rest = (await t.rest('GET', `/api/mc-dm-files/${fileId}/`)).body.file.download_count;
    expect(rest).toBe(g.file.downloadCount); // both faces agree
    return {
      file: g.file.downloadCount,
      link: g.link.downloadCount,
      download: g.download.downloadCount,
      version: g.download.currentVersion.downloadCount,
    };
  };

  describe('HEAD on the data route', () => {
    it('answers the headers of a GET, no body, and counts nothing (whole file, range, link-only)', async () => {
      const before = await counts();
      const head = await fetch(`${t.url}/api/mc-dm-files/${fileId}/data/`, {
        method: 'HEAD',
        headers: { 'Forum-Api-Key': SUPER_KEY },
      });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe(String(BYTES.length));
      expect(head.headers.get('etag')).toMatch(/^"sha256:/);
      expect(head.headers.get('content-disposition')).toMatch(/^attachment;/);
      expect((await head.arrayBuffer()).byteLength).toBe(0);
      const ranged = await fetch(`${t.url}/api/mc-dm-files/${fileId}/data/`, {
        method: 'HEAD',
        headers: { 'Forum-Api-Key': SUPER_KEY, range: 'bytes=0-9' },
      });
      expect(ranged.status).toBe(206);
      expect(ranged.headers.get('content-range')).toBe(`bytes 0-9/${BYTES.length}`);
      const link = await fetch(`${t.url}/api/mc-dm-files/${linkId}/data/`, {
        method: 'HEAD',
        headers: { 'Forum-Api-Key': SUPER_KEY },
        redirect: 'manual',
      });
      expect(link.status).toBe(302);
      expect(link.headers.get('location')).toBe('https://example.com/tool.zip');
      expect(await counts()).toEqual(before);

      // a GET from byte 0 still counts once on the file, its version and its download
      const get = await fetch(`${t.url}/api/mc-dm-files/${fileId}/data/`, { headers: { 'Forum-Api-Key': SUPER_KEY } });
      expect(await get.text()).toBe(BYTES);
      expect(await counts()).toEqual({
        ...before,
        file: before.file + 1,
        download: before.download + 1,
        version: before.version + 1,
      });
    });
  });

  describe('405 names the allowed methods in Allow', () => {
    it('on REST routes, the data route, /graphql, the pages and /metrics', async () => {
      const cases: [string, string, string][] = [
        ['PATCH', '/api/mc-dm-categories/', 'GET, POST'],
        ['POST', `/api/mc-dm-categories/${categoryId}/`, 'GET, PUT, DELETE'],
        ['HEAD', '/api/mc-dm-downloads/', 'GET, POST'],
        ['POST', `/api/mc-dm-files/${fileId}/data/`, 'GET, HEAD'],
        ['DELETE', `/api/mc-dm-files/${fileId}/data/`, 'GET, HEAD'],
        ['PUT', '/graphql', 'GET, POST'],
        ['POST', '/', 'GET, HEAD'],
        ['DELETE', '/api/openapi.json', 'GET, HEAD'],
        ['POST', '/metrics', 'GET, HEAD'],
      ];
      for (const [method, path, allow] of cases) {
        const r = await fetch(`${t.url}${path}`, { method, headers: { 'Forum-Api-Key': SUPER_KEY } });
        expect(r.status, `${method} ${path}`).toBe(405);
        expect(r.headers.get('allow'), `${method} ${path}`).toBe(allow);
        if (method !== 'HEAD' && path !== '/metrics') {
          const body = (await r.json()) as any;
          expect(body.errors[0].code ?? body.errors[0].extensions?.code, `${method} ${path}`).toBe(
            'method_not_allowed',
          );
        }
      }
    });
  });

  describe('numbers out of range are refused with the real range', () => {
    const refused = (r: { status: number; body: any }, field: string, range: string) => {
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.errors[0].code).toBe('invalid_input');
      expect(r.body.errors[0].params.field).toBe(field);
      expect(r.body.errors[0].message).toContain(range);
      expect(r.body.errors[0].message).not.toContain('0 or more');
    };

    it('REST: ids in the path, the query and the body; other numbers; the data route; the upload precheck', async () => {
      for (const id of ['2147483648', '0', '-1', '99999999999999999999']) {
        refused(await t.rest('GET', `/api/mc-dm-downloads/${id}/`), 'download_id', ID_RANGE);
        refused(await t.rest('GET', `/api/mc-dm-files/${id}/data/`), 'file_id', ID_RANGE);
      }
      refused(
        await t.rest('GET', '/api/mc-dm-comments/', { query: { download_id: '2147483648' } }),
        'download_id',
        NUMBER_RANGE,
      ); // optional filter: 0 allowed
      const categories = (await t.rest('GET', '/api/mc-dm-categories/')).body.pagination.total;
      refused(
        await t.rest('POST', '/api/mc-dm-downloads/', {
          key: owner.key,
          form: { category_id: '2147483648', title: 'x' },
        }),
        'category_id',
        ID_RANGE,
      );
      refused(
        await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'x', display_order: '2147483648' } }),
        'display_order',
        NUMBER_RANGE,
      );
      refused(
        await t.rest('PUT', `/api/mc-dm-categories/${categoryId}/`, { form: { max_files_per_version: '-3' } }),
        'max_files_per_version',
        NUMBER_RANGE,
      );
      expect((await t.rest('GET', '/api/mc-dm-categories/')).body.pagination.total).toBe(categories); // nothing created
      const form = new FormData();
      form.append('version_id', '2147483648');
      form.append('file', new Blob(['x']), 'x.txt');
      const up = await fetch(`${t.url}/api/mc-dm-files/`, {
        method: 'POST',
        headers: { 'Forum-Api-Key': owner.key },
        body: form,
      });
      refused({ status: up.status, body: await up.json() }, 'version_id', ID_RANGE);
      // the largest id is accepted as a number (and simply not found)
      expect((await t.rest('GET', `/api/mc-dm-downloads/${MAX}/`)).body.errors[0].code).toBe(
        'mc_dm_api_error.download_not_found',
      );
      // 0 where it means "none" stays accepted
      expect(
        (
          await t.rest('PUT', `/api/mc-dm-downloads/${download.download_id}/`, {
            key: owner.key,
            form: { prefix_id: 0 },
          })
        ).status,
      ).toBe(200);
    });

    it('GraphQL: an Int past 32 bits names the range, as a literal or a variable; negative numbers name theirs', async () => {
      const literal = await t.gql(`{ download(downloadId: 2147483648) { title } }`);
      expect(literal.codes).toEqual(['invalid_input']);
      expect(literal.errors![0].message).toContain(ID_RANGE);
      const variable = await t.gql(`query($id: Int!) { download(downloadId: $id) { title } }`, { id: 2147483648 });
      expect(variable.status).toBe(400);
      expect(variable.codes).toEqual(['invalid_input']);
      expect(variable.errors![0].message).toContain(ID_RANGE);
      const negative = await t.gql(
        `mutation { updateCategory(input: { categoryId: ${categoryId}, displayOrder: -1 }) { category { displayOrder } } }`,
      );
      expect(negative.codes).toEqual(['invalid_input']);
      expect(negative.errors![0].message).toContain(
        `displayOrder must be ${NUMBER_RANGE}`.replace('displayOrder', negative.errors![0].extensions.params.field),
      );
    });
  });
});
