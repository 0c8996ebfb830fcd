// Files end to end: uploads on both faces, processors, storage, external URLs, list/get/update/delete, the bytes.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';
import type { LocalStorage } from '../src/files/storage/local.js';
import { revalidateFiles } from '../src/jobs/revalidate.js';

const FIELDS = [
  'file_id',
  'version_id',
  'filename',
  'display_label',
  'file_size',
  'file_hash',
  'mime_type',
  'is_primary',
  'is_externally_linked',
  'external_url',
  'validation_status',
  'display_order',
  'download_count',
  'display_name',
  'is_external',
  'is_link_only',
];
const FULL = [
  ...FIELDS,
  'external_source_type',
  'is_available',
  'validation_attempts',
  'validation_error',
  'last_attempt_date',
];

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082',
  'hex',
);

/** A minimal stored (uncompressed) zip holding one file, or one whose entry claims `declared` uncompressed bytes. */
function zip(name: string, content: Buffer, declared = content.length): Buffer {
  const crc = zlib.crc32(content);
  const n = Buffer.from(name);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt32LE(crc >>> 0, 14);
  local.writeUInt32LE(content.length, 18);
  local.writeUInt32LE(declared, 22);
  local.writeUInt16LE(n.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt32LE(crc >>> 0, 16);
  central.writeUInt32LE(content.length, 20);
  central.writeUInt32LE(declared, 24);
  central.writeUInt16LE(n.length, 28);
  const cdOffset = local.length + n.length + content.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + n.length, 12);
  end.writeUInt32LE(cdOffset, 16);
  return Buffer.concat([local, n, content, central, n, end]);
}

const sha = (b: Buffer) => `sha256:${crypto.createHash('sha256').update(b).digest('hex')}`;

