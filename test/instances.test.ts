// Several instances on one PostgreSQL database, with S3-protocol storage (s3rver) and Redis, behave as one: a key
// revoked or a permission withdrawn through one instance is enforced by the others within a second (LISTEN/NOTIFY,
// not the cache's time to live, which is set to five minutes here), a lost notification connection recovers by
// itself, files stored through one instance stream from another, flood control and rate limits hold across them,
// the jobs do each piece of work once, and a kill -9 mid-upload leaves no row pointing at a partial object while the
// others keep serving. Skipped without a PostgreSQL server (TEST_DATABASE_URL) or Redis.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error s3rver ships no type declarations
import S3rver from 's3rver';
import { SUPER_KEY, startTestApp, type TestApp } from './helpers/app.js';
import { REDIS_URL, redisAnswers } from './helpers/redis.js';
import { revalidateFiles } from '../src/jobs/revalidate.js';
import { purgeExpiredDownloads } from '../src/jobs/purge.js';
import { reclaimOrphanBlobs } from '../src/jobs/reclaim.js';
import { serviceArgs } from './helpers/built.js';

const redisUp = await redisAnswers();

/** Polls until `check` holds, returning how long it took; fails after `limitMs`. */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await check()) return performance.now() - t0;
    if (performance.now() - t0 > limitMs) throw new Error(`not within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(!process.env.TEST_DATABASE_URL || !redisUp)(
  'three instances on one PostgreSQL database, S3 storage and Redis',
  () => {
    let a: TestApp;
    let b: TestApp;
    let c: TestApp;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-instances-'));
    let s3: any;
    let s3Settings: {
      bucket: string;
      region: string;
      endpoint: string;
      accessKeyId: string;
      secretAccessKey: string;
      forcePathStyle: boolean;
    };

    beforeAll(async () => {
      s3 = new S3rver({
        port: 0,
        address: '127.0.0.1',
        silent: true,
        directory: path.join(dataDir, 's3'),
        configureBuckets: [{ name: 'shared' }],
      });
      const { port } = await s3.run();
      s3Settings = {
        bucket: 'shared',
        region: 'us-east-1',
        endpoint: `http://127.0.0.1:${port}`,
        accessKeyId: 'S3RVER',
        secretAccessKey: 'S3RVER',
        forcePathStyle: true,
      };
      const settings = {
        cacheSeconds: 300,
        commentFloodSeconds: 30,
        dataDir,
        storage: 's3' as const,
        s3: s3Settings,
        redisUrl: REDIS_URL,
        redisChannelPrefix: `dcs-inst-${process.pid}:`,
        rateLimitPerMinute: 1000,
      };
      a = await startTestApp('postgres', settings);
      const url = a.app.db.url!;
      b = await startTestApp('postgres', settings, { url });
      c = await startTestApp('postgres', settings, { url });
    });
    afterAll(async () => {
      await c?.close();
      await b?.close();
      await a?.close(); // drops the database
      await s3?.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    const categoriesStatus = async (t: TestApp, key: string) =>
      (await t.rest('GET', '/api/mc-dm-categories/', { key })).status;

    it('a key revoked on A is refused by B and C within a second', async () => {
      const made = await a.gqlOk(
        `mutation { createApiKey(input: { type: GUEST, scopes: ["mc_dm_category:read"] }) { key apiKey { apiKeyId } } }`,
      );
      const key = made.createApiKey.key;
      expect(await categoriesStatus(b, key)).toBe(200); // now cached on B and C for five minutes
      expect(await categoriesStatus(c, key)).toBe(200);
      await a.gqlOk(`mutation($id: Int!) { revokeApiKey(input: { apiKeyId: $id }) { apiKey { isActive } } }`, {
        id: made.createApiKey.apiKey.apiKeyId,
      });
      const ms = await Promise.all(
        [b, c].map((t) =>
          within(
            1000,
            async () =>
              (await t.rest('GET', '/api/mc-dm-categories/', { key })).body.errors?.[0]?.code === 'api_key_inactive',
          ),
        ),
      );
      expect(Math.max(...ms)).toBeLessThan(1000);
    });

    it('a permission withdrawn on A is enforced on C within a second', async () => {
      const user = await a.user('coherent');
      const id = (await a.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Coherent' } })).body.category
        .category_id;
      expect((await c.rest('GET', `/api/mc-dm-categories/${id}/`, { key: user.key })).status).toBe(200);
      await a.gqlOk(
        `mutation($c: Int!) { setCategoryPermission(input: { categoryId: $c, group: "registered", permission: "view", value: DENY }) { ok } }`,
        { c: id },
      );
      const ms = await within(
        1000,
        async () => (await c.rest('GET', `/api/mc-dm-categories/${id}/`, { key: user.key })).status === 403,
      );
      expect(ms).toBeLessThan(1000);
    });

    it('recovers from a lost notification connection and stays coherent', async () => {
      const admin = new pg.Client({ connectionString: a.app.db.url! });
      await admin.connect();
      try {
        const killed = await admin.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`,
        );
        expect(killed.rowCount).toBe(3);
        // Each instance reconnects and listens again.
        await within(
          5000,
          async () =>
            (
              await admin.query(
                `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`,
              )
            ).rows[0].n === 3,
        );
      } finally {
        await admin.end();
      }
      const made = await b.gqlOk(
        `mutation { createApiKey(input: { type: GUEST, scopes: ["mc_dm_category:read"] }) { key apiKey { apiKeyId } } }`,
      );
      expect(await categoriesStatus(a, made.createApiKey.key)).toBe(200);
      await b.gqlOk(`mutation($id: Int!) { revokeApiKey(input: { apiKeyId: $id }) { apiKey { isActive } } }`, {
        id: made.createApiKey.apiKey.apiKeyId,
      });
      expect(await within(1000, async () => (await categoriesStatus(a, made.createApiKey.key)) === 401)).toBeLessThan(
        1000,
      );
    });

    it('a file uploaded through A streams from B; flood control holds across instances', async () => {
      const user = await a.user('uploader');
      const cat = (await a.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Shared files' } })).body.category
        .category_id;
      const d = (
        await b.rest('POST', '/api/mc-dm-downloads/', { key: user.key, form: { category_id: cat, title: 'Across' } })
      ).body.download;
      const form = new FormData();
      form.append('version_id', String(d.current_version_id));
      form.append('file', new Blob([new TextEncoder().encode('written by A')]), 'a.txt');
      const created = (await (
        await fetch(`${a.url}/api/mc-dm-files/`, { method: 'POST', headers: { 'Forum-Api-Key': user.key }, body: form })
      ).json()) as any;
      const res = await fetch(`${b.url}/api/mc-dm-files/${created.file.file_id}/data/`, {
        headers: { 'Forum-Api-Key': user.key },
      });
      expect(await res.text()).toBe('written by A');

      const posts = await Promise.all(
        [a, b, c, a, b, c].map((t, i) =>
          t.rest('POST', '/api/mc-dm-comments/', {
            key: user.key,
            form: { download_id: d.download_id, message: `race ${i}` },
          }),
        ),
      );
      expect(posts.filter((p) => p.status === 200)).toHaveLength(1);
      expect(posts.filter((p) => p.status === 429)).toHaveLength(5);
    });

    it('the per-key rate limit is one budget across instances (Redis)', async () => {
      const key = await a.key('GUEST', ['mc_dm_category:read']);
      const left = [];
      for (const t of [a, b, c, a])
        left.push(Number((await t.rest('GET', '/api/mc-dm-categories/', { key })).headers.get('ratelimit-remaining')));
      expect(left).toEqual([999, 998, 997, 996]);
    });

    it('the jobs do each piece of work once when every instance runs them at the same moment', async () => {
      const user = await a.user('jobs');
      const cat = (await a.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Jobs' } })).body.category
        .category_id;
      const fileIds: number[] = [];
      const doomed: number[] = [];
      for (let i = 0; i < 6; i++) {
        const d = (
          await a.rest('POST', '/api/mc-dm-downloads/', {
            key: user.key,
            form: { category_id: cat, title: `Job ${i}` },
          })
        ).body.download;
        const form = new FormData();
        form.append('version_id', String(d.current_version_id));
        form.append('file', new Blob([new TextEncoder().encode(`file ${i}`)]), `f${i}.txt`);
        fileIds.push(
          (
            (await (
              await fetch(`${b.url}/api/mc-dm-files/`, {
                method: 'POST',
                headers: { 'Forum-Api-Key': user.key },
                body: form,
              })
            ).json()) as any
          ).file.file_id,
        );
        if (i % 2 === 0) {
          await a.rest('DELETE', `/api/mc-dm-downloads/${d.download_id}/`);
          doomed.push(d.download_id);
        }
      }
      // Revalidation: every file checked once, by one instance or another.
      const before = await a.prisma.file.findMany({
        where: { id: { in: fileIds } },
        select: { validationAttempts: true },
        orderBy: { id: 'asc' },
      });
      const later = new Date(Date.now() + 2 * 86_400_000);
      const checked = (
        await Promise.all(
          [a, b, c].map((t) =>
            revalidateFiles(t.prisma, t.app.services.storage, {
              allowPrivate: false,
              olderThanMs: 86_400_000,
              batch: 500,
              now: later,
            }),
          ),
        )
      ).flat();
      expect(new Set(checked).size).toBe(checked.length);
      const attempts = await a.prisma.file.findMany({
        where: { id: { in: fileIds } },
        select: { validationAttempts: true },
        orderBy: { id: 'asc' },
      });
      expect(attempts.map((r) => r.validationAttempts)).toEqual(before.map((r) => r.validationAttempts + 1));
      // Purge: each soft-deleted download purged and audited once.
      const purged = (
        await Promise.all(
          [a, b, c].map((t) =>
            purgeExpiredDownloads(t.prisma, t.app.services.storage, 30, new Date(Date.now() + 31 * 86_400_000)),
          ),
        )
      ).flat();
      expect(purged.sort()).toEqual(doomed.sort());
      expect(await a.prisma.auditLog.count({ where: { action: 'download.purged', contentId: { in: doomed } } })).toBe(
        doomed.length,
      );
      // Reclaim: the purged downloads' blobs are gone already; a planted orphan is removed once, nothing else.
      const tmp = path.join(a.app.services.storage.tmpDir, 'planted');
      fs.writeFileSync(tmp, 'orphan');
      await a.app.services.storage.put('blobs/0/0/planted', tmp);
      const reclaimed = (
        await Promise.all(
          [a, b, c].map((t) => reclaimOrphanBlobs(t.prisma, t.app.services.storage, 0, new Date(Date.now() + 1000))),
        )
      ).flatMap((r) => r.reclaimed);
      expect(reclaimed).toEqual(['blobs/0/0/planted']);
    });

    it('kill -9 of one instance mid-upload: no row points at a partial object, and the others keep serving', async () => {
      const user = await a.user('survivor');
      const cat = (await a.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Crash' } })).body.category
        .category_id;
      const v = (
        await a.rest('POST', '/api/mc-dm-downloads/', { key: user.key, form: { category_id: cat, title: 'Crash' } })
      ).body.download.current_version_id;
      const env: Record<string, string> = {
        ...(process.env as Record<string, string>),
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'info',
        DM_BOOTSTRAP_KEY: SUPER_KEY,
        DATABASE_URL: a.app.db.url!,
        STORAGE: 's3',
        S3_BUCKET: s3Settings.bucket,
        S3_ENDPOINT: s3Settings.endpoint,
        S3_ACCESS_KEY_ID: 'S3RVER',
        S3_SECRET_ACCESS_KEY: 'S3RVER',
        S3_FORCE_PATH_STYLE: '1',
        REDIS_URL,
      };
      const child = spawn(process.execPath, serviceArgs(), {
        cwd: path.resolve(import.meta.dirname, '..'),
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const exited = new Promise((r) => child.once('exit', r));
      try {
        const url = await new Promise<string>((resolve, reject) => {
          let out = '';
          const timer = setTimeout(() => reject(new Error(`the fourth instance did not start: ${out}`)), 120_000);
          child.stdout.on('data', (chunk: Buffer) => {
            out += chunk.toString();
            const m = /"url":"(http:[^"]+)"/.exec(out);
            if (m) {
              clearTimeout(timer);
              resolve(m[1]!);
            }
          });
          child.stderr.on('data', (chunk: Buffer) => {
            out += chunk.toString();
          });
        });
        const bytes = new Uint8Array(4 * 1024 * 1024).map((_, i) => (i * 7) & 0xff);
        const uploads = Array.from({ length: 8 }, (_, i) => {
          const form = new FormData();
          form.append('version_id', String(v));
          form.append('file', new Blob([bytes]), `big${i}.bin`);
          return fetch(`${url}/api/mc-dm-files/`, {
            method: 'POST',
            headers: { 'Forum-Api-Key': user.key },
            body: form,
          }).then(
            (r) => r.status,
            () => 'cut',
          );
        });
        await Promise.race([uploads[0], new Promise((r) => setTimeout(r, 500))]);
        child.kill('SIGKILL');
        await exited;
        const outcomes = await Promise.all(uploads);
        expect(outcomes).toContain('cut');
        // The others keep serving, reads and writes.
        expect((await b.rest('GET', '/api/mc-dm-categories/')).status).toBe(200);
        expect(
          (
            await c.rest('POST', '/api/mc-dm-comments/', {
              key: user.key,
              form: {
                download_id: (await a.prisma.version.findUniqueOrThrow({ where: { id: v } })).downloadId,
                message: 'still here',
              },
            })
          ).status,
        ).toBe(200);
        // Every row that names a blob names a whole one.
        const rows = await a.prisma.file.findMany({ where: { versionId: v, storageKey: { not: null } } });
        for (const row of rows) {
          const res = await fetch(`${b.url}/api/mc-dm-files/${row.id}/data/`, {
            headers: { 'Forum-Api-Key': user.key },
          });
          expect(res.status).toBe(200);
          expect((await res.arrayBuffer()).byteLength).toBe(Number(row.fileSize));
        }
      } finally {
        child.kill('SIGKILL');
        await exited;
      }
    }, 240_000);
  },
);
