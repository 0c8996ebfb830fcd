// Temporary upload files belong to the process that writes them: an instance starting on a DATA_DIR it shares with a
// running instance removes only the files whose owner is gone. Two processes on one PostgreSQL database: a child
// service with an upload in flight, and instances started in this process. Skipped without a PostgreSQL server.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freshPostgres, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';
import { REUSED_PID_MS, sweepTemporaryFiles, temporaryFileName } from '../src/files/storage/tmp-sweep.js';
import { serviceArgs } from './helpers/built.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function startChild(env: Record<string, string>): Promise<{ child: ChildProcessWithoutNullStreams; url: string }> {
  const child = spawn(process.execPath, serviceArgs(), {
    cwd: root,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the service did not start: ${out}`)), 120_000);
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /"url":"(http:[^"]+)"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]! });
      }
    });
    child.stderr.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.on('exit', (code) => reject(new Error(`the service exited (${code}): ${out}`)));
  });
}

/** Starts a multipart upload and sends its first `first` bytes; `finish()` sends the rest and reads the answer. */
function slowUpload(url: string, userId: string, versionId: number, bytes: Buffer, first: number) {
  const boundary = `----b${crypto.randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\ncontent-disposition: form-data; name="version_id"\r\n\r\n${versionId}\r\n` +
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="slow.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const req = http.request(`${url}/api/mc-dm-files/`, {
    method: 'POST',
    headers: {
      'Forum-Api-Key': SUPER_KEY,
      'Forum-Api-User': userId,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': head.length + bytes.length + tail.length,
    },
  });
  const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
  });
  answer.catch(() => {}); // a killed server cuts it; the caller decides whether it waits
  req.write(Buffer.concat([head, bytes.subarray(0, first)]));
  return {
    answer,
    finish: () => {
      req.end(Buffer.concat([bytes.subarray(first), tail]));
      return answer;
    },
  };
}

async function until<T>(what: string, probe: () => T | undefined, limitMs = 10_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() - t0 > limitMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('the start-up sweep reads the owner from the name', () => {
  it('keeps files of live owners, removes those of a dead owner or an earlier run of our own pid, and falls back to age', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-tmp-names-'));
    try {
      const ours = temporaryFileName();
      const parent = temporaryFileName().replace(/^p\d+\./, `p${process.ppid}.`);
      // A restarted container runs as the same pid: the run tag tells its earlier files apart.
      const earlierRun = ours.replace(
        /^(p\d+\.[0-9a-f]{8}\.)[0-9a-f]{8}/,
        (_m, pre: string) => `${pre}${pre.includes('00000000') ? '11111111' : '00000000'}`,
      );
      const reused = temporaryFileName().replace(/^p\d+\./, `p${process.ppid}.`);
      const otherHost = 'p1.ffffffff.00000000.00000000-0000-0000-0000-000000000000.part';
      const old = Date.now() - 2 * 3600_000;
      for (const n of [ours, parent, earlierRun, reused, otherHost, 'legacy.part'])
        fs.writeFileSync(path.join(dir, n), 'x');
      // Untouched for longer than any upload lives: its live "owner" is a reused pid.
      const ancient = new Date(Date.now() - REUSED_PID_MS - 60_000);
      fs.utimesSync(path.join(dir, reused), ancient, ancient);
      fs.utimesSync(path.join(dir, 'legacy.part'), new Date(old), new Date(old));
      const removed = await sweepTemporaryFiles(dir, 30_000, Date.now());
      expect(earlierRun).not.toBe(ours);
      expect(removed.sort()).toEqual([earlierRun, reused, 'legacy.part'].sort());
      expect(fs.readdirSync(dir).sort()).toEqual([ours, parent, otherHost].sort());
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)(
  'temporary files on a DATA_DIR shared by two processes (PostgreSQL)',
  () => {
    it("an instance's start spares a live process's upload and removes a dead one's", async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-tmp-owners-'));
      const tmpDir = path.join(dataDir, 'files', '.tmp');
      const pg = await freshPostgres();
      const env: Record<string, string> = {
        ...(process.env as Record<string, string>),
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'info',
        DM_BOOTSTRAP_KEY: SUPER_KEY,
        DATABASE_URL: pg.url,
      };
      const started: TestApp[] = [];
      let child: ChildProcessWithoutNullStreams | undefined;
      try {
        const a = await startChild(env);
        child = a.child;
        const api = async (p: string, init: RequestInit & { user?: string } = {}) =>
          (await (
            await fetch(`${a.url}${p}`, {
              ...init,
              headers: {
                'Forum-Api-Key': SUPER_KEY,
                ...(init.user ? { 'Forum-Api-User': init.user } : {}),
                ...(init.headers as Record<string, string>),
              },
            })
          ).json()) as any;
        const c = (
          await api('/api/mc-dm-categories/', { method: 'POST', body: new URLSearchParams({ title: 'Slow' }) })
        ).category.category_id;
        const user = String(
          (
            await api('/graphql', {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({
                query: 'mutation { createUser(input: { username: "slow" }) { user { userId } } }',
              }),
            })
          ).data.createUser.user.userId,
        );
        const v = (
          await api('/api/mc-dm-downloads/', {
            method: 'POST',
            user,
            body: new URLSearchParams({ category_id: String(c), title: 'd' }),
          })
        ).download.current_version_id;
        const ownedBy = (pid: number) => () =>
          fs.readdirSync(tmpDir).find((n) => n.startsWith(`p${pid}.`) && n.endsWith('.part'));

        // The child's upload is in flight: half its bytes are in a temporary file it owns. Its file looks an hour old,
        // so only its owner's pid, not its age, keeps it.
        const bytes = crypto.randomBytes(256 * 1024);
        const live = slowUpload(a.url, user, v, bytes, 128 * 1024);
        const liveName = await until("the live upload's temporary file", ownedBy(child.pid!));
        await until('its first bytes', () =>
          fs.statSync(path.join(tmpDir, liveName)).size >= 64 * 1024 ? true : undefined,
        );
        const hourAgo = new Date(Date.now() - 3600_000);
        fs.utimesSync(path.join(tmpDir, liveName), hourAgo, hourAgo);
        // A file left by a process that no longer runs.
        const gone = spawn(process.execPath, ['-e', '']);
        await new Promise((r) => gone.once('exit', r));
        const deadName = temporaryFileName().replace(/^p\d+\./, `p${gone.pid}.`);
        fs.writeFileSync(path.join(tmpDir, deadName), 'left by a dead process');

        // Another instance (this process) starts on the same DATA_DIR and database.
        started.push(await startTestApp('postgres', { dataDir }, { url: pg.url }));
        expect(fs.existsSync(path.join(tmpDir, deadName))).toBe(false);
        expect(fs.existsSync(path.join(tmpDir, liveName))).toBe(true);

        // The live upload completes, whole.
        const done = await live.finish();
        expect(done.status, JSON.stringify(done.body)).toBe(200);
        expect(done.body.file.file_hash).toBe(`sha256:${crypto.createHash('sha256').update(bytes).digest('hex')}`);
        expect(done.body.file.file_size).toBe(bytes.length);

        // kill -9 with an upload in flight: its temporary file stays until an instance starts and sees its owner gone.
        const cut = slowUpload(a.url, user, v, bytes, 64 * 1024);
        const cutName = await until("the cut upload's temporary file", ownedBy(child.pid!));
        const exited = new Promise((r) => child!.once('exit', r));
        child.kill('SIGKILL');
        await exited;
        await cut.answer.catch(() => 'cut');
        expect(fs.existsSync(path.join(tmpDir, cutName))).toBe(true);
        started.push(await startTestApp('postgres', { dataDir }, { url: pg.url }));
        expect(fs.existsSync(path.join(tmpDir, cutName))).toBe(false);
        expect(fs.readdirSync(tmpDir)).toEqual([]);
      } finally {
        child?.kill('SIGKILL');
        for (const t of started.reverse()) await t.close();
        await pg.drop();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    }, 240_000);
  },
);
