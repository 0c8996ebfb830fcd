// `npm run bench`: seeds a realistic catalogue into a fresh embedded database, starts the service as a child
// process, drives it over loopback with autocannon at several concurrency levels, then measures the baselines
// in the same run — (a) the same operation through /graphql, (b) a bare Node handler with hand-written SQL — and
// prints requests/s, p50/p99 latency, peak RSS and the ratios the targets are stated in.
// Options: --quick (small catalogue, short runs: a smoke test of the harness), --seconds N, --connections 1,8,32,
// --database-url postgres://… (run on a fresh database on that PostgreSQL server instead of the embedded one),
// --instances 1,2 (with --database-url: the mixed scenario against 1, then 2, service processes on the same database).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { print, type DocumentNode } from 'graphql';
import pg from 'pg';
import { openDatabase } from '../src/db/client.js';
import { seed, FULL_SIZE, type SeedResult } from './seed.js';
import { routes } from '../rest-adapter/routes.js';
import { startApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    seconds: { type: 'string' },
    connections: { type: 'string', default: '1,8,32' },
    'database-url': { type: 'string' },
    only: { type: 'string' },
    instances: { type: 'string' },
  },
});
const INSTANCES = opts.instances ? opts.instances.split(',').map(Number) : null;
if (INSTANCES && (!opts['database-url'] || INSTANCES.some((n) => !Number.isInteger(n) || n < 1))) {
  console.error('--instances takes counts such as 1,2 and needs --database-url: instances share a PostgreSQL database.');
  process.exit(2);
}
const SECONDS = Number(opts.seconds ?? (opts.quick ? 1 : 4));
const LEVELS = opts.connections!.split(',').map(Number);
/** --only <regex>: run the scenarios whose names match (a baseline runs when its compared scenario does). */
const ONLY = opts.only ? new RegExp(opts.only) : null;
const selected = (sc: Scenario) => !ONLY || ONLY.test(sc.name) || (sc.compare !== undefined && ONLY.test(sc.compare));
const KEY = 'dm_bench_super_key_0000000000000000000000000000';
const PORT = 39_000 + Math.floor(Math.random() * 1000);
const BASE = `http://127.0.0.1:${PORT}`;

interface Scenario {
  name: string;
  kind: 'rest' | 'graphql' | 'baseline';
  requests: autocannon.Request[];
  /** Scenario whose figures this one is compared with (same operation through another face). */
  compare?: string;
}

function restScenario(name: string, pathAndQuery: string): Scenario {
  return { name, kind: 'rest', requests: [{ method: 'GET', path: pathAndQuery }] };
}

/** The same operation the REST route runs, posted to /graphql with the equivalent variables. */
function graphqlScenario(name: string, method: string, routePath: string, variables: Record<string, unknown>, compare: string): Scenario | null {
  const route = routes.find((r) => r.method === method && r.path === routePath);
  if (!route) return null;
  const body = JSON.stringify({ query: print(route.document as DocumentNode), variables });
  return { name, kind: 'graphql', compare, requests: [{ method: 'POST', path: '/graphql', body, headers: { 'content-type': 'application/json' } }] };
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
    {
      name: 'mixed read/write', kind: 'rest', requests: [
        { method: 'GET', path: `/api/mc-dm-downloads/${s.downloadId}/?with=full` },
        { method: 'GET', path: '/api/mc-dm-downloads/?per_page=20' },
        { method: 'GET', path: `/api/mc-dm-comments/?download_id=${s.commentDownloadId}` },
        { method: 'PUT', path: `/api/mc-dm-downloads/${s.downloadId}/`, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'tag_line=Updated+by+the+benchmark' },
        { method: 'POST', path: '/api/mc-dm-comments/', headers: { 'content-type': 'application/x-www-form-urlencoded', 'forum-api-user': '1' }, body: `download_id=${s.commentDownloadId}&message=Benchmark+comment` },
        { method: 'POST', path: '/api/mc-dm-categories/', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'title=Bench' },
      ],
    },
    graphqlScenario('graphql categories list', 'GET', '/api/mc-dm-categories/', { full: false }, 'categories list'),
    graphqlScenario('graphql downloads list 20', 'GET', '/api/mc-dm-downloads/', { perPage: 20, full: false }, 'downloads list 20'),
    graphqlScenario('graphql downloads list 100 full', 'GET', '/api/mc-dm-downloads/', { perPage: 100, full: true }, 'downloads list 100 full'),
    graphqlScenario('graphql download get full', 'GET', '/api/mc-dm-downloads/:download_id/', { downloadId: s.downloadId, full: true }, 'download get full'),
    graphqlScenario('graphql comments list', 'GET', '/api/mc-dm-comments/', { downloadId: s.commentDownloadId, full: false }, 'comments list'),
    graphqlScenario('graphql files list', 'GET', '/api/mc-dm-files/', { versionId: s.versionId, full: false }, 'files list'),
  ];
  return list.filter((x): x is Scenario => x !== null);
}

