// Orphan blobs are reclaimed: after a process is killed mid-upload, storage returns to exactly the blobs the file
// rows reference — on both databases and both storage drivers; young blobs (an upload on its way to its row) are
// left alone; one reclaimer at a time.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error s3rver ships no type declarations
import S3rver from 's3rver';
import { freshPostgres, startTestApp, SUPER_KEY, type DbKind, type TestApp } from './helpers/app.js';
import { reclaimOrphanBlobs } from '../src/jobs/reclaim.js';
import type { Storage } from '../src/files/storage/index.js';
import type { Config } from '../src/config.js';
import { serviceArgs } from './helpers/built.js';

const root = path.resolve(import.meta.dirname, '..');
let s3: any;
let s3Endpoint = '';
let bucketNo = 0;
/** Where the S3 stand-in keeps its buckets: removed with it. */
let s3Dir = '';

beforeAll(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-reclaim-s3-'));
  s3Dir = dir;
  s3 = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: dir,
    configureBuckets: Array.from({ length: 8 }, (_, i) => ({ name: `reclaim${i}` })),
  });
  const { port } = await s3.run();
  s3Endpoint = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  await s3?.close();
  if (s3Dir) fs.rmSync(s3Dir, { recursive: true, force: true });
});

const s3Settings = (bucket: string) => ({
  bucket,
  region: 'us-east-1',
  endpoint: s3Endpoint,
  accessKeyId: 'S3RVER',
  secretAccessKey: 'S3RVER',
  forcePathStyle: true,
});

async function listKeys(storage: Storage): Promise<string[]> {
  const keys: string[] = [];
  for await (const b of storage.list()) keys.push(b.key);
  return keys.sort();
}

async function referencedKeys(t: TestApp): Promise<string[]> {
  return (await t.prisma.file.findMany({ where: { storageKey: { not: null } }, select: { storageKey: true } }))
    .map((r) => r.storageKey!)
    .sort();
}

async function orphan(storage: Storage, key: string) {
  const tmp = path.join(storage.tmpDir, `orphan-${Math.random().toString(36).slice(2)}`);
  fs.writeFileSync(tmp, 'nobody references me');
  await storage.put(key, tmp);
}

const kinds: DbKind[] = process.env.TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];
const drivers = ['local', 's3'] as const;

