// `npm run bench`: seeds a realistic catalogue into a fresh embedded database, starts the service as a child
// process, drives it over loopback with autocannon at several concurrency levels, then measures the baselines
// in the same run — (a) the same operation through /graphql, (b) a bare Node handler with hand-written SQL — and
// prints requests/s, p50/p99 latency, peak RSS and the ratios the targets are stated in.
// With --database-url it also measures the peer a user would pick instead, PostGraphile 4 (bench/peer.ts), on the
// same database with the same fields, and prints this service's req/s ÷ the peer's for every read scenario.
// Options: --quick (small catalogue, short runs: a smoke test of the harness), --seconds N, --connections 1,8,32,
// --downloads N (catalogue size), --database-url postgres://… (run on a fresh database on that PostgreSQL server
// instead of the embedded one), --instances 1,2 (with --database-url: the mixed scenario against 1, then 2, service
// processes on the same database), --growth 50000,500000 (the read scenarios at one size, then again after growing
// the same database to the other), --only <regex>, --cpu-prof (where the service's CPU time went over its
// measured runs: self time by package and function, printed when it stops; pair it with --only).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { print, type DocumentNode } from 'graphql';
import pg from 'pg';
import { openDatabase } from '../src/db/client.js';
import { seed, grow, sizeFor, type SeedResult, type SeedSize } from './seed.js';
import { summarize, type CpuProfile } from './cpu-profile.js';
import { cpuMs, postgresCpu } from './proc.js';
import { SERVICE_ENV, serviceArgs } from './service.js';
import { peerScenarios, type PeerScenario, type Rows } from './peer-scenarios.js';
import { routes } from '../rest-adapter/routes.js';
import { startApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    seconds: { type: 'string' },
    connections: { type: 'string' },
    'database-url': { type: 'string' },
    only: { type: 'string' },
    instances: { type: 'string' },
    downloads: { type: 'string' },
    growth: { type: 'string' },
    'cpu-prof': { type: 'boolean', default: false },
  },
});
const fail = (message: string): never => {
  console.error(message);
  process.exit(2);
};
const INSTANCES = opts.instances ? opts.instances.split(',').map(Number) : null;
if (INSTANCES && (!opts['database-url'] || INSTANCES.some((n) => !Number.isInteger(n) || n < 1))) {
  console.error(
    '--instances takes counts such as 1,2 and needs --database-url: instances share a PostgreSQL database.',
  );
  process.exit(2);
}
const count = (text: string) => (/^\d[\d_]*$/.test(text) ? Number(text.replaceAll('_', '')) : NaN);
/** --growth small,big: two catalogue sizes, the second larger. */
const GROWTH = opts.growth ? opts.growth.split(',').map(count) : null;
if (
  GROWTH &&
  (GROWTH.length !== 2 || GROWTH.some((n) => !Number.isSafeInteger(n) || n < 1000) || GROWTH[1]! <= GROWTH[0]!)
) {
  fail('--growth takes two catalogue sizes, the second larger, each at least 1000 downloads: --growth 50000,500000');
}
if (GROWTH && (INSTANCES || opts.downloads))
  fail('--growth sets the catalogue sizes itself; it does not go with --instances or --downloads.');
const DOWNLOADS = opts.downloads !== undefined ? count(opts.downloads) : opts.quick ? 2000 : 50_000;
if (!Number.isSafeInteger(DOWNLOADS) || DOWNLOADS < 1000 || DOWNLOADS > 5_000_000)
  fail('--downloads takes a number of downloads from 1000 to 5000000.');
// Growth runs measure 2 × 21 runs (7 read scenarios × REST, GraphQL and the peer): 32 connections only and 8 s each
// keep `--growth 50000,500000` on a PostgreSQL server around 10 minutes on a 2-core machine (the limit is 15).
const SECONDS = Number(opts.seconds ?? (opts.quick ? 1 : GROWTH ? 8 : 4));
const LEVELS = (opts.connections ?? (GROWTH ? '32' : '1,8,32')).split(',').map(Number);
if (!(SECONDS > 0) || LEVELS.some((n) => !Number.isInteger(n) || n < 1))
  fail('--seconds takes a positive number and --connections counts such as 1,8,32.');
/** A warm-up before each scenario's first measured run (not with --quick): both servers start cold. */
const WARMUP_SECONDS = opts.quick ? 0 : 1;
const PEER = opts['database-url'] !== undefined && !INSTANCES;
/** --only <regex>: run the scenarios whose names match (a baseline runs when its compared scenario does). */
const ONLY = opts.only ? new RegExp(opts.only) : null;
const selected = (sc: Scenario) => !ONLY || ONLY.test(sc.name) || (sc.compare !== undefined && ONLY.test(sc.compare));
const KEY = 'dm_bench_super_key_0000000000000000000000000000';
/** A port nothing listens on now (other benchmarks and test runs may share the machine). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
const PORT = await freePort();
const BASE = `http://127.0.0.1:${PORT}`;

interface Scenario {
  name: string;
  kind: 'rest' | 'graphql' | 'baseline' | 'peer';
  requests: autocannon.Request[];
  /** Scenario whose figures this one is compared with (same operation through another face). */
  compare?: string;
}

function restScenario(name: string, pathAndQuery: string): Scenario {
  return { name, kind: 'rest', requests: [{ method: 'GET', path: pathAndQuery }] };
}