forEachDatabase((kind) => {
  let t: TestApp;
  let owner: { userId: number; key: string };
  let other: { userId: number; key: string };
  let mod: { userId: number; key: string };
  let cat: number;
  let remote: http.Server;
  let remoteUrl: string;
  let remoteHits = 0;

  beforeAll(async () => {
    remote = http.createServer((req, res) => {
      remoteHits++;
      if (req.url === '/pack.zip') {
        res.writeHead(200, { 'content-type': 'application/zip' });
        return res.end(zip('a.txt', Buffer.from('remote')));
      }
      if (req.url === '/named') {
        res.writeHead(200, { 'content-disposition': 'attachment; filename="from-header.png"' });
        return res.end(PNG);
      }
      if (req.url === '/moved') {
        res.writeHead(302, { location: '/pack.zip' });
        return res.end();
      }
      if (req.url?.startsWith('/loop')) {
        res.writeHead(302, { location: `/loop${Number(req.url.slice(5) || 0) + 1}` });
        return res.end();
      }
      res.writeHead(404);
      res.end('missing');
    });
    await new Promise<void>((r) => remote.listen(0, '127.0.0.1', () => r()));
    remoteUrl = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
    t = await startTestApp(kind, { externalUrlAllowPrivate: true });
    owner = await t.user('owner');
    other = await t.user('other');
    mod = await t.user('mod', { isModerator: true });
    cat = await category('Files');
  });
  afterAll(async () => {
    await t?.close();
    remote?.close();
  });

  async function category(title: string, knobs: Record<string, any> = {}): Promise<number> {
    const id = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title } })).body.category.category_id;
    if (Object.keys(knobs).length) await t.rest('PUT', `/api/mc-dm-categories/${id}/`, { form: knobs });
    return id;
  }
  async function version(categoryId = cat): Promise<{ downloadId: number; versionId: number }> {
    const d = (
      await t.rest('POST', '/api/mc-dm-downloads/', {
        key: owner.key,
        form: { category_id: categoryId, title: 'With files' },
      })
    ).body.download;
    return { downloadId: d.download_id, versionId: d.current_version_id };
  }
  async function upload(
    app: TestApp,
    fields: Record<string, string | number>,
    file?: { name: string; bytes: Buffer },
    key = owner.key,
    query = '',
  ) {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, String(v));
    if (file) form.append('file', new Blob([new Uint8Array(file.bytes)]), file.name);
    const res = await fetch(`${app.url}/api/mc-dm-files/${query}`, {
      method: 'POST',
      headers: { 'Forum-Api-Key': key },
      body: form,
    });
    return { status: res.status, body: (await res.json()) as any, headers: res.headers };
  }
  const blobPath = async (fileId: number) => {
    const row = await t.prisma.file.findUniqueOrThrow({ where: { id: fileId } });
    return (t.app.services.storage as LocalStorage).pathOf(row.storageKey!);
  };

  describe('upload', () => {
    it('streams a blob into storage, hashes it, sniffs its MIME type and makes the first file primary (REST)', async () => {
      const v = await version();
      const r = await upload(
        t,
        { version_id: v.versionId, display_label: 'Logo', display_order: 3 },
        { name: 'logo.png', bytes: PNG },
        owner.key,
        '?with=full',
      );
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const f = r.body.file;
      expect(Object.keys(f)).toEqual(FULL);
      expect(f).toMatchObject({
        version_id: v.versionId,
        filename: 'logo.png',
        display_label: 'Logo',
        file_size: PNG.length,
        file_hash: sha(PNG),
        mime_type: 'image/png',
        is_primary: true,
        is_externally_linked: false,
        external_url: null,
        validation_status: 'passed',
        display_order: 3,
        download_count: 0,
        display_name: 'Logo',
        is_external: false,
        is_link_only: false,
        external_source_type: null,
        is_available: true,
        validation_attempts: 1,
        validation_error: null,
      });
      expect(fs.readFileSync(await blobPath(f.file_id))).toEqual(PNG);
      const second = await upload(
        t,
        { version_id: v.versionId },
        { name: 'readme.txt', bytes: Buffer.from('read me') },
      );
      expect(second.body.file).toMatchObject({
        is_primary: false,
        mime_type: 'text/plain',
        display_name: 'readme.txt',
      });
      expect(fs.readdirSync((t.app.services.storage as LocalStorage).tmpDir)).toEqual([]);
    });

    it('treats filenames as data: no path, no control characters, limited length', async () => {
      const v = await version();
      const cases: [string, string][] = [
        ['../../etc/passwd', 'passwd'],
        ['..\\..\\boot.ini', 'boot.ini'],
        [`${'x'.repeat(300)}.txt`, `${'x'.repeat(196)}.txt`],
      ];
      for (const [name, stored] of cases) {
        const r = await upload(t, { version_id: v.versionId, display_order: 0 }, { name, bytes: Buffer.from('data') });
        expect(r.status, name).toBe(200);
        expect(r.body.file.filename, name).toBe(stored);
        expect((await t.prisma.file.findUniqueOrThrow({ where: { id: r.body.file.file_id } })).storageKey).toMatch(
          /^blobs\/\d+\/\d+\/[0-9a-f-]{36}$/,
        );
      }
      // control characters cannot travel in a multipart header (400), but can in a URL
      for (const name of ['a\u0000b.txt', 'a\u0007b.txt']) {
        const bad = await upload(t, { version_id: v.versionId }, { name, bytes: Buffer.from('data') });
        expect(bad.status).toBe(400);
        expect(bad.body.errors[0]).toMatchObject({ code: 'invalid_input', params: { field: 'body' } });
      }
      const link = await t.rest('POST', '/api/mc-dm-files/', {
        key: owner.key,
        form: { version_id: v.versionId, external_url: `${remoteUrl}/dir/a%07b%1Bc%00.txt`, link_only: 1 },
      });
      expect(link.body.file.filename).toBe('abc.txt');
    });

    it('uploads are not held to MAX_BODY_BYTES (they stream under MAX_UPLOAD_BYTES) on both faces', async () => {
      const v = await version();
      const bytes = crypto.randomBytes(t.config.maxBodyBytes * 2 + 123);
      const r = await upload(t, { version_id: v.versionId }, { name: 'big.bin', bytes });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.file).toMatchObject({ file_size: bytes.length, file_hash: sha(bytes) });
      const form = new FormData();
      form.append(
        'operations',
        JSON.stringify({
          query: `mutation($f: Upload!) { createFile(input: { versionId: ${v.versionId}, file: $f }) { file { fileSize fileHash } } }`,
          variables: { f: null },
        }),
      );
      form.append('map', JSON.stringify({ 0: ['variables.f'] }));
      form.append('0', new Blob([new Uint8Array(bytes)]), 'big2.bin');
      const g = (await (
        await fetch(`${t.url}/graphql`, { method: 'POST', headers: { 'Forum-Api-Key': owner.key }, body: form })
      ).json()) as any;
      expect(g.errors).toBeUndefined();
      expect(g.data.createFile.file).toEqual({ fileSize: bytes.length, fileHash: sha(bytes) });
    });

    it('uploads through GraphQL with the multipart request spec', async () => {
      const v = await version();
      const form = new FormData();
      form.append(
        'operations',
        JSON.stringify({
          query:
            'mutation($f: Upload!, $v: Int!) { createFile(input: { versionId: $v, file: $f, isPrimary: true }) { file { fileId filename fileHash validationStatus isPrimary } } }',
          variables: { f: null, v: v.versionId },
        }),
      );
      form.append('map', JSON.stringify({ 0: ['variables.f'] }));
      const bytes = zip('inside.txt', Buffer.from('zip body'));
      form.append('0', new Blob([new Uint8Array(bytes)]), 'pack.zip');
      const res = await fetch(`${t.url}/graphql`, {
        method: 'POST',
        headers: { 'Forum-Api-Key': owner.key },
        body: form,
      });
      const body = (await res.json()) as any;
      expect(body.errors).toBeUndefined();
      expect(body.data.createFile.file).toMatchObject({
        filename: 'pack.zip',
        fileHash: sha(bytes),
        validationStatus: 'PASSED',
        isPrimary: true,
      });
    });

    it('needs exactly one of file and external_url (422 upload_exclusive / upload_required)', async () => {
      const v = await version();
      const both = await upload(
        t,
        { version_id: v.versionId, external_url: `${remoteUrl}/pack.zip` },
        { name: 'a.txt', bytes: Buffer.from('a') },
      );
      expect(both.status).toBe(422);
      expect(both.body.errors[0].code).toBe('mc_dm_api_error.upload_exclusive');
      const neither = await t.rest('POST', '/api/mc-dm-files/', { key: owner.key, form: { version_id: v.versionId } });
      expect(neither.status).toBe(422);
      expect(neither.body.errors[0].code).toBe('mc_dm_api_error.upload_required');
      const gql = await t.gql(
        `mutation { createFile(input: { versionId: ${v.versionId} }) { file { fileId } } }`,
        {},
        owner.key,
      );
      expect(gql.codes).toEqual(['mc_dm_api_error.upload_required']);
      expect(await t.prisma.file.count({ where: { versionId: v.versionId } })).toBe(0);
      const missing = await upload(t, {}, { name: 'a.txt', bytes: Buffer.from('a') });
      expect(missing.status).toBe(400);
      expect(missing.body.errors[0]).toMatchObject({
        code: 'required_input_missing',
        params: { missing: ['version_id'] },
      });
      expect(
        (await upload(t, { version_id: 99999 }, { name: 'a.txt', bytes: Buffer.from('a') })).body.errors[0].code,
      ).toBe('mc_dm_api_error.version_not_found');
      expect(
        (await upload(t, { version_id: v.versionId }, { name: 'a.txt', bytes: Buffer.from('a') }, other.key)).status,
      ).toBe(403);
    });

    it('processors reject with 422 processor_rejected, keeping a failed row in quarantine for moderators', async () => {
      const strict = await category('Strict files', { allowed_file_types: 'zip,png', max_file_size: 5000 });
      const v = await version(strict);
      const cases: [string, Buffer, string][] = [
        ['fake.zip', Buffer.from('not a zip at all'), 'magic-byte'],
        ['picture.png', zip('x', Buffer.from('zip')), 'magic-byte'],
        ['notes.txt', Buffer.from('plain text'), 'file-type'],
        ['big.png', Buffer.concat([PNG, Buffer.alloc(6000)]), 'size'],
        ['bomb.zip', zip('zeros.bin', Buffer.alloc(100), 50_000_000), 'decompression-bomb'],
      ];
      for (const [name, bytes, processor] of cases) {
        const r = await upload(t, { version_id: v.versionId }, { name, bytes });
        expect(r.status, name).toBe(422);
        expect(r.body.errors[0].code).toBe('mc_dm_api_error.processor_rejected');
        expect(r.body.errors[0].params.processor, name).toBe(processor);
        expect(typeof r.body.errors[0].params.reason).toBe('string');
        const row = await t.prisma.file.findUniqueOrThrow({ where: { id: r.body.errors[0].params.file_id } });
        expect(row).toMatchObject({
          validationStatus: 'failed',
          isQuarantined: true,
          isAvailable: false,
          filename: name,
        });
        expect(row.validationError).toContain(processor);
        expect(row.storageKey).toMatch(/^quarantine\//);
        expect(fs.existsSync(await blobPath(row.id))).toBe(true);
      }
      const gz = zlib.gzipSync(Buffer.alloc(2_000_000));
      const gzr = await upload(t, { version_id: (await version()).versionId }, { name: 'zeros.gz', bytes: gz });
      expect(gzr.body.errors[0].params.processor).toBe('decompression-bomb');
      // failed rows are listed to those who manage the files, not to others
      const asOwner = await t.rest('GET', '/api/mc-dm-files/', { key: owner.key, query: { version_id: v.versionId } });
      expect(asOwner.body.files).toHaveLength(cases.length);
      const asOther = await t.rest('GET', '/api/mc-dm-files/', { key: other.key, query: { version_id: v.versionId } });
      expect(asOther.body.files).toEqual([]);
      expect(asOther.body.pagination.total).toBe(cases.length);
      // a passing file still goes in, and is primary: failed rows take no place
      const ok = await upload(t, { version_id: v.versionId }, { name: 'ok.png', bytes: PNG });
      expect(ok.body.file).toMatchObject({ validation_status: 'passed', is_primary: true });
    });

    it('enforces max_files_per_version and allow_multi_file with 422 too_many_files', async () => {
      const one = await category('One file', { allow_multi_file: 0 });
      const v = await version(one);
      expect((await upload(t, { version_id: v.versionId }, { name: 'a.txt', bytes: Buffer.from('a') })).status).toBe(
        200,
      );
      const r = await upload(t, { version_id: v.versionId }, { name: 'b.txt', bytes: Buffer.from('b') });
      expect(r.status).toBe(422);
      expect(r.body.errors[0].code).toBe('mc_dm_api_error.too_many_files');
      const two = await category('Two files', { max_files_per_version: 2 });
      const v2 = await version(two);
      for (const n of ['a', 'b'])
        expect(
          (await upload(t, { version_id: v2.versionId }, { name: `${n}.txt`, bytes: Buffer.from(n) })).status,
        ).toBe(200);
      expect(
        (
          await t.rest('POST', '/api/mc-dm-files/', {
            key: owner.key,
            form: { version_id: v2.versionId, external_url: `${remoteUrl}/x.zip`, link_only: 1 },
          })
        ).body.errors[0].code,
      ).toBe('mc_dm_api_error.too_many_files');
      expect(await t.prisma.file.count({ where: { versionId: v2.versionId } })).toBe(2);
    });
  });

  describe('server upload limit', () => {
    it('aborts an upload over MAX_UPLOAD_BYTES with 422 upload_exceeds_php_limit: no row, no temporary file', async () => {
      const small = await startTestApp(kind, { maxUploadBytes: 2000 });
      try {
        const u = await small.user('uploader');
        const c = (await small.rest('POST', '/api/mc-dm-categories/', { form: { title: 'c' } })).body.category
          .category_id;
        const v = (
          await small.rest('POST', '/api/mc-dm-downloads/', { key: u.key, form: { category_id: c, title: 'd' } })
        ).body.download.current_version_id;
        const r = await upload(small, { version_id: v }, { name: 'big.bin', bytes: Buffer.alloc(50_000, 7) }, u.key);
        expect(r.status).toBe(422);
        expect(r.body.errors[0]).toMatchObject({
          code: 'mc_dm_api_error.upload_exceeds_php_limit',
          params: { limit: 2000 },
        });
        expect(await small.prisma.file.count()).toBe(0);
        expect(fs.readdirSync((small.app.services.storage as LocalStorage).tmpDir)).toEqual([]);
        // the same through /graphql
        const form = new FormData();
        form.append(
          'operations',
          JSON.stringify({
            query: `mutation($f: Upload!) { createFile(input: { versionId: ${v}, file: $f }) { file { fileId } } }`,
            variables: { f: null },
          }),
        );
        form.append('map', JSON.stringify({ 0: ['variables.f'] }));
        form.append('0', new Blob([new Uint8Array(50_000).fill(7)]), 'big.bin');
        const g = (await (
          await fetch(`${small.url}/graphql`, { method: 'POST', headers: { 'Forum-Api-Key': u.key }, body: form })
        ).json()) as any;
        expect(g.errors[0].extensions.code).toBe('mc_dm_api_error.upload_exceeds_php_limit');
        expect(await small.prisma.file.count()).toBe(0);
        expect(fs.readdirSync((small.app.services.storage as LocalStorage).tmpDir)).toEqual([]);
        // and the service still answers
        expect(
          (await upload(small, { version_id: v }, { name: 'ok.txt', bytes: Buffer.from('fits') }, u.key)).status,
        ).toBe(200);
      } finally {
        await small.close();
      }
    });
  });

  describe('external URLs', () => {
    it('link_only=1 stores the link without any request', async () => {
      const v = await version();
      const before = remoteHits;
      const r = await t.rest('POST', '/api/mc-dm-files/', {
        key: owner.key,
        query: { with: 'full' },
        form: { version_id: v.versionId, external_url: `${remoteUrl}/files/tool.zip`, link_only: 1 },
      });
      expect(r.status).toBe(200);
      expect(r.body.file).toMatchObject({
        filename: 'tool.zip',
        is_externally_linked: true,
        is_external: true,
        is_link_only: true,
        external_url: `${remoteUrl}/files/tool.zip`,
        validation_status: 'skipped',
        external_source_type: 'direct-url',
        file_size: 0,
      });
      expect(remoteHits).toBe(before);
      const data = await fetch(`${t.url}/api/mc-dm-files/${r.body.file.file_id}/data/`, {
        headers: { 'Forum-Api-Key': owner.key },
        redirect: 'manual',
      });
      expect(data.status).toBe(302);
      expect(data.headers.get('location')).toBe(`${remoteUrl}/files/tool.zip`);
    });

    it('link_only=0 probes the URL (following redirects) and ingests the body through the processors', async () => {
      const v = await version();
      const r = await t.rest('POST', '/api/mc-dm-files/', {
        key: owner.key,
        query: { with: 'full' },
        form: { version_id: v.versionId, external_url: `${remoteUrl}/moved` },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const bytes = zip('a.txt', Buffer.from('remote'));
      expect(r.body.file).toMatchObject({
        filename: 'pack.zip',
        file_hash: sha(bytes),
        file_size: bytes.length,
        is_externally_linked: true,
        is_link_only: false,
        validation_status: 'passed',
        external_source_type: 'direct-url',
        validation_attempts: 1,
        is_available: true,
      });
      expect(fs.readFileSync(await blobPath(r.body.file.file_id))).toEqual(bytes);
      const named = await t.rest('POST', '/api/mc-dm-files/', {
        key: owner.key,
        form: { version_id: v.versionId, external_url: `${remoteUrl}/named` },
      });
      expect(named.body.file).toMatchObject({ filename: 'from-header.png', mime_type: 'image/png' });
    });

    it('a failed probe answers 422 external_url_unreachable and keeps a failed row only with keep_failed=1', async () => {
      const v = await version();
      const none = await t.rest('POST', '/api/mc-dm-files/', {
        key: owner.key,
        form: { version_id: v.versionId, external_url: `${remoteUrl}/nothing-here.zip` },
      });
      expect(none.status).toBe(422);
      expect(none.body.errors[0].code).toBe('mc_dm_api_error.external_url_unreachable');
      expect(await t.prisma.file.count({ where: { versionId: v.versionId } })).toBe(0);
      for (const path of ['/nothing-here.zip', '/loop0']) {
        const r = await t.rest('POST', '/api/mc-dm-files/', {
          key: owner.key,
          form: { version_id: v.versionId, external_url: `${remoteUrl}${path}`, keep_failed: 1 },
        });
        expect(r.status, path).toBe(422);
        expect(r.body.errors[0].code).toBe('mc_dm_api_error.external_url_unreachable');
      }
      const rows = await t.prisma.file.findMany({ where: { versionId: v.versionId } });
      expect(rows).toHaveLength(2);
      for (const row of rows)
        expect(row).toMatchObject({
          validationStatus: 'failed',
          isAvailable: false,
          validationAttempts: 1,
          externalSourceType: 'direct-url',
        });
      expect(rows[0]!.validationError).toContain('404');
      expect(rows[1]!.validationError).toContain('redirects');
    });

    it('refuses other schemes, and private addresses unless EXTERNAL_URL_ALLOW_PRIVATE=1', async () => {
      const v = await version();
      for (const url of [
        'ftp://example.com/a.zip',
        'file:///etc/passwd',
        'not a url',
        'http://user:pw@example.com/a',
      ]) {
        const r = await t.rest('POST', '/api/mc-dm-files/', {
          key: owner.key,
          form: { version_id: v.versionId, external_url: url },
        });
        expect(r.status, url).toBe(422);
        expect(r.body.errors[0].code).toBe('mc_dm_api_error.external_url_forbidden');
      }
      const strict = await startTestApp(kind);
      try {
        const u = await strict.user('u');
        const c = (await strict.rest('POST', '/api/mc-dm-categories/', { form: { title: 'c' } })).body.category
          .category_id;
        const sv = (
          await strict.rest('POST', '/api/mc-dm-downloads/', { key: u.key, form: { category_id: c, title: 'd' } })
        ).body.download.current_version_id;
        const before = remoteHits;
        for (const url of [
          `${remoteUrl}/pack.zip`,
          `http://localhost:${new URL(remoteUrl).port}/pack.zip`,
          'http://[::1]/x',
          'http://169.254.169.254/latest/meta-data/',
          'http://10.1.2.3/x',
        ]) {
          const r = await strict.rest('POST', '/api/mc-dm-files/', {
            key: u.key,
            form: { version_id: sv, external_url: url },
          });
          expect(r.status, url).toBe(422);
          expect(r.body.errors[0].code, url).toBe('mc_dm_api_error.external_url_forbidden');
        }
        expect(remoteHits).toBe(before);
        expect(await strict.prisma.file.count()).toBe(0);
      } finally {
        await strict.close();
      }
    });
  });

  describe('revalidation', () => {
    it('re-checks links and blobs, keeping is_available, validation_attempts and validation_error true', async () => {
      const v = await version();
      const link = (
        await t.rest('POST', '/api/mc-dm-files/', {
          key: owner.key,
          form: { version_id: v.versionId, external_url: `${remoteUrl}/pack.zip`, link_only: 1 },
        })
      ).body.file;
      const dead = (
        await t.rest('POST', '/api/mc-dm-files/', {
          key: owner.key,
          form: { version_id: v.versionId, external_url: `${remoteUrl}/gone.zip`, link_only: 1 },
        })
      ).body.file;
      const blob = (await upload(t, { version_id: v.versionId }, { name: 'kept.txt', bytes: Buffer.from('kept') })).body
        .file;
      fs.rmSync(await blobPath(blob.file_id));
      const later = new Date(Date.now() + 2 * 86_400_000);
      let checked: number[] = [];
      for (let round = 0; round < 20 && !checked.includes(blob.file_id); round++) {
        checked = checked.concat(
          await revalidateFiles(t.prisma, t.app.services.storage, {
            allowPrivate: true,
            olderThanMs: 86_400_000,
            batch: 500,
            now: later,
          }),
        );
      }
      expect(checked).toEqual(expect.arrayContaining([link.file_id, dead.file_id, blob.file_id]));
      const rows = await t.prisma.file.findMany({
        where: { id: { in: [link.file_id, dead.file_id, blob.file_id] } },
        orderBy: { id: 'asc' },
      });
      expect(rows.map((r) => r.isAvailable)).toEqual([true, false, false]);
      expect(rows[0]).toMatchObject({ validationAttempts: 1, validationError: null });
      expect(rows[1]!.validationError).toContain('404');
      expect(rows[2]!.validationError).toContain('missing');
      expect(rows[2]!.validationAttempts).toBe(2);
      const full = await t.rest('GET', `/api/mc-dm-files/${dead.file_id}/`, { query: { with: 'full' } });
      expect(full.body.file).toMatchObject({
        is_available: false,
        validation_attempts: 1,
        last_attempt_date: Math.floor(later.getTime() / 1000),
      });
    });
  });

  describe('list, get, update, delete', () => {
    let v: { downloadId: number; versionId: number };
    let ids: number[];
    beforeAll(async () => {
      v = await version();
      ids = [];
      for (const [name, order, size] of [
        ['a.txt', 1, 30],
        ['b.txt', 3, 10],
        ['c.txt', 2, 20],
      ] as const) {
        ids.push(
          (await upload(t, { version_id: v.versionId, display_order: order }, { name, bytes: Buffer.alloc(size, 65) }))
            .body.file.file_id,
        );
      }
    });
    const names = (r: any) => r.body.files.map((f: any) => f.filename);

    it('lists by display_order desc by default; file_size and download_count orders; version_id required for user keys', async () => {
      expect(
        names(await t.rest('GET', '/api/mc-dm-files/', { key: other.key, query: { version_id: v.versionId } })),
      ).toEqual(['b.txt', 'c.txt', 'a.txt']);
      expect(
        names(
          await t.rest('GET', '/api/mc-dm-files/', {
            key: other.key,
            query: { version_id: v.versionId, order: 'file_size', direction: 'asc' },
          }),
        ),
      ).toEqual(['b.txt', 'c.txt', 'a.txt']);
      const missing = await t.rest('GET', '/api/mc-dm-files/', { key: other.key });
      expect(missing.status).toBe(400);
      expect(missing.body.errors[0]).toMatchObject({
        code: 'required_input_missing',
        params: { missing: ['version_id'] },
      });
      expect((await t.rest('GET', '/api/mc-dm-files/', { query: { per_page: 1 } })).status).toBe(200);
      expect(
        (
          await t.rest('GET', '/api/mc-dm-files/', {
            key: other.key,
            query: { version_id: v.versionId, order: 'filename' },
          })
        ).body.errors[0].params.field,
      ).toBe('order');
      expect((await t.rest('GET', '/api/mc-dm-files/', { key: other.key, query: { version_id: 99999 } })).status).toBe(
        404,
      );
    });

    it('gets one file; 404 for unknown ids', async () => {
      const r = await t.rest('GET', `/api/mc-dm-files/${ids[0]}/`, { key: other.key });
      expect(Object.keys(r.body.file)).toEqual(FIELDS);
      expect((await t.rest('GET', '/api/mc-dm-files/99999/')).body.errors[0].code).toBe(
        'mc_dm_api_error.file_not_found',
      );
    });

    it('updates metadata only; is_primary demotes the previous primary, also under concurrent requests', async () => {
      const r = await t.rest('PUT', `/api/mc-dm-files/${ids[1]}/`, {
        key: owner.key,
        form: { display_label: 'Second', display_order: 9, is_primary: 1, filename: 'ignored.exe' },
      });
      expect(r.body.file).toMatchObject({
        display_label: 'Second',
        display_name: 'Second',
        display_order: 9,
        is_primary: true,
        filename: 'b.txt',
      });
      expect((await t.prisma.file.findUniqueOrThrow({ where: { id: ids[0] } })).isPrimary).toBe(false);
      await Promise.all(
        [ids[0], ids[2], ids[0], ids[2]].map((id) =>
          t.rest('PUT', `/api/mc-dm-files/${id}/`, { key: owner.key, form: { is_primary: 1 } }),
        ),
      );
      expect(await t.prisma.file.count({ where: { versionId: v.versionId, isPrimary: true } })).toBe(1);
      expect(
        (await t.rest('PUT', `/api/mc-dm-files/${ids[0]}/`, { key: other.key, form: { display_label: 'x' } })).status,
      ).toBe(403);
      expect(
        (await t.rest('PUT', `/api/mc-dm-files/${ids[0]}/`, { key: owner.key, form: { display_order: -1 } })).status,
      ).toBe(400);
    });

    it('soft delete hides the file and keeps its blob, without promoting another primary', async () => {
      await t.rest('PUT', `/api/mc-dm-files/${ids[2]}/`, { key: owner.key, form: { is_primary: 1 } });
      const path = await blobPath(ids[2]!);
      const r = await t.rest('DELETE', `/api/mc-dm-files/${ids[2]}/`, { key: owner.key });
      expect(r.body).toEqual({ success: true });
      expect(await t.prisma.file.findUniqueOrThrow({ where: { id: ids[2] } })).toMatchObject({ isDeleted: true });
      expect(fs.existsSync(path)).toBe(true);
      expect(
        names(await t.rest('GET', '/api/mc-dm-files/', { key: owner.key, query: { version_id: v.versionId } })),
      ).not.toContain('c.txt');
      expect(await t.prisma.file.count({ where: { versionId: v.versionId, isPrimary: true, isDeleted: false } })).toBe(
        0,
      );
      expect((await t.rest('GET', `/api/mc-dm-files/${ids[2]}/`, { key: other.key })).status).toBe(404);
    });

    it('hard delete needs the scope and hardDeleteAny; removes row and blob and promotes the next primary', async () => {
      await t.rest('PUT', `/api/mc-dm-files/${ids[1]}/`, { key: owner.key, form: { is_primary: 1 } });
      const path = await blobPath(ids[1]!);
      const noScope = await t.key('USER', ['mc_dm_download:read', 'mc_dm_download:write'], mod.userId);
      expect(
        (await t.rest('DELETE', `/api/mc-dm-files/${ids[1]}/`, { key: noScope, query: { hard: 1 } })).body.errors[0],
      ).toMatchObject({ code: 'api_scope_missing', params: { scope: 'mc_dm_download:delete_hard' } });
      expect(
        (await t.rest('DELETE', `/api/mc-dm-files/${ids[1]}/`, { key: owner.key, query: { hard: 1 } })).status,
      ).toBe(403);
      expect(fs.existsSync(path)).toBe(true);
      const r = await t.rest('DELETE', `/api/mc-dm-files/${ids[1]}/`, { key: mod.key, query: { hard: 1 } });
      expect(r.body).toEqual({ success: true });
      expect(await t.prisma.file.count({ where: { id: ids[1] } })).toBe(0);
      expect(fs.existsSync(path)).toBe(false);
      expect((await t.prisma.file.findUniqueOrThrow({ where: { id: ids[0] } })).isPrimary).toBe(true);
    });

    it("a download's hard delete removes its files' blobs", async () => {
      const d = await version();
      const f = (await upload(t, { version_id: d.versionId }, { name: 'gone.txt', bytes: Buffer.from('bye') })).body
        .file;
      const path = await blobPath(f.file_id);
      await t.rest('DELETE', `/api/mc-dm-downloads/${d.downloadId}/`, { key: mod.key, query: { hard: 1 } });
      expect(fs.existsSync(path)).toBe(false);
    });
  });

  describe('the bytes', () => {
    let f: any;
    let bytes: Buffer;
    beforeAll(async () => {
      bytes = crypto.randomBytes(1000);
      const v = await version();
      f = (await upload(t, { version_id: v.versionId }, { name: 'data é.bin', bytes })).body.file;
    });
    const get = (headers: Record<string, string> = {}, key = other.key) =>
      fetch(`${t.url}/api/mc-dm-files/${f.file_id}/data/`, { headers: { 'Forum-Api-Key': key, ...headers } });

    it('streams the blob with ETag, Content-Disposition and Accept-Ranges; counts a download once', async () => {
      const r = await get();
      expect(r.status).toBe(200);
      expect(Buffer.from(await r.arrayBuffer())).toEqual(bytes);
      expect(r.headers.get('etag')).toBe(`"${sha(bytes)}"`);
      expect(r.headers.get('accept-ranges')).toBe('bytes');
      expect(r.headers.get('content-disposition')).toBe(
        `attachment; filename="data _.bin"; filename*=UTF-8''data%20%C3%A9.bin`,
      );
      expect(r.headers.get('content-length')).toBe('1000');
      const row = await t.prisma.file.findUniqueOrThrow({
        where: { id: f.file_id },
        include: { version: { include: { download: true } } },
      });
      expect([row.downloadCount, row.version.downloadCount, row.version.download.downloadCount]).toEqual([1, 1, 1]);
    });

    it('serves single ranges (206), refuses unsatisfiable ones (416), and counts only ranges from byte 0', async () => {
      const mid = await get({ range: 'bytes=100-199' });
      expect(mid.status).toBe(206);
      expect(mid.headers.get('content-range')).toBe('bytes 100-199/1000');
      expect(Buffer.from(await mid.arrayBuffer())).toEqual(bytes.subarray(100, 200));
      const tail = await get({ range: 'bytes=-10' });
      expect(Buffer.from(await tail.arrayBuffer())).toEqual(bytes.subarray(990));
      const bad = await get({ range: 'bytes=5000-' });
      expect(bad.status).toBe(416);
      expect(bad.headers.get('content-range')).toBe('bytes */1000');
      expect((await t.prisma.file.findUniqueOrThrow({ where: { id: f.file_id } })).downloadCount).toBe(1);
      await (await get({ range: 'bytes=0-99' })).arrayBuffer();
      expect((await t.prisma.file.findUniqueOrThrow({ where: { id: f.file_id } })).downloadCount).toBe(2);
      expect((await get({ 'if-none-match': `"${sha(bytes)}"` })).status).toBe(304);
    });

    it('needs the read scope and canDownload; failed files are not served', async () => {
      const noScope = await t.key('USER', ['mc_dm_download:write'], other.userId);
      const r = await get({}, noScope);
      expect(r.status).toBe(403);
      expect(((await r.json()) as any).errors[0].code).toBe('api_scope_missing');
      const locked = await category('No downloads');
      const v = await version(locked);
      const lf = (await upload(t, { version_id: v.versionId }, { name: 'x.txt', bytes: Buffer.from('x') })).body.file;
      await t.gqlOk(
        `mutation { setCategoryPermission(input: { categoryId: ${locked}, group: "registered", permission: "download", value: DENY }) { ok } }`,
      );
      const denied = await fetch(`${t.url}/api/mc-dm-files/${lf.file_id}/data/`, {
        headers: { 'Forum-Api-Key': other.key },
      });
      expect(denied.status).toBe(403);
      const failed = await upload(
        t,
        { version_id: (await version()).versionId },
        { name: 'fake.png', bytes: Buffer.from('nope') },
      );
      const fr = await fetch(`${t.url}/api/mc-dm-files/${failed.body.errors[0].params.file_id}/data/`, {
        headers: { 'Forum-Api-Key': SUPER_KEY },
      });
      expect(fr.status).toBe(422);
      expect(((await fr.json()) as any).errors[0].code).toBe('mc_dm_api_error.file_not_available');
      expect(
        (await fetch(`${t.url}/api/mc-dm-files/99999/data/`, { headers: { 'Forum-Api-Key': SUPER_KEY } })).status,
      ).toBe(404);
    });
  });

  describe('GraphQL face', () => {
    it('lists, gets, updates and deletes with the same rules', async () => {
      const v = await version();
      const f = (await upload(t, { version_id: v.versionId }, { name: 'g.txt', bytes: Buffer.from('g') })).body.file;
      const list = await t.gqlOk(
        `{ files(versionId: ${v.versionId}) { nodes { fileId validationStatus dataUrl } pagination { total } } }`,
        {},
        other.key,
      );
      expect(list.files.nodes).toEqual([
        { fileId: f.file_id, validationStatus: 'PASSED', dataUrl: `${t.url}/api/mc-dm-files/${f.file_id}/data/` },
      ]);
      expect((await t.gql(`{ files { nodes { fileId } } }`, {}, other.key)).codes).toEqual(['required_input_missing']);
      const upd = await t.gqlOk(
        `mutation { updateFile(input: { fileId: ${f.file_id}, displayLabel: "Gee" }) { file { displayName } } }`,
        {},
        owner.key,
      );
      expect(upd.updateFile.file.displayName).toBe('Gee');
      expect(
        (await t.gql(`mutation { deleteFile(input: { fileId: ${f.file_id}, hard: true }) { success } }`, {}, owner.key))
          .codes,
      ).toEqual(['do_not_have_permission']);
      expect(
        (await t.gqlOk(`mutation { deleteFile(input: { fileId: ${f.file_id} }) { success } }`, {}, owner.key))
          .deleteFile,
      ).toEqual({ success: true });
      const link = await t.gqlOk(
        `mutation { createFile(input: { versionId: ${v.versionId}, externalUrl: "${remoteUrl}/x.zip", linkOnly: true }) { file { isLinkOnly validationStatus externalSourceType } } }`,
        {},
        owner.key,
      );
      expect(link.createFile.file).toEqual({
        isLinkOnly: true,
        validationStatus: 'SKIPPED',
        externalSourceType: 'direct-url',
      });
    });
  });
});