describe.each(kinds.flatMap((k) => drivers.map((d) => [k, d] as const)))('%s database, %s storage', (kind, driver) => {
  const storageOverrides = (): Partial<Config> =>
    driver === 's3' ? { storage: 's3', s3: s3Settings(`reclaim${bucketNo++}`) } : {};

  it('removes old unreferenced blobs, keeps referenced and young ones', async () => {
    const t = await startTestApp(kind, storageOverrides());
    try {
      const storage = t.app.services.storage;
      const u = await t.user('keeper');
      const c = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Reclaim' } })).body.category
        .category_id;
      const v = (await t.rest('POST', '/api/mc-dm-downloads/', { key: u.key, form: { category_id: c, title: 'd' } }))
        .body.download.current_version_id;
      const form = new FormData();
      form.append('version_id', String(v));
      form.append('file', new Blob([new TextEncoder().encode('keep me')]), 'keep.txt');
      expect(
        (await fetch(`${t.url}/api/mc-dm-files/`, { method: 'POST', headers: { 'Forum-Api-Key': u.key }, body: form }))
          .status,
      ).toBe(200);
      await orphan(storage, 'blobs/1/1/orphan-a');
      await orphan(storage, 'quarantine/1/1/orphan-b');

      // Within the grace period nothing is touched.
      expect((await reclaimOrphanBlobs(t.prisma, storage, 60_000)).reclaimed).toEqual([]);
      const later = new Date(Date.now() + 2 * 60_000);
      const r = await reclaimOrphanBlobs(t.prisma, storage, 60_000, later);
      expect(r.reclaimed.sort()).toEqual(['blobs/1/1/orphan-a', 'quarantine/1/1/orphan-b']);
      expect(await listKeys(storage)).toEqual(await referencedKeys(t));
      expect((await referencedKeys(t)).length).toBe(1);
    } finally {
      await t.close();
    }
  });

  it('after kill -9 mid-upload, storage returns to exactly the blobs the rows reference', async () => {
    // The service runs in a child process on a database and storage this test can reopen afterwards.
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-crash-'));
    const pg = kind === 'postgres' ? await freshPostgres() : null;
    const overrides = storageOverrides();
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      DM_BOOTSTRAP_KEY: SUPER_KEY,
      ...(pg ? { DATABASE_URL: pg.url } : {}),
    };
    if (!pg) delete env.DATABASE_URL;
    if (overrides.s3)
      Object.assign(env, {
        STORAGE: 's3',
        S3_BUCKET: overrides.s3.bucket,
        S3_REGION: 'us-east-1',
        S3_ENDPOINT: s3Endpoint,
        S3_ACCESS_KEY_ID: 'S3RVER',
        S3_SECRET_ACCESS_KEY: 'S3RVER',
        S3_FORCE_PATH_STYLE: '1',
      });
    const child = spawn(process.execPath, serviceArgs(), {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let t: TestApp | undefined;
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`the service did not start: ${out}`)), 120_000);
        child.stdout.on('data', (b: Buffer) => {
          out += b.toString();
          const m = /"url":"(http:[^"]+)"/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
        child.stderr.on('data', (b: Buffer) => {
          out += b.toString();
        });
        child.on('exit', (code) => reject(new Error(`the service exited (${code}): ${out}`)));
      });
      const api = (p: string, init: RequestInit = {}) =>
        fetch(`${url}${p}`, {
          ...init,
          headers: { 'Forum-Api-Key': SUPER_KEY, ...(init.headers as Record<string, string>) },
        });
      const c = (
        (await (
          await api('/api/mc-dm-categories/', { method: 'POST', body: new URLSearchParams({ title: 'Crash' }) })
        ).json()) as any
      ).category.category_id;
      const gql = await api('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'mutation { createUser(input: { username: "crash" }) { user { userId } } }' }),
      });
      const userId = String(((await gql.json()) as any).data.createUser.user.userId);
      const v = (
        (await (
          await api('/api/mc-dm-downloads/', {
            method: 'POST',
            headers: { 'Forum-Api-User': userId },
            body: new URLSearchParams({ category_id: String(c), title: 'd' }),
          })
        ).json()) as any
      ).download.current_version_id;
      const bytes = new Uint8Array(2 * 1024 * 1024).map((_, i) => (i * 31) & 0xff);
      const uploads = Array.from({ length: 16 }, (_, i) => {
        const form = new FormData();
        form.append('version_id', String(v));
        form.append('file', new Blob([bytes]), `part${i}.bin`);
        return api('/api/mc-dm-files/', { method: 'POST', headers: { 'Forum-Api-User': userId }, body: form }).then(
          (r) => r.status,
          () => 'cut',
        );
      });
      // Kill the process while the uploads are in flight: some finished, some streaming, some between blob and row.
      await Promise.race([uploads[0], new Promise((r) => setTimeout(r, 400))]);
      await new Promise((r) => setTimeout(r, 50));
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited; // reaped: its lock on the embedded database is stale now
      const outcomes = await Promise.all(uploads);
      expect(outcomes.some((o) => o === 'cut')).toBe(true);

      // Reopen the same database and storage in this process; plant a blob no row references too.
      t = await startTestApp(
        kind,
        { ...overrides, dataDir },
        pg ? { url: pg.url } : { pgliteDir: path.join(dataDir, 'db') },
      );
      const storage = t.app.services.storage;
      await orphan(storage, 'blobs/9/9/planted');
      const r = await reclaimOrphanBlobs(t.prisma, storage, 0, new Date(Date.now() + 1000));
      expect(r.reclaimed).toContain('blobs/9/9/planted');
      expect(await listKeys(storage)).toEqual(await referencedKeys(t));
      for (const row of await t.prisma.file.findMany({ where: { storageKey: { not: null } } })) {
        expect(await storage.exists(row.storageKey!)).toBe(true);
      }
    } finally {
      child.kill('SIGKILL');
      await t?.close();
      await pg?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
