// Start-up: migrations, the bootstrap key, persistence of the embedded database, several instances on one server.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { startApp } from '../src/app.js';
import { openDatabase } from '../src/db/client.js';
import { migrate, readMigrations } from '../src/db/migrate.js';
import { createLogger } from '../src/log.js';
import { hashKey } from '../src/auth/keys.js';
import { freshPostgres, migratedDatabase } from './helpers/app.js';
import { serviceArgs } from './helpers/built.js';

const silent = createLogger('silent');
const made: string[] = [];
const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-boot-'));
  made.push(d);
  return d;
};
afterAll(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});
const config = (dataDir: string, extra: Record<string, string> = {}) =>
  loadConfig({ DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'silent', ...extra });

async function getCategories(url: string, key: string) {
  const r = await fetch(`${url}/api/mc-dm-categories/`, { headers: { 'Forum-Api-Key': key } });
  return { status: r.status, body: (await r.json()) as any };
}

describe('embedded database under DATA_DIR', () => {
  const dir = tmp();
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('generates a bootstrap key once, stores only its hash, and keeps data across restarts', async () => {
    const first = await startApp(config(dir), { log: silent });
    try {
      expect(first.generatedKey).toMatch(/^dm_/);
      const key = first.generatedKey!;
      const stored = await first.db.prisma.apiKey.findMany();
      expect(stored).toHaveLength(1);
      expect(stored[0]).toMatchObject({ type: 'super', keyHash: hashKey(key) });
      expect(stored[0]!.scopes).toHaveLength(6);
      const created = await fetch(`${first.url}/api/mc-dm-categories/`, {
        method: 'POST',
        headers: { 'Forum-Api-Key': key, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'title=Persisted',
      });
      expect(created.status).toBe(200);
      await first.close();

      expect(fs.existsSync(path.join(dir, 'db'))).toBe(true);
      const second = await startApp(config(dir), { log: silent });
      try {
        // a second process on the same embedded database is refused while this one runs
        const { execFileSync } = await import('node:child_process');
        const script = `import('./src/db/client.ts').then((m) => m.openDatabase({ pgliteDir: ${JSON.stringify(path.join(dir, 'db'))} })).then(() => process.exit(0), (e) => { console.error(e.message); process.exit(3); })`;
        let message = '';
        try {
          execFileSync(process.execPath, ['--import', 'tsx', '-e', script], {
            cwd: path.resolve(import.meta.dirname, '..'),
            stdio: 'pipe',
          });
        } catch (err) {
          message = String((err as { stderr: Buffer }).stderr);
        }
        expect(message).toContain('is in use by process');
        expect(second.generatedKey).toBeUndefined();
        const list = await getCategories(second.url, key);
        expect(list.body.categories.map((c: any) => c.title)).toEqual(['Persisted']);
        expect(await second.db.prisma.group.count()).toBe(4);
      } finally {
        await second.close();
      }
    } catch (err) {
      await first.close().catch(() => {});
      throw err;
    }
  });
});

describe('embedded database lock', () => {
  it('takes over a lock left by a process that no longer runs, and releases it on close', async () => {
    const dir = path.join(tmp(), 'db');
    fs.writeFileSync(`${dir}.lock`, '999999999');
    const db = await openDatabase({ pgliteDir: dir });
    expect(fs.readFileSync(`${dir}.lock`, 'utf8')).toBe(String(process.pid));
    await db.close();
    expect(fs.existsSync(`${dir}.lock`)).toBe(false);
  });
});

describe('embedded database page cache', () => {
  const sharedBuffers = async (db: Awaited<ReturnType<typeof openDatabase>>) =>
    (await db.query<{ shared_buffers: string }>('SHOW shared_buffers'))[0]!.shared_buffers;

  it('is EMBEDDED_BUFFERS_MB for the service on DATA_DIR, 16 MB unless set, whatever the data directory says', async () => {
    const dir = tmp();
    const app = await startApp(config(dir, { EMBEDDED_BUFFERS_MB: '24' }), { log: silent });
    try {
      expect(await sharedBuffers(app.db)).toBe('24MB');
    } finally {
      await app.close();
    }
    // The data directory's postgresql.conf keeps PostgreSQL's 128MB: the start parameter decides.
    expect(fs.readFileSync(path.join(dir, 'db', 'postgresql.conf'), 'utf8')).toMatch(/^shared_buffers = 128MB/m);
    const again = await startApp(config(dir), { log: silent });
    try {
      expect(await sharedBuffers(again.db)).toBe('16MB');
    } finally {
      await again.close();
    }
  });

  it('is the default for an in-memory embedded database too', async () => {
    const db = await openDatabase((await migratedDatabase('pglite')).target);
    try {
      expect(await sharedBuffers(db)).toBe('16MB');
    } finally {
      await db.close();
    }
  });
});

describe('DM_BOOTSTRAP_KEY', () => {
  it('ensures a super-user key with that value and every scope, re-activating it if revoked', async () => {
    const db = await openDatabase((await migratedDatabase('pglite')).target);
    const key = 'dm_operator_chosen_key_0123456789abcdef0123456789';
    const dir = tmp();
    const app = await startApp(config(dir, { DM_BOOTSTRAP_KEY: key }), { db, log: silent });
    try {
      expect(app.generatedKey).toBeUndefined();
      expect((await getCategories(app.url, key)).status).toBe(200);
      const row = await db.prisma.apiKey.findUniqueOrThrow({ where: { keyHash: hashKey(key) } });
      const revoke = await fetch(`${app.url}/graphql`, {
        method: 'POST',
        headers: { 'Forum-Api-Key': key, 'content-type': 'application/json' },
        body: JSON.stringify({
          query: `mutation { revokeApiKey(input: { apiKeyId: ${row.id} }) { apiKey { isActive } } }`,
        }),
      });
      expect(((await revoke.json()) as any).data.revokeApiKey.apiKey.isActive).toBe(false);
      expect((await getCategories(app.url, key)).status).toBe(401);
    } finally {
      await app.server.close();
    }
    // a restart restores it
    const again = await startApp(config(dir, { DM_BOOTSTRAP_KEY: key }), { db, log: silent });
    try {
      expect((await getCategories(again.url, key)).status).toBe(200);
      expect(await db.prisma.apiKey.count()).toBe(1);
    } finally {
      await again.close();
    }
  });
});

describe('migrator', () => {
  it('applies each migration once and refuses a migration changed after it was applied', async () => {
    const db = await openDatabase({ memory: true });
    try {
      const all = readMigrations();
      expect(await migrate(db, all)).toEqual(all.map((m) => m.name));
      expect(await migrate(db, all)).toEqual([]);
      const tampered = all.map((m, i) => (i === 0 ? { ...m, checksum: 'x'.repeat(64) } : m));
      await expect(migrate(db, tampered)).rejects.toThrow(/changed after it was applied/);
    } finally {
      await db.close();
    }
  });

  it('rolls back a failing migration entirely', async () => {
    const db = await openDatabase((await migratedDatabase('pglite')).target); // every migration applied, then a bad one
    try {
      await migrate(db);
      const bad = [
        ...readMigrations(),
        {
          name: '99999999_bad',
          sql: 'CREATE TABLE half_done (id int); SELECT broken_syntax FROM;',
          checksum: 'b'.repeat(64),
        },
      ];
      await expect(migrate(db, bad)).rejects.toThrow(/99999999_bad failed/);
      const tables = await db.session((s) => s.query(`SELECT to_regclass('half_done') AS t`));
      expect(tables[0]!.t).toBeNull();
    } finally {
      await db.close();
    }
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('several instances on one PostgreSQL server', () => {
  it('start together without breaking each other: migrations and first-start data are applied once', async () => {
    const fresh = await freshPostgres();
    try {
      // STORAGE=local instances on one database share one files directory (a shared mount), else they refuse to start
      const shared = tmp();
      const cfg = (extra: Record<string, string> = {}) => config(shared, { DATABASE_URL: fresh.url, ...extra });
      const apps = await Promise.all([1, 2, 3].map(() => startApp(cfg(), { log: silent })));
      try {
        const keys = apps.map((a) => a.generatedKey).filter(Boolean);
        expect(keys).toHaveLength(1); // exactly one instance generated the bootstrap key
        const prisma = apps[0]!.db.prisma;
        expect(await prisma.group.count()).toBe(4);
        expect(await prisma.groupPermission.count({ where: { group: { name: 'guest' } } })).toBe(3);
        const applied = await apps[0]!.db.session((s) =>
          s.query<{ n: number }>(`SELECT count(*)::int AS n FROM "_prisma_migrations"`),
        );
        expect(applied[0]!.n).toBe(readMigrations().length);
        // every instance serves the same data
        for (const a of apps) expect((await getCategories(a.url, keys[0]!)).status).toBe(200);
      } finally {
        for (const a of apps) await a.close();
      }
    } finally {
      await fresh.drop();
    }
  });
});

describe('a start that cannot serve', () => {
  const root = path.resolve(import.meta.dirname, '..');

  it('writes nothing: the bootstrap key is generated by the first start that can listen', async () => {
    const dir = tmp();
    const blocker = await new Promise<import('node:net').Server>((resolve) => {
      import('node:net').then(({ createServer }) => {
        const s = createServer();
        s.listen(0, '127.0.0.1', () => resolve(s));
      });
    });
    const port = String((blocker.address() as import('node:net').AddressInfo).port);
    try {
      await expect(startApp(config(dir, { PORT: port }), { log: silent })).rejects.toThrow(
        `Port ${port} on 127.0.0.1 is already in use`,
      );
      expect(fs.existsSync(path.join(dir, 'db'))).toBe(false);
    } finally {
      blocker.close();
    }
    const app = await startApp(config(dir), { log: silent });
    try {
      expect(app.generatedKey).toMatch(/^dm_/);
      expect((await getCategories(app.url, app.generatedKey!)).status).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('npm start names the cause in one line, without a stack trace', async () => {
    const { execFile } = await import('node:child_process');
    const run = (env: Record<string, string>) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          serviceArgs(),
          { cwd: root, env: { ...process.env, DATA_DIR: tmp(), LOG_LEVEL: 'silent', ...env } },
          (err, _out, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
        );
      });
    const blocker = await new Promise<import('node:net').Server>((resolve) => {
      import('node:net').then(({ createServer }) => {
        const s = createServer();
        s.listen(0, '127.0.0.1', () => resolve(s));
      });
    });
    try {
      const port = String((blocker.address() as import('node:net').AddressInfo).port);
      const busy = await run({ PORT: port });
      expect(busy.code).toBe(1);
      expect(busy.stderr.trim()).toBe(
        `Could not start: Port ${port} on 127.0.0.1 is already in use: stop the other process or set PORT.`,
      );
    } finally {
      blocker.close();
    }
    const badPort = await run({ PORT: '70000' });
    expect(badPort.code).toBe(2);
    expect(badPort.stderr.trim()).toBe('Configuration error: PORT must be a port number from 0 to 65535, got "70000"');
    const badLevel = await run({ LOG_LEVEL: 'loud' });
    expect(badLevel.stderr.trim()).toMatch(
      /^Configuration error: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"$/,
    );
  }, 60_000);
});

describe('npm start as a process', () => {
  it('runs the compiled build with node directly, and SIGTERM to the npm process stops it within 10 s, releasing the embedded database', async () => {
    const { spawn } = await import('node:child_process');
    const dir = tmp();
    const child = spawn('npm', ['start', '--silent'], {
      cwd: path.resolve(import.meta.dirname, '..'),
      env: { ...process.env, DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      out += b.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const deadline = Date.now() + 30_000;
    while (!/"msg":"listening"/.test(out)) {
      if (Date.now() > deadline) throw new Error(`not listening: ${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const url = /"url":"(http:[^"]+)"/.exec(out)![1]!;
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    // npm's script shell execs node on the build: npm's one child is the service itself, so signals reach it.
    const children = `/proc/${child.pid}/task/${child.pid}/children`;
    if (fs.existsSync(children)) {
      const pids = fs.readFileSync(children, 'utf8').trim().split(/\s+/);
      expect(pids).toHaveLength(1);
      expect(fs.readFileSync(`/proc/${pids[0]}/cmdline`, 'utf8').split('\0').filter(Boolean)).toEqual([
        expect.stringMatching(/node$/),
        'dist/src/main.js',
      ]);
      // glibc's malloc limited to two arenas (docs/deploy.md, Memory), unless the environment chose otherwise.
      const environ = fs.readFileSync(`/proc/${pids[0]}/environ`, 'utf8').split('\0');
      expect(environ).toContain(`MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX ?? 2}`);
      // V8's young generation allowed to grow to 32 MB semi-spaces, unless NODE_OPTIONS given to npm start says more.
      expect(environ.find((v) => v.startsWith('NODE_OPTIONS='))).toMatch(/^NODE_OPTIONS=--max-semi-space-size=32\b/);
    }
    const t0 = Date.now();
    child.kill('SIGTERM');
    const code = await exited;
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(code).toBe(0);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    // The lock is released: this process can open the database at once.
    const db = await openDatabase({ pgliteDir: path.join(dir, 'db') });
    await db.close();
  }, 60_000);
});

describe('shutdown', () => {
  it('finishes a request in flight within the grace period, then stops', async () => {
    const http = await import('node:http');
    const app = await startApp(config(tmp(), { DM_BOOTSTRAP_KEY: 'dm_shutdown_test_key_000000000000000000000' }), {
      log: silent,
    });
    const { port } = new URL(app.url);
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/api/mc-dm-categories/',
          headers: {
            'Forum-Api-Key': 'dm_shutdown_test_key_000000000000000000000',
            'content-type': 'application/x-www-form-urlencoded',
            'transfer-encoding': 'chunked',
          },
        },
        (res) => {
          let body = '';
          res.on('data', (c) => {
            body += c;
          });
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.on('error', reject);
      req.write('title=In');
      setTimeout(() => req.end('%20flight'), 400); // the rest arrives after shutdown began
    });
    // Shutdown begins once the server holds the connection (on a loaded machine 100 ms were not always enough).
    for (let held = 0; held < 1; await new Promise((r) => setTimeout(r, 20))) {
      held = await new Promise<number>((r) => app.server.getConnections((_e, n) => r(n)));
    }
    await new Promise((r) => setTimeout(r, 50));
    const closing = app.close({ graceMs: 5000 });
    const r = await answer;
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).category.title).toBe('In flight');
    await closing;
    await expect(fetch(`${app.url}/healthz`)).rejects.toThrow();
  });
});
