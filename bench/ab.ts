// `npm run bench:ab`: this checkout's service against another revision's, side by side on one PostgreSQL database,
// in alternating cells, so that both see the same machine. On a 2-core machine shared with PostgreSQL and the load
// generator, the same cell measured twice minutes apart moves by a third; measured in turns within one run, two
// builds' CPU per request can be compared to a few percent. Prints, per scenario, the service's CPU per request, the
// PostgreSQL server's (when it runs on this machine) and req/s of each (medians of the rounds) and the ratios. The
// scenarios: one-row reads of one row and of random rows of the catalogue (`varied`), a counted file download, a
// download edit and a comment post (each request on the next of 500 downloads), /healthz and a 100-row list.
//
//   npm run bench:ab                                  # the working tree against HEAD (what the uncommitted change does)
//   npm run bench:ab -- --against HEAD~3 --rounds 7   # against an older revision
//   npm run bench:ab -- --against HEAD --env DATABASE_STATEMENTS_PER_KEY=0   # a setting of this checkout's service
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { print, type DocumentNode } from 'graphql';
import pg from 'pg';
import { routes } from '../rest-adapter/routes.js';
import { openDatabase } from '../src/db/client.js';
import { seed, sizeFor } from './seed.js';
import { cpuMs, postgresCpu, postgresCpuBetween } from './proc.js';
import { SERVICE_ENV, serviceArgs } from './service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: {
    against: { type: 'string', default: 'HEAD' },
    env: { type: 'string', default: '' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    downloads: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '3' },
    clients: { type: 'string', default: '32' },
    'read-cache-mb': { type: 'string', default: '0' },
    only: { type: 'string' },
  },
});
const fail = (message: string): never => {
  console.error(message);
  process.exit(2);
};
const ROUNDS = Number(opts.rounds);
const SECONDS = Number(opts.seconds);
const CLIENTS = Number(opts.clients);
const DOWNLOADS = Number(opts.downloads);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) fail('--rounds takes a positive whole number.');
if (!(SECONDS > 0)) fail('--seconds takes a positive number.');
if (!Number.isInteger(CLIENTS) || CLIENTS < 1) fail('--clients takes a positive whole number.');
if (!Number.isInteger(DOWNLOADS) || DOWNLOADS < 1000) fail('--downloads takes a whole number from 1000.');
const extraEnv = Object.fromEntries(
  opts
    .env!.split(',')
    .filter(Boolean)
    .map((kv) => {
      const at = kv.indexOf('=');
      if (at < 1) fail(`--env takes NAME=value pairs separated by commas, got "${kv}".`);
      return [kv.slice(0, at), kv.slice(at + 1)];
    }),
);

const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
const rev = (() => {
  try {
    return git('rev-parse', '--verify', `${opts.against}^{commit}`);
  } catch {
    return fail(`--against: "${opts.against}" names no commit of this repository.`);
  }
})();

