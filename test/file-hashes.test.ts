// Files by hash: SHA-1, SHA-256 and SHA-512 computed in the pass that stores an upload, looked up on both faces
// (GraphQL `filesByHash`, REST `GET /api/mc-dm-files/?hash=`), answering only files the visitor may view; older files
// get their hashes from the backfill job.
import crypto from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { backfillFileHashes } from '../src/jobs/file-hashes.js';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

const digest = (algorithm: string, bytes: Buffer) =>
  `${algorithm}:${crypto.createHash(algorithm).update(bytes).digest('hex')}`;
const FILE_QUERY = `query($h: [String!]!) { filesByHash(hashes: $h) { fileId fileHash sha1 sha512 version { versionId download { downloadId } } } }`;

forEachDatabase((kind) => {
  let t: TestApp;
  let owner: { key: string; userId: number };
  let other: { key: string; userId: number };
  let downloadId: number;
  let versionId: number;
  const bytes = Buffer.from(`the bytes of a mod, ${kind}`);
  let fileId: number;

  beforeAll(async () => {
    t = await startTestApp(kind, { readCacheMb: 0 });
    owner = await t.user('owner');
    other = await t.user('other');
    const category = await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Mods' } });
    const d = await t.rest('POST', '/api/mc-dm-downloads/', {
      key: owner.key,
      form: { category_id: category.body.category.category_id, title: 'Mod', version_string: '1.0' },
    });
    downloadId = d.body.download.download_id;
    versionId = d.body.download.current_version_id;
    const form = new FormData();
    form.append('version_id', String(versionId));
    form.append('file', new Blob([new Uint8Array(bytes)]), 'mod.txt');
    const res = await fetch(`${t.url}/api/mc-dm-files/`, {
      method: 'POST',
      headers: { 'Forum-Api-Key': owner.key },
      body: form,
    });
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(200);
    fileId = body.file.file_id;
  });
  afterAll(() => t?.close());

  it('an upload stores its SHA-1, SHA-256 and SHA-512, computed in one pass', async () => {
    const { file } = await t.gqlOk('query($id: Int!) { file(fileId: $id) { fileHash sha1 sha512 } }', { id: fileId });
    expect(file).toEqual({
      fileHash: digest('sha256', bytes),
      sha1: digest('sha1', bytes),
      sha512: digest('sha512', bytes),
    });
  });

  it('GraphQL filesByHash finds the file by any of the three (hex in either case), with its version and download', async () => {
    for (const algorithm of ['sha1', 'sha256', 'sha512']) {
      const [name, hex] = digest(algorithm, bytes).split(':') as [string, string];
      const { filesByHash } = await t.gqlOk(FILE_QUERY, { h: [`${name}:${hex.toUpperCase()}`] }, owner.key);
      expect(filesByHash).toEqual([
        expect.objectContaining({ fileId, version: { versionId, download: { downloadId } } }),
      ]);
    }
    const unknown = await t.gqlOk(FILE_QUERY, { h: [`sha1:${'0'.repeat(40)}`] }, owner.key);
    expect(unknown.filesByHash).toEqual([]);
  });

  it('REST GET /api/mc-dm-files/?hash= takes the parameter repeated, and answers the files envelope', async () => {
    const r = await t.rest(
      'GET',
      `/api/mc-dm-files/?hash=${digest('sha1', bytes)}&hash=${encodeURIComponent(`sha512:${'a'.repeat(128)}`)}`,
      { key: owner.key },
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.files.map((f: any) => f.file_id)).toEqual([fileId]);
    expect(r.body.files[0].file_hash).toBe(digest('sha256', bytes));
    expect(r.body.pagination).toMatchObject({ page: 1, total: 1 });
  });

  it('answers only files the visitor may view', async () => {
    const hidden = await t.rest('POST', '/api/mc-dm-downloads/', {
      key: owner.key,
      form: {
        category_id: (await t.rest('GET', `/api/mc-dm-downloads/${downloadId}/`)).body.download.category_id,
        title: 'Gone',
        version_string: '1',
      },
    });
    const form = new FormData();
    form.append('version_id', String(hidden.body.download.current_version_id));
    const secret = Buffer.from(`a file of a deleted download, ${kind}`);
    form.append('file', new Blob([new Uint8Array(secret)]), 'gone.txt');
    expect(
      (
        await fetch(`${t.url}/api/mc-dm-files/`, {
          method: 'POST',
          headers: { 'Forum-Api-Key': owner.key },
          body: form,
        })
      ).status,
    ).toBe(200);
    expect(
      (await t.rest('DELETE', `/api/mc-dm-downloads/${hidden.body.download.download_id}/`, { key: owner.key })).status,
    ).toBe(200);
    const h = [digest('sha256', secret)];
    expect((await t.gqlOk(FILE_QUERY, { h }, other.key)).filesByHash).toEqual([]);
    expect((await t.rest('GET', '/api/mc-dm-files/', { key: other.key, query: { hash: h[0]! } })).body.files).toEqual(
      [],
    );
    // A super-user key sees every state.
    expect((await t.gqlOk(FILE_QUERY, { h })).filesByHash).toHaveLength(1);
  });

  it('refuses bad input on both faces, naming it: malformed, too many, none', async () => {
    const gql = async (h: string[]) => (await t.gql(FILE_QUERY, { h }, owner.key)).errors?.[0];
    const malformed = await gql(['sha256:xyz']);
    expect(malformed.extensions.code).toBe('invalid_input');
    expect(malformed.message).toContain('sha256:xyz');
    const rest = await t.rest('GET', '/api/mc-dm-files/', { key: owner.key, query: { hash: 'sha256:xyz' } });
    expect(rest.status).toBe(400);
    expect(rest.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'hash' } });
    expect(rest.body.errors[0].message).toContain('sha256:xyz');
    expect((await t.rest('GET', '/api/mc-dm-files/', { key: owner.key, query: { hash: 'md5:abc' } })).status).toBe(400);

    const many = Array.from({ length: 101 }, (_, i) => `sha1:${i.toString(16).padStart(40, '0')}`);
    expect((await gql(many)).extensions.code).toBe('invalid_input');
    const qs = many.map((h) => `hash=${h}`).join('&');
    const tooMany = await t.rest('GET', `/api/mc-dm-files/?${qs}`, { key: owner.key });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.errors[0].message).toContain('At most 100');

    expect((await gql([])).extensions.code).toBe('required_input_missing');
  });

  it('the backfill job hashes files stored before the columns existed, and leaves a missing blob for next time', async () => {
    await t.prisma.file.update({ where: { id: fileId }, data: { sha1: '', sha512: '' } });
    const r = await backfillFileHashes(t.prisma, t.app.services.storage);
    expect(r.hashed).toBeGreaterThanOrEqual(1);
    const row = await t.prisma.file.findUniqueOrThrow({ where: { id: fileId } });
    expect([row.sha1, row.sha512]).toEqual([digest('sha1', bytes), digest('sha512', bytes)]);
    // A row whose blob is gone is counted as missing and keeps its empty hashes.
    await t.prisma.file.update({ where: { id: fileId }, data: { sha1: '', storageKey: 'no/such/blob' } });
    const again = await backfillFileHashes(t.prisma, t.app.services.storage);
    expect(again).toEqual({ hashed: 0, missing: 1 });
    expect((await t.prisma.file.findUniqueOrThrow({ where: { id: fileId } })).sha1).toBe('');
  });
});