/** The same operation the REST route runs, posted to /graphql with the equivalent variables. */
function graphqlScenario(
  name: string,
  method: string,
  routePath: string,
  variables: Record<string, unknown>,
  compare: string,
): Scenario | null {
  const route = routes.find((r) => r.method === method && r.path === routePath);
  if (!route) return null;
  const body = JSON.stringify({ query: print(route.document as DocumentNode), variables });
  return {
    name,
    kind: 'graphql',
    compare,
    requests: [{ method: 'POST', path: '/graphql', body, headers: { 'content-type': 'application/json' } }],
  };
}

function scenarios(s: SeedResult): Scenario[] {
  const list: (Scenario | null)[] = [
    restScenario('categories list', '/api/mc-dm-categories/'),
    restScenario('downloads list 20', '/api/mc-dm-downloads/?per_page=20'),
    restScenario('downloads list 100', '/api/mc-dm-downloads/?per_page=100'),
    restScenario('downloads list 20 full', '/api/mc-dm-downloads/?per_page=20&with=full'),
    restScenario('downloads list 100 full', '/api/mc-dm-downloads/?per_page=100&with=full'),
    restScenario('downloads list by category', `/api/mc-dm-downloads/?category_id=${s.leafCategory}&per_page=20`),
    restScenario('download get', `/api/mc-dm-downloads/${s.downloadId}/`),
    restScenario('download get full', `/api/mc-dm-downloads/${s.downloadId}/?with=full`),
    restScenario('comments list', `/api/mc-dm-comments/?download_id=${s.commentDownloadId}`),
    restScenario('files list', `/api/mc-dm-files/?version_id=${s.versionId}`),
    graphqlScenario('graphql categories list', 'GET', '/api/mc-dm-categories/', { full: false }, 'categories list'),
    graphqlScenario(
      'graphql downloads list 20',
      'GET',
      '/api/mc-dm-downloads/',
      { perPage: 20, full: false },
      'downloads list 20',
    ),
    graphqlScenario(
      'graphql downloads list 100 full',
      'GET',
      '/api/mc-dm-downloads/',
      { perPage: 100, full: true },
      'downloads list 100 full',
    ),
    graphqlScenario(
      'graphql download get full',
      'GET',
      '/api/mc-dm-downloads/:download_id/',
      { downloadId: s.downloadId, full: true },
      'download get full',
    ),
    graphqlScenario(
      'graphql comments list',
      'GET',
      '/api/mc-dm-comments/',
      { downloadId: s.commentDownloadId, full: false },
      'comments list',
    ),
    graphqlScenario(
      'graphql files list',
      'GET',
      '/api/mc-dm-files/',
      { versionId: s.versionId, full: false },
      'files list',
    ),
    graphqlScenario(
      'graphql downloads list by category',
      'GET',
      '/api/mc-dm-downloads/',
      { categoryId: s.leafCategory, perPage: 20, full: false },
      'downloads list by category',
    ),
    // Last: it writes (comments on the comments list's download, categories), and every read above sees the seed.
    {
      name: 'mixed read/write',
      kind: 'rest',
      requests: [
        { method: 'GET', path: `/api/mc-dm-downloads/${s.downloadId}/?with=full` },
        { method: 'GET', path: '/api/mc-dm-downloads/?per_page=20' },
        { method: 'GET', path: `/api/mc-dm-comments/?download_id=${s.commentDownloadId}` },
        {
          method: 'PUT',
          path: `/api/mc-dm-downloads/${s.downloadId}/`,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'tag_line=Updated+by+the+benchmark',
        },
        {
          method: 'POST',
          path: '/api/mc-dm-comments/',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'forum-api-user': '1' },
          body: `download_id=${s.commentDownloadId}&message=Benchmark+comment`,
        },
        {
          method: 'POST',
          path: '/api/mc-dm-categories/',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'title=Bench',
        },
      ],
    },
  ];
  return list.filter((x): x is Scenario => x !== null);
}

const baselineScenarios = (s: SeedResult): Scenario[] => [
  {
    name: 'baseline downloads list 20',
    kind: 'baseline',
    compare: 'downloads list 20',
    requests: [{ method: 'GET', path: '/api/mc-dm-downloads/?per_page=20' }],
  },
  {
    name: 'baseline downloads list by category',
    kind: 'baseline',
    compare: 'downloads list by category',
    requests: [{ method: 'GET', path: `/api/mc-dm-downloads/?category_id=${s.leafCategory}&per_page=20` }],
  },
  {
    name: 'baseline download get',
    kind: 'baseline',
    compare: 'download get',
    requests: [{ method: 'GET', path: `/api/mc-dm-downloads/${s.downloadId}/` }],
  },
];

interface Figure {
  scenario: string;
  kind: string;
  connections: number;
  rps: number;
  p50: number;
  p99: number;
  p99Established: number;
  errors: number;
  non2xx: number;
  peakRssMb: number;
  cpuMs: number | null;
  dbCpuMs: number | null;
  cacheHitPct?: number | null;
}