/** The other revision, checked out beside this one with this checkout's packages, generated and built. */
function buildOther(dir: string): string {
  git('worktree', 'add', '--detach', '--force', dir, rev);
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
  const run = (args: string[]) =>
    execFileSync(args[0]!, args.slice(1), { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  run(['npm', 'run', '-s', 'generate']);
  run([process.execPath, 'scripts/build.mjs']);
  return path.join(dir, 'dist/src/main.js');
}

const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;

const KEY = 'dm_ab_bench_key_00000000000000000000000000000';
const dbName = `dcs_ab_${process.pid}`;
const otherDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-ab-rev-'));
fs.rmSync(otherDir, { recursive: true });
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-ab-data-'));
const admin = new pg.Client({ connectionString: opts['database-url'] });
await admin.connect();
await admin.query(`CREATE DATABASE "${dbName}"`);
const children: ReturnType<typeof spawn>[] = [];
try {
  console.log(`Building ${opts.against} (${rev.slice(0, 10)}) beside this checkout…`);
  const otherMain = buildOther(otherDir);
  const url = new URL(opts['database-url']!);
  url.pathname = `/${dbName}`;
  const db = await openDatabase({ url: url.toString() });
  const s = await seed(db, KEY, sizeFor(DOWNLOADS));
  // One file with bytes in storage (the seed stores none), for the counted downloads: 64 bytes, its size set to match.
  const [blob] = await db.query<{ id: number; key: string }>(
    `UPDATE file SET "fileSize" = 64 WHERE id = (SELECT min(id) FROM file WHERE "storageKey" IS NOT NULL)
     RETURNING id, "storageKey" AS key`,
  );
  fs.mkdirSync(path.dirname(path.join(dataDir, 'files', blob!.key)), { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'files', blob!.key), Buffer.alloc(64, 7));
  await db.close();
  // Both on one database and one files directory (instances of one deployment), read cache off unless asked.
  const start = (name: string, args: string[], env: Record<string, string>, port: number) => {
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: {
        ...process.env,
        ...SERVICE_ENV,
        NODE_ENV: 'production',
        DATABASE_URL: url.toString(),
        PORT: String(port),
        DM_BOOTSTRAP_KEY: KEY,
        READ_CACHE_MB: opts['read-cache-mb']!,
        LOG_LEVEL: 'warn',
        DATA_DIR: dataDir,
        COMMENT_FLOOD_SECONDS: '0',
        ...env,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(child);
    return { name, child, port };
  };
  const services = [
    start(`${opts.against}`, [otherMain], {}, 38470),
    start('this checkout', serviceArgs(), extraEnv, 38471),
  ];
  for (const svc of services) {
    for (let i = 0; ; i++) {
      if (svc.child.exitCode !== null)
        throw new Error(`${svc.name}: the service exited with ${svc.child.exitCode} at start.`);
      try {
        if ((await fetch(`http://127.0.0.1:${svc.port}/readyz`)).status === 200) break;
      } catch {
        /* not yet */
      }
      if (i > 600) throw new Error(`${svc.name}: not ready after 60 s.`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const key = { 'forum-api-key': KEY };
  const randomDownload = () => 1 + Math.floor(Math.random() * DOWNLOADS);
  const getDocument = routes.find((r) => r.method === 'GET' && r.path === '/api/mc-dm-downloads/:download_id/')!;
  const listDocument = routes.find((r) => r.method === 'GET' && r.path === '/api/mc-dm-downloads/')!;
  const scenarios = [
    { name: 'REST download get, full', path: `/api/mc-dm-downloads/${s.downloadId}/?with=full` },
    {
      name: 'GraphQL download get, full',
      path: '/graphql',
      method: 'POST' as const,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: print(getDocument.document as DocumentNode),
        variables: { downloadId: s.downloadId, full: true },
      }),
    },
    {
      name: 'GraphQL download get, full, GET',
      path: `/graphql?${new URLSearchParams({
        query: print(getDocument.document as DocumentNode),
        variables: JSON.stringify({ downloadId: s.downloadId, full: true }),
      })}`,
    },
    // The same reads, each request on its own random download of the catalogue (bench:mixed's varied rows).
    {
      name: 'REST download get, full, varied',
      path: '/api/mc-dm-downloads/:id/',
      next: () => ({ path: `/api/mc-dm-downloads/${randomDownload()}/?with=full` }),
    },
    {
      name: 'GraphQL download get, full, varied',
      path: '/graphql',
      method: 'POST' as const,
      headers: { 'content-type': 'application/json' },
      next: () => ({
        path: '/graphql',
        body: JSON.stringify({
          query: print(getDocument.document as DocumentNode),
          variables: { downloadId: randomDownload(), full: true },
        }),
      }),
    },
    {
      name: 'REST comments of one download, varied',
      path: '/api/mc-dm-comments/',
      next: () => ({ path: `/api/mc-dm-comments/?download_id=${randomDownload()}` }),
    },
    { name: 'REST comments of one download', path: `/api/mc-dm-comments/?download_id=${s.commentDownloadId}` },
    { name: 'REST category get', path: `/api/mc-dm-categories/${s.leafCategory}/` },
    // A file's bytes, each request a counted download (the service's most frequent write), and the liveness probe.
    { name: 'REST file download, counted', path: `/api/mc-dm-files/${blob!.id}/data/` },
    { name: '/healthz', path: '/healthz' },
    // The writer's two other writes in bench:mixed, each request on the next of 500 downloads (one download edited by
    // 32 clients at once would measure its row lock's queue), each a change (the same tag line again writes nothing).
    {
      name: 'REST download edit',
      path: '/api/mc-dm-downloads/:id/',
      method: 'PUT' as const,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      next: (n: number) => ({
        path: `/api/mc-dm-downloads/${1 + (n % 500)}/`,
        body: `tag_line=Edited+by+the+benchmark+${n}`,
      }),
    },
    {
      name: 'REST comment post',
      path: '/api/mc-dm-comments/',
      method: 'POST' as const,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'forum-api-user': '1' },
      next: (n: number) => ({
        path: '/api/mc-dm-comments/',
        body: `download_id=${1 + (n % 500)}&message=Benchmark+comment+${n}`,
      }),
    },
    { name: 'REST list, 100, full', path: '/api/mc-dm-downloads/?per_page=100&with=full' },
    {
      name: 'GraphQL list, 100, full',
      path: '/graphql',
      method: 'POST' as const,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query: print(listDocument.document as DocumentNode),
        variables: { perPage: 100, full: true },
      }),
    },
  ].filter((sc) => !opts.only || new RegExp(opts.only).test(sc.name));
  let sent = 0;
  const cell = (svc: (typeof services)[number], sc: (typeof scenarios)[number], seconds: number, clients: number) =>
    autocannon({
      url: `http://127.0.0.1:${svc.port}${sc.path}`,
      method: sc.method ?? 'GET',
      headers: { ...key, ...sc.headers },
      body: sc.body,
      connections: clients,
      duration: seconds,
      ...(sc.next && {
        requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, ...sc.next!(sent++) }) }],
      }),
    });
  // Warm-up: both services compile and plan every scenario before anything is measured.
  for (const svc of services) for (const sc of scenarios) await cell(svc, sc, 2, 8);
  const figures = new Map<string, { cpu: number[]; db: number[]; rps: number[]; errors: number }>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const sc of scenarios) {
      // In turns, the first of each pair alternating, so that neither is always measured on a machine the other
      // has just warmed or loaded.
      for (const svc of round % 2 === 0 ? services : [...services].reverse()) {
        const before = cpuMs(svc.child.pid) ?? 0;
        const db0 = postgresCpu();
        const r = await cell(svc, sc, SECONDS, CLIENTS);
        const used = (cpuMs(svc.child.pid) ?? 0) - before;
        // PostgreSQL's CPU over the cell (the server and every backend: the other service's idle timers included).
        const dbUsed = postgresCpuBetween(db0, postgresCpu()) ?? 0;
        const f = figures.get(`${sc.name}\0${svc.name}`) ?? { cpu: [], db: [], rps: [], errors: 0 };
        f.cpu.push(used / Math.max(1, r.requests.total));
        f.db.push(dbUsed / Math.max(1, r.requests.total));
        f.rps.push(r.requests.total / r.duration);
        f.errors += r.errors + r.timeouts + r.non2xx;
        figures.set(`${sc.name}\0${svc.name}`, f);
      }
    }
  }
  const [a, b] = services;
  // Peak resident memory of each service over the whole run (the kernel's high-water mark).
  const peakMb = (pid: number) =>
    Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  console.log(
    `\n${ROUNDS} rounds of ${SECONDS} s cells, ${CLIENTS} clients, ${DOWNLOADS} downloads, read cache ${opts['read-cache-mb']} MB; A = ${a!.name}, B = ${b!.name}${opts.env ? ` (${opts.env})` : ''}. Medians:\n`,
  );
  const rows = scenarios.map((sc) => {
    const fa = figures.get(`${sc.name}\0${a!.name}`)!;
    const fb = figures.get(`${sc.name}\0${b!.name}`)!;
    // Each round measures A and B back to back: the spread of their ratio over the rounds is what this machine's
    // drift does to one comparison (a build against itself has moved by a quarter on a busy machine).
    const perRound = fa.cpu.map((x, i) => fb.cpu[i]! / x).sort((x, y) => x - y);
    return [
      sc.name,
      `${median(fa.cpu).toFixed(3)} / ${median(fb.cpu).toFixed(3)}`,
      (median(fb.cpu) / median(fa.cpu)).toFixed(2),
      `${perRound[0]!.toFixed(2)}–${perRound[perRound.length - 1]!.toFixed(2)}`,
      `${median(fa.db).toFixed(3)} / ${median(fb.db).toFixed(3)}`,
      `${median(fa.rps).toFixed(0)} / ${median(fb.rps).toFixed(0)}`,
      (median(fb.rps) / median(fa.rps)).toFixed(2),
      String(fa.errors + fb.errors),
    ];
  });
  const head = [
    'scenario',
    'CPU ms/req A / B',
    'B ÷ A',
    'rounds',
    'PostgreSQL CPU ms/req A / B',
    'req/s A / B',
    'B ÷ A',
    'errors',
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log([line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n'));
  console.log(`\npeak RSS: A ${peakMb(a!.child.pid!).toFixed(0)} MB, B ${peakMb(b!.child.pid!).toFixed(0)} MB`);
} catch (err) {
  // Thrown, not exited: the services, the other revision's worktree and the database are still removed below.
  console.error((err as Error).message);
  process.exitCode = 2;
} finally {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  await Promise.all(
    children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : Promise.resolve())),
  );
  await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  await admin.end();
  fs.rmSync(path.join(otherDir, 'node_modules'), { force: true }); // the link to this checkout's packages, not them
  try {
    git('worktree', 'remove', '--force', otherDir);
  } catch {
    fs.rmSync(otherDir, { recursive: true, force: true });
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
}