const baselineScenarios = (s: SeedResult): Scenario[] => [
  { name: 'baseline downloads list 20', kind: 'baseline', compare: 'downloads list 20', requests: [{ method: 'GET', path: '/api/mc-dm-downloads/?per_page=20' }] },
  { name: 'baseline downloads list by category', kind: 'baseline', compare: 'downloads list by category', requests: [{ method: 'GET', path: `/api/mc-dm-downloads/?category_id=${s.leafCategory}&per_page=20` }] },
  { name: 'baseline download get', kind: 'baseline', compare: 'download get', requests: [{ method: 'GET', path: `/api/mc-dm-downloads/${s.downloadId}/` }] },
];

interface Figure { scenario: string; kind: string; connections: number; rps: number; p50: number; p99: number; p99Established: number; errors: number; non2xx: number; peakRssMb: number }

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

async function measure(sc: Scenario, connections: number, pid: number, url = BASE): Promise<Figure> {
  let peak = rssMb(pid);
  const sampler = setInterval(() => { peak = Math.max(peak, rssMb(pid)); }, 50);
  // Latencies of requests on connections already open: a connection's first request also waits for the server to
  // accept it, which a saturated event loop can hold back for seconds at the start of a run (bench/README.md).
  const established: number[] = [];
  const seen = new WeakSet<object>();
  const instance = autocannon({
    url, connections, duration: SECONDS, requests: sc.requests,
    headers: { 'forum-api-key': KEY }, timeout: 30,
  }) as unknown as autocannon.Instance & PromiseLike<autocannon.Result>; // an emitter that is also thenable
  instance.on('response', (client: object, _status: number, _bytes: number, ms: number) => {
    if (seen.has(client)) established.push(ms);
    else seen.add(client);
  });
  const result = await instance;
  clearInterval(sampler);
  established.sort((a, b) => a - b);
  const p99Established = established.length ? Math.round(established[Math.min(established.length - 1, Math.floor(0.99 * established.length))]!) : 0;
  return {
    scenario: sc.name, kind: sc.kind, connections,
    rps: Math.round(result.requests.average * 10) / 10,
    p50: result.latency.p50, p99: result.latency.p99, p99Established,
    errors: result.errors + result.timeouts, non2xx: result.non2xx, peakRssMb: Math.round(peak),
  };
}

/**
 * SQL statements per request for a page of 5 and of 100 downloads (with=full), counted at the driver in an
 * in-process instance on the same database (the service has stopped): the target is that they are equal.
 */