/** CPU time of every PostgreSQL process on this machine (its server and backends), in ms; null without /proc. */
function postgresCpuMs(): number | null {
  const byProcess = postgresCpu();
  return byProcess.size ? [...byProcess.values()].reduce((a, b) => a + b, 0) : null;
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** The service's read cache counters (hits, misses) from /metrics; null from a server that has none (the peer, the baseline). */
async function readCacheCounts(url: string): Promise<{ hit: number; miss: number } | null> {
  try {
    const text = await (await fetch(`${url}/metrics`, { headers: { 'forum-api-key': KEY } })).text();
    const count = (result: string) =>
      Number(new RegExp(`^dcs_read_cache_total\\{result="${result}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
    const counts = { hit: count('hit'), miss: count('miss') };
    return Number.isNaN(counts.hit) || Number.isNaN(counts.miss) ? null : counts;
  } catch {
    return null;
  }
}

async function measure(sc: Scenario, connections: number, pid: number, url = BASE): Promise<Figure> {
  let peak = rssMb(pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(pid));
  }, 50);
  // Latencies of requests on connections already open: a connection's first request also waits for the server to
  // accept it, which a saturated event loop can hold back for seconds at the start of a run (bench/README.md).
  const established: number[] = [];
  const seen = new WeakSet<object>();
  const instance = autocannon({
    url,
    connections,
    duration: SECONDS,
    requests: sc.requests,
    headers: { 'forum-api-key': KEY },
    timeout: 30,
  }) as unknown as autocannon.Instance & PromiseLike<autocannon.Result>; // an emitter that is also thenable
  instance.on('response', (client: object, _status: number, _bytes: number, ms: number) => {
    if (seen.has(client)) established.push(ms);
    else seen.add(client);
  });
  const cpu0 = cpuMs(pid);
  const db0 = opts['database-url'] ? postgresCpuMs() : null;
  const cache0 = await readCacheCounts(url);
  const result = await instance;
  const cpu1 = cpuMs(pid);
  const db1 = opts['database-url'] ? postgresCpuMs() : null;
  clearInterval(sampler);
  // The share of the run's answers the read cache gave (it is off, or the server is not the service: null).
  const cache1 = cache0 && (await readCacheCounts(url));
  const answered = cache0 && cache1 ? cache1.hit - cache0.hit + (cache1.miss - cache0.miss) : 0;
  const cacheHitPct =
    cache0 && cache1 && answered > 0 ? Math.round(((cache1.hit - cache0.hit) / answered) * 1000) / 10 : null;
  // CPU per request: what throughput on a shared 2-core machine hides. A PostgreSQL server's share is counted apart
  // (a server that has the database build its JSON moves work there); backends that ended during the run are missed.
  // A count over a large table runs in parallel workers that end before the run does, taking their CPU time with them:
  // a total that went down is not reported.
  const perRequest = (a: number | null, b: number | null) =>
    a === null || b === null || b < a || result.requests.total === 0
      ? null
      : Math.round(((b - a) / result.requests.total) * 1000) / 1000;
  established.sort((a, b) => a - b);
  const p99Established = established.length
    ? Math.round(established[Math.min(established.length - 1, Math.floor(0.99 * established.length))]!)
    : 0;
  return {
    scenario: sc.name,
    kind: sc.kind,
    connections,
    // Completed requests over the run's length: autocannon's per-second average reads 0 for a 1 s run in which the
    // first responses came after its first sample.
    rps:
      Math.round((result.duration > 0 ? result.requests.total / result.duration : result.requests.average) * 10) / 10,
    p50: result.latency.p50,
    p99: result.latency.p99,
    p99Established,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    peakRssMb: Math.round(peak),
    cpuMs: perRequest(cpu0, cpu1),
    dbCpuMs: perRequest(db0, db1),
    cacheHitPct,
  };
}

/**
 * SQL statements per request for a page of 5 and of 100 downloads (with=full), counted at the driver in an
 * in-process instance on the same database (the service has stopped), with the read cache off: the target is that
 * they are equal.
 */
async function statementsPerRequest(
  target: { url: string } | { pgliteDir: string },
  dataDir: string,
): Promise<Record<string, number>> {
  const db = await openDatabase(target);
  // The read cache off: the second request would be answered from it, with no statement at all.
  const app = await startApp(
    loadConfig({}, { port: 0, host: '127.0.0.1', dataDir, logLevel: 'silent', bootstrapKey: KEY, readCacheMb: 0 }),
    { db, log: createLogger('silent') },
  );
  const counts: Record<string, number> = {};
  try {
    for (const route of [
      '/api/mc-dm-downloads/?per_page=5&with=full',
      '/api/mc-dm-downloads/?per_page=100&with=full',
      '/api/mc-dm-downloads/?per_page=100',
    ]) {
      const get = () => fetch(app.url + route, { headers: { 'forum-api-key': KEY } }).then((r) => r.text());
      await get(); // the key and permission tables are cached after the first request
      const before = db.statements();
      await get();
      counts[route] = db.statements() - before;
    }
  } finally {
    await app.close(); // closes the database too
  }
  return counts;
}

async function waitReady(child: ChildProcess, url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`process exited with ${child.exitCode} before it was ready`);
    try {
      const r = await fetch(url);
      if (r.status < 500) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become ready`);
}

const PROFILE_DIR = opts['cpu-prof'] ? fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-bench-prof-')) : null;

/** The service (compiled, bench/service.ts), or a script of bench/ run through tsx. */
function start(script: 'service' | `bench/${string}`, env: Record<string, string>): ChildProcess {
  const args =
    script === 'service'
      ? serviceArgs(PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [])
      : ['--import', 'tsx', script];
  // NODE_ENV=production for every server measured, as they would be deployed (graphql-js skips its development checks).
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'production', ...(script === 'service' ? SERVICE_ENV : {}), ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return child;
}

/**
 * SIGTERM, then SIGKILL if the process has not exited 20 s later (its own grace period is 10 s): a server that
 * cannot shut down must not hang the benchmark. Says so when it happens.
 */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const kill = setTimeout(() => {
      console.error(`  (${child.spawnargs.at(-1)} had not exited 20 s after SIGTERM: killed)`);
      child.kill('SIGKILL');
    }, 20_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
  if (PROFILE_DIR) printProfiles();
}

/** --cpu-prof: the profiles the service processes wrote when they stopped, summarized, then removed. */
function printProfiles(): void {
  for (const file of fs.readdirSync(PROFILE_DIR!).filter((f) => f.endsWith('.cpuprofile'))) {
    const full = path.join(PROFILE_DIR!, file);
    const summary = summarize(JSON.parse(fs.readFileSync(full, 'utf8')) as CpuProfile, { packages: 25, functions: 40 });
    console.log(
      `\nWhere the service's CPU time went (${summary.totalMs.toFixed(0)} ms sampled, start-up included), self time by package:`,
    );
    for (const line of summary.packages) console.log(line);
    console.log('\nBy function:');
    for (const line of summary.functions) console.log(line);
    fs.rmSync(full);
  }
}

function table(figures: Figure[]): string {
  return textTable(
    ['scenario', 'conns', 'req/s', 'p50 ms', 'p99 ms', 'p99 open conns ms', 'peak RSS MB', 'errors'],
    figures.map((f) => [
      f.scenario,
      String(f.connections),
      String(f.rps),
      String(f.p50),
      String(f.p99),
      String(f.p99Established),
      String(f.peakRssMb),
      String(f.errors + f.non2xx),
    ]),
  );
}

/** A fresh database on the given server (dropped by `drop`), or the embedded one in `dataDir`. */
async function createDatabase(
  dataDir: string,
): Promise<{ databaseUrl?: string; drop(): Promise<void>; open(): ReturnType<typeof openDatabase> }> {
  if (!opts['database-url'])
    return { drop: async () => {}, open: () => openDatabase({ pgliteDir: path.join(dataDir, 'db') }) };
  const name = `dcs_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: opts['database-url'] });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(opts['database-url']);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  return {
    databaseUrl,
    open: () => openDatabase({ url: databaseUrl }),
    drop: async () => {
      const c = new pg.Client({ connectionString: opts['database-url'] });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    },
  };
}

const describe = (size: SeedSize) =>
  `${size.downloads.toLocaleString('en')} downloads, ${(size.downloads * size.filesPerDownload).toLocaleString('en')} files, ${(size.downloads * size.commentsPerDownload).toLocaleString('en')} comments, ${size.users.toLocaleString('en')} users, 200 categories`;

async function runAll(figures: Figure[], list: Scenario[], pid: number, url = BASE): Promise<void> {
  for (const sc of list) {
    // On one connection: a run at many would leave requests in flight that the measured run then waits behind.
    if (WARMUP_SECONDS > 0)
      await autocannon({
        url,
        connections: 1,
        duration: WARMUP_SECONDS,
        requests: sc.requests,
        headers: { 'forum-api-key': KEY },
        timeout: 30,
      });
    for (const c of LEVELS) {
      const f = await measure(sc, c, pid, url);
      figures.push(f);
      const cpu =
        f.cpuMs === null ? '' : `  CPU/req ${f.cpuMs} ms${f.dbCpuMs === null ? '' : ` + PostgreSQL ${f.dbCpuMs} ms`}`;
      console.log(
        `  ${sc.name.padEnd(40)} c=${String(c).padStart(2)}  ${String(f.rps).padStart(8)} req/s  p50 ${f.p50} ms  p99 ${f.p99} ms (open connections ${f.p99Established} ms)${cpu}${f.cacheHitPct == null ? '' : `  read cache hits ${f.cacheHitPct}%`}${f.errors + f.non2xx ? `  (${f.errors + f.non2xx} errors)` : ''}`,
      );
    }
  }
}

async function answer(url: string, request: autocannon.Request): Promise<any> {
  const res = await fetch(url + request.path, {
    method: request.method,
    body: request.body as string | undefined,
    headers: { 'forum-api-key': KEY, ...(request.headers as Record<string, string> | undefined) },
  });
  const text = await res.text();
  if (res.status !== 200)
    throw new Error(`${request.method} ${url}${request.path} answered ${res.status}: ${text.slice(0, 500)}`);
  const json = JSON.parse(text);
  if (json.errors) throw new Error(`${request.method} ${url}${request.path} answered errors: ${text.slice(0, 500)}`);
  return json;
}

/**
 * Before anything is measured: one request of every compared scenario through REST, the service's GraphQL and the
 * peer must give the same total and the same rows (ids, in order, with their embedded objects). Throws if not.
 */
async function checkSameRows(peers: PeerScenario[], service: Scenario[], peerUrl: string): Promise<void> {
  const byName = new Map(service.map((sc) => [sc.name, sc]));
  for (const ps of peers) {
    const rest = byName.get(ps.compare)!;
    const gql = byName.get(ps.graphql)!;
    const faces: [string, Rows][] = [
      [`REST ${rest.requests[0]!.path}`, ps.restRows(await answer(BASE, rest.requests[0]!))],
      ["the service's GraphQL", ps.graphqlRows(await answer(BASE, gql.requests[0]!))],
      ['the peer', ps.peerRows(await answer(peerUrl, peerRequest(ps)))],
    ];
    const [first, ...others] = faces;
    if (first![1].ids.length === 0) throw new Error(`${ps.compare}: no rows to compare through ${first![0]}`);
    for (const [face, rows] of others) {
      if (JSON.stringify(rows) !== JSON.stringify(first![1])) {
        throw new Error(
          `${ps.compare}: ${face} answers other rows than ${first![0]}:\n  ${JSON.stringify(rows)}\n  ${JSON.stringify(first![1])}`,
        );
      }
    }
  }
}

/** The same read measured on a service started with the read cache off (READ_CACHE_MB=0). */
const computedName = (name: string) => `${name} (cache off)`;
const computed = (sc: Scenario): Scenario => ({
  ...sc,
  name: computedName(sc.name),
  ...(sc.compare ? { compare: computedName(sc.compare) } : {}),
});
const computedPeer = (ps: PeerScenario): PeerScenario => ({
  ...ps,
  compare: computedName(ps.compare),
  graphql: computedName(ps.graphql),
});

const peerRequest = (ps: PeerScenario): autocannon.Request => ({
  method: 'POST',
  path: '/graphql',
  body: ps.body,
  headers: { 'content-type': 'application/json' },
});
const peerScenario = (ps: PeerScenario): Scenario => ({
  name: ps.name,
  kind: 'peer',
  compare: ps.compare,
  requests: [peerRequest(ps)],
});

/**
 * The service's read scenarios, then (with a PostgreSQL server) the peer's on the same database, then
 * `afterPeer` (scenarios that write). Both servers are started first and their answers compared.
 */
async function measureServiceAndPeer(
  figures: Figure[],
  env: Record<string, string>,
  databaseUrl: string | undefined,
  reads: Scenario[],
  peers: PeerScenario[],
  afterPeer: Scenario[],
): Promise<void> {
  const service = start('service', env);
  let peer: ChildProcess | null = null;
  try {
    await waitReady(service, `${BASE}/readyz`);
    if (databaseUrl && peers.length > 0) {
      peer = start('bench/peer.ts', {
        DATABASE_URL: databaseUrl,
        PORT: String(PEER_PORT),
        DATABASE_POOL_SIZE: env.DATABASE_POOL_SIZE ?? '10',
      });
      await waitReady(peer, `${PEER_BASE}/graphql`);
      await checkSameRows(peers, scenarios(SEEDED!), PEER_BASE);
      console.log(`  (the peer answers the same rows and totals as REST and GraphQL in ${peers.length} scenario(s))`);
    }
    await runAll(figures, reads, service.pid!);
    if (peer) {
      console.log('Peer (PostGraphile 4, same database, same fields):');
      await runAll(figures, peers.map(peerScenario), peer.pid!, PEER_BASE);
      await stop(peer);
      peer = null;
    }
    if (afterPeer.length > 0) await runAll(figures, afterPeer, service.pid!);
  } finally {
    await Promise.all([stop(service), ...(peer ? [stop(peer)] : [])]);
  }
}

interface PeerRatio {
  scenario: string;
  connections: number;
  rest: number | null;
  graphql: number | null;
  peer: number;
  restRatio: number | null;
  graphqlRatio: number | null;
  /** CPU per request, server and PostgreSQL together, in ms (null where not measured). */
  cpu: { rest: number | null; graphql: number | null; peer: number | null };
}

/** Server and PostgreSQL CPU per request together (ms), when both were measured. */
const cpuTotal = (f: Figure | undefined) =>
  f && f.cpuMs !== null && f.dbCpuMs !== null ? Math.round((f.cpuMs + f.dbCpuMs) * 100) / 100 : null;

/** This service's req/s ÷ the peer's, per compared scenario and connection level. */
function peerRatios(figures: Figure[], peers: PeerScenario[]): PeerRatio[] {
  const rows: PeerRatio[] = [];
  const ok = (f: Figure | undefined) => (f && f.errors + f.non2xx === 0 ? f : undefined);
  for (const ps of peers) {
    for (const c of LEVELS) {
      const peer = ok(figures.find((f) => f.scenario === ps.name && f.connections === c));
      if (!peer || peer.rps <= 0) continue;
      const rest = ok(figures.find((f) => f.scenario === ps.compare && f.connections === c));
      const gql = ok(figures.find((f) => f.scenario === ps.graphql && f.connections === c));
      const ratio = (f: Figure | undefined) => (f ? Math.round((f.rps / peer.rps) * 100) / 100 : null);
      rows.push({
        scenario: ps.compare,
        connections: c,
        rest: rest?.rps ?? null,
        graphql: gql?.rps ?? null,
        peer: peer.rps,
        restRatio: ratio(rest),
        graphqlRatio: ratio(gql),
        cpu: { rest: cpuTotal(rest), graphql: cpuTotal(gql), peer: cpuTotal(peer) },
      });
    }
  }
  return rows;
}

function printPeerRatios(rows: PeerRatio[], title: string): void {
  if (rows.length === 0) return;
  const top = Math.max(...LEVELS);
  const fmt = (v: number | null) => (v === null ? 'n/a' : String(v));
  console.log(`\n${title}\n`);
  console.log(
    textTable(
      [
        'scenario',
        'conns',
        'REST req/s',
        'GraphQL req/s',
        'peer req/s',
        'REST ÷ peer',
        'GraphQL ÷ peer',
        'CPU ms/req REST / GraphQL / peer',
      ],
      rows.map((r) => [
        r.scenario,
        String(r.connections),
        fmt(r.rest),
        fmt(r.graphql),
        String(r.peer),
        fmt(r.restRatio),
        fmt(r.graphqlRatio),
        `${fmt(r.cpu.rest)} / ${fmt(r.cpu.graphql)} / ${fmt(r.cpu.peer)}`,
      ]),
    ),
  );
  console.log('  (CPU ms/req: the server process and PostgreSQL together, per request, over the same runs)');
  const atTop = rows.filter((r) => r.connections === top);
  if (atTop.length === 0) return;
  console.log(`\n  At ${top} connections (target ≥ 1.0 for both faces):`);
  for (const r of atTop) {
    const met =
      r.restRatio !== null && r.graphqlRatio !== null
        ? r.restRatio >= 1 && r.graphqlRatio >= 1
          ? 'met'
          : 'NOT met'
        : '(not measured)';
    console.log(
      `    ${r.scenario.padEnd(28)} REST ÷ peer ${fmt(r.restRatio).padStart(5)}   GraphQL ÷ peer ${fmt(r.graphqlRatio).padStart(5)}   ${met}`,
    );
  }
}

function textTable(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const PEER_PORT = await freePort();
const PEER_BASE = `http://127.0.0.1:${PEER_PORT}`;
let SEEDED: SeedResult | null = null;
const PEER_SKIPPED = 'Peer (PostGraphile 4) skipped: it needs a PostgreSQL server (--database-url postgres://…).';

function serviceEnv(databaseUrl: string | undefined, dataDir: string): Record<string, string> {
  return {
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    DATA_DIR: dataDir,
    PORT: String(PORT),
    HOST: '127.0.0.1',
    DM_BOOTSTRAP_KEY: KEY,
    LOG_LEVEL: 'warn',
    BASE_URL: 'http://localhost',
    COMMENT_FLOOD_SECONDS: '0',
  };
}

function writeResults(databaseUrl: string | undefined, suffix: string, data: Record<string, unknown>): void {
  const out = path.join(
    root,
    'bench/results',
    `${new Date().toISOString().replace(/[:.]/g, '-')}${databaseUrl ? '-postgres' : ''}${suffix}.json`,
  );
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(
    out,
    JSON.stringify(
      {
        date: new Date().toISOString(),
        database: databaseUrl ? 'postgres' : 'pglite',
        machine: {
          cpus: os.cpus().length,
          model: os.cpus()[0]?.model,
          node: process.version,
          memGb: Math.round(os.totalmem() / 2 ** 30),
          loadAverage: os.loadavg(),
        },
        seconds: SECONDS,
        connections: LEVELS,
        ...data,
      },
      null,
      2,
    ),
  );
  console.log(`\nWritten to ${path.relative(root, out)}`);
}

/** --growth small,big: the read scenarios compared with the peer, at one size and after growing the same database. */
async function growth(dataDir: string, db: Awaited<ReturnType<typeof createDatabase>>): Promise<void> {
  const [small, big] = GROWTH!.map(sizeFor) as [SeedSize, SeedSize];
  const phases: { size: SeedSize; seedSeconds: number; figures: Figure[] }[] = [];
  let seeded: SeedResult | null = null;
  for (const size of [small, big]) {
    const t0 = Date.now();
    const conn = await db.open();
    if (!seeded) {
      console.log(`Seeding ${describe(size)} …`);
      seeded = await seed(conn, KEY, size);
    } else {
      console.log(`Growing the catalogue to ${describe(size)} …`);
      await grow(conn, seeded, size);
      seeded = { ...(seeded as SeedResult), size };
    }
    await conn.close();
    const seedSeconds = (Date.now() - t0) / 1000;
    console.log(`  ${phases.length ? 'Grown' : 'Seeded'} in ${seedSeconds.toFixed(1)} s.`);
    SEEDED = seeded;
    const all = scenarios(seeded);
    const peers = peerScenarios(seeded).filter((ps) => selected(peerScenario(ps)));
    const names = new Set(peers.flatMap((ps) => [ps.compare, ps.graphql]));
    const reads = all.filter((sc) => names.has(sc.name));
    const figures: Figure[] = [];
    console.log(`Service (REST and GraphQL), ${size.downloads.toLocaleString('en')} downloads:`);
    await measureServiceAndPeer(
      figures,
      serviceEnv(db.databaseUrl, dataDir),
      db.databaseUrl,
      reads,
      db.databaseUrl ? peers : [],
      [],
    );
    console.log(
      `Service with the read cache off (READ_CACHE_MB=0: every answer computed), ${size.downloads.toLocaleString('en')} downloads:`,
    );
    await measureServiceAndPeer(
      figures,
      { ...serviceEnv(db.databaseUrl, dataDir), READ_CACHE_MB: '0' },
      undefined,
      reads.map(computed),
      [],
      [],
    );
    phases.push({ size, seedSeconds, figures });
    if (db.databaseUrl) {
      printPeerRatios(
        peerRatios(figures, peers),
        `This service ÷ the peer, ${size.downloads.toLocaleString('en')} downloads, read cache on (as deployed; each run repeats one read, so all but the first are answered from it):`,
      );
      printPeerRatios(
        peerRatios(figures, peers.map(computedPeer)),
        `This service ÷ the peer, ${size.downloads.toLocaleString('en')} downloads, read cache off (every answer computed):`,
      );
    }
  }
  if (!db.databaseUrl) console.log(PEER_SKIPPED);
  const [a, b] = phases as [(typeof phases)[0], (typeof phases)[0]];
  const top = Math.max(...LEVELS);
  // One row per scenario and face (REST, the service's GraphQL, the peer), in the order of the peer's scenarios.
  const faces = peerScenarios(seeded!)
    .filter((ps) => selected(peerScenario(ps)))
    .flatMap(
      (ps) =>
        [
          ['REST', ps.compare, ps.compare],
          ['GraphQL', ps.compare, ps.graphql],
          ['REST, cache off', ps.compare, computedName(ps.compare)],
          ['GraphQL, cache off', ps.compare, computedName(ps.graphql)],
          ['peer', ps.compare, ps.name],
        ] as const,
    );
  const rows: { scenario: string; face: string; small: number; big: number; ratio: number | null; list: boolean }[] =
    [];
  for (const [face, scenario, name] of faces) {
    const f = a.figures.find((x) => x.scenario === name && x.connections === top);
    const g = b.figures.find((x) => x.scenario === name && x.connections === top);
    if (!f || !g) continue;
    const clean = f.errors + f.non2xx === 0 && g.errors + g.non2xx === 0 && f.rps > 0;
    rows.push({
      scenario,
      face,
      small: f.rps,
      big: g.rps,
      ratio: clean ? Math.round((g.rps / f.rps) * 100) / 100 : null,
      list: scenario.includes('list'),
    });
  }
  console.log(
    `\nGrowth at ${top} connections, ${SECONDS} s per run (${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}):\n`,
  );
  console.log(
    textTable(
      [
        'scenario',
        'face',
        `req/s at ${small.downloads.toLocaleString('en')}`,
        `req/s at ${big.downloads.toLocaleString('en')}`,
        'big ÷ small',
        'lists: target ≥ 0.8',
      ],
      rows.map((r) => [
        r.scenario,
        r.face,
        String(r.small),
        String(r.big),
        String(r.ratio ?? 'n/a'),
        r.face === 'peer' || !r.list ? '' : r.ratio === null ? '(not measured)' : r.ratio >= 0.8 ? 'met' : 'NOT met',
      ]),
    ),
  );
  if (db.databaseUrl) {
    for (const [label, peers] of [
      ['read cache on', peerScenarios(seeded!)],
      ['read cache off', peerScenarios(seeded!).map(computedPeer)],
    ] as const) {
      const [ra, rb] = [peerRatios(a.figures, peers), peerRatios(b.figures, peers)];
      const both = ra
        .filter((r) => r.connections === top)
        .map((r) => [r, rb.find((x) => x.scenario === r.scenario && x.connections === top)] as const);
      const fmt = (v: number | null | undefined) => String(v ?? 'n/a');
      console.log(
        `\nThis service ÷ the peer at ${top} connections, ${label}, REST / GraphQL (target ≥ 1.0 at both sizes):\n`,
      );
      console.log(
        textTable(
          [
            'scenario',
            `${small.downloads.toLocaleString('en')} downloads`,
            `${big.downloads.toLocaleString('en')} downloads`,
          ],
          both.map(([r, q]) => [
            r.scenario,
            `${fmt(r.restRatio)} / ${fmt(r.graphqlRatio)}`,
            `${fmt(q?.restRatio)} / ${fmt(q?.graphqlRatio)}`,
          ]),
        ),
      );
    }
  }
  writeResults(db.databaseUrl, '-growth', {
    growth: { sizes: [small, big], seedSeconds: phases.map((p) => p.seedSeconds), rows },
    phases: phases.map((p) => ({
      size: p.size,
      figures: p.figures,
      peerRatios: peerRatios(p.figures, peerScenarios(seeded!)),
      peerRatiosCacheOff: peerRatios(p.figures, peerScenarios(seeded!).map(computedPeer)),
    })),
  });
}

async function main() {
  const started = Date.now();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-bench-'));
  const db = await createDatabase(dataDir);
  try {
    if (GROWTH) await growth(dataDir, db);
    else await single(dataDir, db);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
    await db.drop();
  }
  console.log(`\nWall time ${((Date.now() - started) / 1000).toFixed(0)} s.`);
}

async function single(dataDir: string, db: Awaited<ReturnType<typeof createDatabase>>): Promise<void> {
  const { databaseUrl } = db;
  const size = sizeFor(DOWNLOADS);
  console.log(`Seeding ${describe(size)} into ${databaseUrl ? 'a fresh PostgreSQL database' : dataDir} …`);
  const t0 = Date.now();
  const conn = await db.open();
  const seeded = await seed(conn, KEY, size);
  await conn.close();
  SEEDED = seeded;
  const seedSeconds = (Date.now() - t0) / 1000;
  console.log(
    `Seeded ${databaseUrl ? 'a PostgreSQL server database' : 'the embedded database'} in ${seedSeconds.toFixed(1)} s.`,
  );

  const env = serviceEnv(databaseUrl, dataDir);
  const figures: Figure[] = [];

  if (INSTANCES) {
    // Throughput with instances: N service processes on one database and one storage directory; the connections of
    // each level are split evenly between them (as a balancer would), and req/s are added up.
    const mixed = scenarios(seeded).find((sc) => sc.name === 'mixed read/write')!;
    console.log(`Mixed read/write with ${INSTANCES.join(', ')} instance(s), ${os.cpus().length} CPU core(s):`);
    const rows: string[] = [];
    for (const n of INSTANCES) {
      const ports = Array.from({ length: n }, (_, i) => PORT + 1 + i);
      const children = ports.map((port) => start('service', { ...env, PORT: String(port) }));
      try {
        await Promise.all(children.map((child, i) => waitReady(child, `http://127.0.0.1:${ports[i]}/readyz`)));
        for (const c of LEVELS) {
          const each = Math.max(1, Math.round(c / n));
          const parts = await Promise.all(
            children.map((child, i) => measure(mixed, each, child.pid!, `http://127.0.0.1:${ports[i]}`)),
          );
          const rps = Math.round(parts.reduce((sum, f) => sum + f.rps, 0) * 10) / 10;
          const p99 = Math.max(...parts.map((f) => f.p99));
          const errors = parts.reduce((sum, f) => sum + f.errors + f.non2xx, 0);
          rows.push(
            `  instances=${n}  c=${String(each * n).padStart(3)}  ${String(rps).padStart(8)} req/s  p99 ${p99} ms${errors ? `  (${errors} errors)` : ''}`,
          );
          console.log(rows.at(-1));
        }
      } finally {
        await Promise.all(children.map(stop));
      }
    }
    return;
  }

  const chosen = scenarios(seeded).filter(selected);
  const writes = chosen.filter((sc) => sc.name === 'mixed read/write');
  const peers = PEER ? peerScenarios(seeded).filter((ps) => selected(peerScenario(ps))) : [];
  console.log('Service (REST and GraphQL):');
  await measureServiceAndPeer(
    figures,
    env,
    databaseUrl,
    chosen.filter((sc) => !writes.includes(sc)),
    peers,
    writes,
  );

  console.log('Baseline (bare handler, hand-written SQL, same driver):');
  const baseline = start('bench/baseline.ts', env);
  try {
    await waitReady(baseline, `${BASE}/api/mc-dm-downloads/${seeded.downloadId}/`);
    await runAll(figures, baselineScenarios(seeded).filter(selected), baseline.pid!);
  } finally {
    await stop(baseline);
  }
  const statements = await statementsPerRequest(
    databaseUrl ? { url: databaseUrl } : { pgliteDir: path.join(dataDir, 'db') },
    dataDir,
  );

  // Ratios at the highest concurrency level.
  const top = Math.max(...LEVELS);
  const at = (name: string) => figures.find((f) => f.scenario === name && f.connections === top);
  const ratios: { ratio: string; value: number | null; target: string; met: boolean | null }[] = [];
  for (const f of figures.filter((x) => x.connections === top && (x.kind === 'graphql' || x.kind === 'baseline'))) {
    const sc = [...scenarios(seeded), ...baselineScenarios(seeded)].find((s) => s.name === f.scenario)!;
    const rest = at(sc.compare!);
    const value =
      rest && f.rps > 0 && rest.non2xx + rest.errors === 0 ? Math.round((rest.rps / f.rps) * 100) / 100 : null;
    const target = f.kind === 'graphql' ? 0.9 : 0.5;
    ratios.push({
      ratio: `REST ${sc.compare} / ${f.scenario}`,
      value,
      target: `≥ ${target}`,
      met: value === null ? null : value >= target,
    });
  }
  // The target is for single-row reads, on every request of the run (first requests of connections included).
  for (const name of ['download get', 'download get full']) {
    const f = at(name);
    if (f)
      ratios.push({
        ratio: `p99 ms, ${name}, ${top} clients`,
        value: f.p99,
        target: '< 50',
        met: f.non2xx + f.errors === 0 ? f.p99 < 50 : null,
      });
  }

  const [five, hundred] = [
    statements['/api/mc-dm-downloads/?per_page=5&with=full']!,
    statements['/api/mc-dm-downloads/?per_page=100&with=full']!,
  ];
  ratios.push({
    ratio: 'SQL statements per request, downloads list with=full, 100 rows / 5 rows',
    value: Math.round((hundred / five) * 100) / 100,
    target: '= 1',
    met: hundred === five,
  });

  console.log(
    `\nFigures (${databaseUrl ? 'PostgreSQL server' : 'embedded PGlite'}; ${describe(size)}; ${SECONDS} s per run; ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}; load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}):\n`,
  );
  console.log(table(figures));
  console.log(
    `\nSQL statements per request: ${Object.entries(statements)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  console.log(`\nRatios and targets at ${top} connections:\n`);
  for (const r of ratios)
    console.log(
      `  ${r.ratio.padEnd(72)} ${String(r.value ?? 'n/a').padStart(7)}  target ${r.target}  ${r.met === null ? '(not measured)' : r.met ? 'met' : 'NOT met'}`,
    );
  const vsPeer = peerRatios(figures, peers);
  if (PEER) printPeerRatios(vsPeer, 'This service ÷ the peer (PostGraphile 4), req/s:');
  else console.log(`\n${PEER_SKIPPED}`);

  writeResults(databaseUrl, opts.quick ? '-quick' : '', {
    size,
    seedSeconds,
    figures,
    ratios,
    statements,
    peerRatios: vsPeer,
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
