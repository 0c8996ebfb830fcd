// The storage drivers against one contract: local disk, and S3 against a real S3-protocol server (s3rver)
// running in the test process. Then the whole service on STORAGE=s3: upload, download, range, hard delete.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buffer, text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error s3rver ships no type declarations
import S3rver from 's3rver';
import { LocalStorage } from '../src/files/storage/local.js';
import { S3Storage } from '../src/files/storage/s3.js';
import type { Storage } from '../src/files/storage/index.js';
import { startTestApp } from './helpers/app.js';

let s3: any;
let endpoint: string;
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-storage-'));

beforeAll(async () => {
  s3 = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: path.join(root, 's3'),
    configureBuckets: [{ name: 'blobs' }],
  });
  const { port } = await s3.run();
  endpoint = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  await s3?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const s3Settings = () => ({
  bucket: 'blobs',
  region: 'us-east-1',
  endpoint,
  accessKeyId: 'S3RVER',
  secretAccessKey: 'S3RVER',
  forcePathStyle: true,
});

const drivers: [string, () => Storage][] = [
  ['local disk', () => new LocalStorage(path.join(root, 'local'))],
  ['S3 (s3rver)', () => new S3Storage({ ...s3Settings(), tmpDir: path.join(root, 's3tmp') })],
];

describe.each(drivers)('%s driver', (_name, make) => {
  let storage: Storage;
  beforeAll(() => {
    storage = make();
  });

  const tmpFile = (content: string) => {
    const p = path.join(storage.tmpDir, `${Math.random().toString(36).slice(2)}.part`);
    fs.writeFileSync(p, content);
    return p;
  };

  it('puts a temporary file under a key (the temporary file is gone), reads it whole and by range', async () => {
    const tmp = tmpFile('0123456789abcdef');
    await storage.put('blobs/1/a', tmp);
    expect(fs.existsSync(tmp)).toBe(false);
    expect(await storage.exists('blobs/1/a')).toBe(true);
    expect(await text(await storage.read('blobs/1/a'))).toBe('0123456789abcdef');
    expect(await text(await storage.read('blobs/1/a', { start: 4, end: 7 }))).toBe('4567');
    // With the recorded size given, the same bytes, whole and by range; a wrong size changes nothing that is read.
    expect(await text(await storage.read('blobs/1/a', undefined, 16))).toBe('0123456789abcdef');
    expect(await text(await storage.read('blobs/1/a', { start: 4, end: 7 }, 16))).toBe('4567');
    expect(await text(await storage.read('blobs/1/a', undefined, 3))).toBe('0123456789abcdef');
    expect(await text(await storage.read('blobs/1/a', undefined, 0))).toBe('0123456789abcdef');
  });

  it('removes keys, ignoring ones that do not exist', async () => {
    await storage.put('blobs/2/b', tmpFile('x'));
    await storage.remove(['blobs/2/b', 'blobs/2/never']);
    expect(await storage.exists('blobs/2/b')).toBe(false);
  });

  it('reports missing keys', async () => {
    expect(await storage.exists('nothing/here')).toBe(false);
    await expect(storage.read('nothing/here')).rejects.toThrow();
  });
});

describe('local storage reads', () => {
  // Each read of a file stream takes a buffer of its highWaterMark outside the JavaScript heap: 64 KiB by default,
  // twice for a small file (its bytes, then the end). Sized to the file, a download of a small file takes what it needs.
  it('reads a small file in buffers of its size, a large one in 64 KiB reads, and a range in buffers of its length', async () => {
    const storage = new LocalStorage(path.join(root, 'sized'));
    const put = async (key: string, bytes: Buffer) => {
      const p = path.join(storage.tmpDir, `${key}.part`);
      fs.writeFileSync(p, bytes);
      await storage.put(key, p);
    };
    await put('small', Buffer.alloc(64, 7));
    await put('large', Buffer.alloc(200 * 1024, 9));
    const small = await storage.read('small', undefined, 64);
    expect(small.readableHighWaterMark).toBe(64);
    expect((await buffer(small)).equals(Buffer.alloc(64, 7))).toBe(true);
    const large = await storage.read('large', undefined, 200 * 1024);
    expect(large.readableHighWaterMark).toBe(64 * 1024);
    expect((await buffer(large)).length).toBe(200 * 1024);
    const range = await storage.read('large', { start: 10, end: 109 }, 200 * 1024);
    expect(range.readableHighWaterMark).toBe(100);
    expect((await buffer(range)).equals(Buffer.alloc(100, 9))).toBe(true);
    const unknown = await storage.read('small');
    expect(unknown.readableHighWaterMark).toBe(64 * 1024);
    expect((await buffer(unknown)).length).toBe(64);
  });
});

describe('the service on STORAGE=s3', () => {
  it('stores uploads in the bucket and serves them back, whole and by range; hard delete removes the object', async () => {
    const t = await startTestApp('pglite', { storage: 's3', s3: s3Settings() });
    try {
      const u = await t.user('s3user');
      const c = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'S3' } })).body.category.category_id;
      const v = (await t.rest('POST', '/api/mc-dm-downloads/', { key: u.key, form: { category_id: c, title: 'd' } }))
        .body.download.current_version_id;
      const bytes = Buffer.from('stored in an S3 bucket');
      const form = new FormData();
      form.append('version_id', String(v));
      form.append('file', new Blob([new Uint8Array(bytes)]), 'notes.txt');
      const created = (await (
        await fetch(`${t.url}/api/mc-dm-files/`, { method: 'POST', headers: { 'Forum-Api-Key': u.key }, body: form })
      ).json()) as any;
      expect(created.file.validation_status).toBe('passed');
      const row = await t.prisma.file.findUniqueOrThrow({ where: { id: created.file.file_id } });
      expect(await t.app.services.storage.exists(row.storageKey!)).toBe(true);
      const whole = await fetch(`${t.url}/api/mc-dm-files/${row.id}/data/`, { headers: { 'Forum-Api-Key': u.key } });
      expect(await whole.text()).toBe('stored in an S3 bucket');
      const part = await fetch(`${t.url}/api/mc-dm-files/${row.id}/data/`, {
        headers: { 'Forum-Api-Key': u.key, range: 'bytes=13-14' },
      });
      expect(part.status).toBe(206);
      expect(await part.text()).toBe('S3');
      const del = await t.rest('DELETE', `/api/mc-dm-files/${row.id}/`, { query: { hard: 1 } });
      expect(del.body).toEqual({ success: true });
      expect(await t.app.services.storage.exists(row.storageKey!)).toBe(false);
    } finally {
      await t.close();
    }
  });
});