async function statementsPerRequest(target: { url: string } | { pgliteDir: string }, dataDir: string): Promise<Record<string, number>> {
  const db = await openDatabase(target);
  const app = await startApp(loadConfig({}, { port: 0, host: '127.0.0.1', dataDir, logLevel: 'silent', bootstrapKey: KEY }), { db, log: createLogger('silent') });
  const counts: Record<string, number> = {};
  try {
    for (const route of ['/api/mc-dm-downloads/?per_page=5&with=full', '/api/mc-dm-downloads/?per_page=100&with=full', '/api/mc-dm-downloads/?per_page=100']) {
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
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become ready`);
}

function start(script: string, env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'],
  });
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  await new Promise<void>((resolve) => { child.once('exit', () => resolve()); child.kill('SIGTERM'); });
}

function table(figures: Figure[]): string {
  const head = ['scenario', 'conns', 'req/s', 'p50 ms', 'p99 ms', 'p99 open conns ms', 'peak RSS MB', 'errors'];
  const rows = figures.map((f) => [f.scenario, String(f.connections), String(f.rps), String(f.p50), String(f.p99), String(f.p99Established), String(f.peakRssMb), String(f.errors + f.non2xx)]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-bench-'));
  const size = opts.quick ? { users: 100, downloads: 2000, filesPerDownload: 2, commentsPerDownload: 4 } : FULL_SIZE;
  console.log(`Seeding ${size.downloads} downloads, ${size.downloads * size.filesPerDownload} files, ${size.downloads * size.commentsPerDownload} comments, 200 categories into ${dataDir} …`);
  const t0 = Date.now();
  let databaseUrl: string | undefined;
  let dropDatabase = async () => {};
  if (opts['database-url']) {
    // A fresh database on the given server, dropped at the end.
    const name = `dcs_bench_${process.pid}`;
    const admin = new pg.Client({ connectionString: opts['database-url'] });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${name}"`);
    await admin.end();
    const url = new URL(opts['database-url']);
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
    dropDatabase = async () => {
      const c = new pg.Client({ connectionString: opts['database-url'] });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    };
  }
  const db = await openDatabase(databaseUrl ? { url: databaseUrl } : { pgliteDir: path.join(dataDir, 'db') });
  const seeded = await seed(db, KEY, size);
  await db.close();
  console.log(`Seeded ${databaseUrl ? 'a PostgreSQL server database' : 'the embedded database'} in ${((Date.now() - t0) / 1000).toFixed(1)} s.`);

  const env: Record<string, string> = { ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}), DATA_DIR: dataDir, PORT: String(PORT), HOST: '127.0.0.1', DM_BOOTSTRAP_KEY: KEY, LOG_LEVEL: 'warn', BASE_URL: 'http://localhost', COMMENT_FLOOD_SECONDS: '0' };
  const figures: Figure[] = [];
  const runAll = async (list: Scenario[], pid: number) => {
    for (const sc of list) {
      for (const c of LEVELS) {
        const f = await measure(sc, c, pid);
        figures.push(f);
        console.log(`  ${sc.name.padEnd(36)} c=${String(c).padStart(2)}  ${String(f.rps).padStart(8)} req/s  p50 ${f.p50} ms  p99 ${f.p99} ms (open connections ${f.p99Established} ms)${f.errors + f.non2xx ? `  (${f.errors + f.non2xx} errors)` : ''}`);
      }
    }
  };

  if (INSTANCES) {
    // Throughput with instances: N service processes on one database and one storage directory; the connections of
    // each level are split evenly between them (as a balancer would), and req/s are added up.
    const mixed = scenarios(seeded).find((sc) => sc.name === 'mixed read/write')!;
    console.log(`Mixed read/write with ${INSTANCES.join(', ')} instance(s), ${os.cpus().length} CPU core(s):`);
    const rows: string[] = [];
    for (const n of INSTANCES) {
      const ports = Array.from({ length: n }, (_, i) => PORT + 1 + i);
      const children = ports.map((port) => start('src/main.ts', { ...env, PORT: String(port) }));
      try {
        await Promise.all(children.map((child, i) => waitReady(child, `http://127.0.0.1:${ports[i]}/readyz`)));
        for (const c of LEVELS) {
          const each = Math.max(1, Math.round(c / n));
          const parts = await Promise.all(children.map((child, i) => measure(mixed, each, child.pid!, `http://127.0.0.1:${ports[i]}`)));
          const rps = Math.round(parts.reduce((sum, f) => sum + f.rps, 0) * 10) / 10;
          const p99 = Math.max(...parts.map((f) => f.p99));
          const errors = parts.reduce((sum, f) => sum + f.errors + f.non2xx, 0);
          rows.push(`  instances=${n}  c=${String(each * n).padStart(3)}  ${String(rps).padStart(8)} req/s  p99 ${p99} ms${errors ? `  (${errors} errors)` : ''}`);
          console.log(rows.at(-1));
        }
      } finally {
        await Promise.all(children.map(stop));
      }
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
    await dropDatabase();
    return;
  }

  console.log('Service (REST and GraphQL):');
  const service = start('src/main.ts', env);
  try {
    await waitReady(service, `${BASE}/readyz`);
    await runAll(scenarios(seeded).filter(selected), service.pid!);
  } finally {
    await stop(service);
  }

  console.log('Baseline (bare handler, hand-written SQL, same driver):');
  const baseline = start('bench/baseline.ts', env);
  try {
    await waitReady(baseline, `${BASE}/api/mc-dm-downloads/${seeded.downloadId}/`);
    await runAll(baselineScenarios(seeded).filter(selected), baseline.pid!);
  } finally {
    await stop(baseline);
  }
  const statements = await statementsPerRequest(databaseUrl ? { url: databaseUrl } : { pgliteDir: path.join(dataDir, 'db') }, dataDir);
  fs.rmSync(dataDir, { recursive: true, force: true });
  await dropDatabase();

  // Ratios at the highest concurrency level.
  const top = Math.max(...LEVELS);
  const at = (name: string) => figures.find((f) => f.scenario === name && f.connections === top);
  const ratios: { ratio: string; value: number | null; target: string; met: boolean | null }[] = [];
  for (const f of figures.filter((x) => x.connections === top && x.kind !== 'rest')) {
    const sc = [...scenarios(seeded), ...baselineScenarios(seeded)].find((s) => s.name === f.scenario)!;
    const rest = at(sc.compare!);
    const value = rest && f.rps > 0 && rest.non2xx + rest.errors === 0 ? Math.round((rest.rps / f.rps) * 100) / 100 : null;
    const target = f.kind === 'graphql' ? 0.9 : 0.5;
    ratios.push({ ratio: `REST ${sc.compare} / ${f.scenario}`, value, target: `≥ ${target}`, met: value === null ? null : value >= target });
  }
  // The target is for single-row reads, on every request of the run (first requests of connections included).
  for (const name of ['download get', 'download get full']) {
    const f = at(name);
    if (f) ratios.push({ ratio: `p99 ms, ${name}, ${top} clients`, value: f.p99, target: '< 50', met: f.non2xx + f.errors === 0 ? f.p99 < 50 : null });
  }

  const [five, hundred] = [statements['/api/mc-dm-downloads/?per_page=5&with=full']!, statements['/api/mc-dm-downloads/?per_page=100&with=full']!];
  ratios.push({ ratio: 'SQL statements per request, downloads list with=full, 100 rows / 5 rows', value: Math.round((hundred / five) * 100) / 100, target: '= 1', met: hundred === five });

  console.log(`\nFigures (${databaseUrl ? 'PostgreSQL server' : 'embedded PGlite'}; ${SECONDS} s per run; ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}):\n`);
  console.log(table(figures));
  console.log(`\nSQL statements per request: ${Object.entries(statements).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  console.log(`\nRatios and targets at ${top} connections:\n`);
  for (const r of ratios) console.log(`  ${r.ratio.padEnd(72)} ${String(r.value ?? 'n/a').padStart(7)}  target ${r.target}  ${r.met === null ? '(not measured)' : r.met ? 'met' : 'NOT met'}`);

  const out = path.join(root, 'bench/results', `${new Date().toISOString().replace(/[:.]/g, '-')}${databaseUrl ? '-postgres' : ''}${opts.quick ? '-quick' : ''}.json`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), database: databaseUrl ? 'postgres' : 'pglite', machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, memGb: Math.round(os.totalmem() / 2 ** 30) }, seconds: SECONDS, size, figures, ratios, statements }, null, 2));
  console.log(`\nWritten to ${path.relative(root, out)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
