// `npm run bench:mixed`: reads on varied rows beside a background writer, this service against PostGraphile 4 (the
// peer, bench/peer.ts) on the same PostgreSQL database. Every request reads its own random row or page (GraphQL
// variables for both GraphQL servers), except in the one repeated-request scenario, which shows the read cache's best
// case. For each writer rate (default 0, 10 and 50 writes/s of realistic writes through the REST face: file downloads
// counted, comments posted, downloads edited) every scenario is measured through REST, the service's GraphQL and the
// peer, and the table prints req/s ÷ the peer's, p50/p99 and the read cache's hit rate (from /metrics).
// Options: --downloads N (default 50000), --clients N (32), --seconds N per cell (10), --rates 0,10,50,
// --database-url postgres://… (a server: a fresh database is made on it, then dropped), --read-cache-mb N (the
// service's READ_CACHE_MB; 0 turns the cache off), --only <regex> (scenarios), --no-peer, --floor (also the floor,
// bench/floor.ts: the least work any server can do for the same reads, one statement building the peer's JSON; what
// it reaches against the peer bounds what any implementation can reach on this machine), --embedded (also the service
// on the embedded database, seeded alike and written at the same rate: its two faces ÷ the PostgreSQL service's).
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
import { routes } from '../rest-adapter/routes.js';
import { openDatabase } from '../src/db/client.js';
import { document, peerScenarios, type Rows } from './peer-scenarios.js';
import { seed, sizeFor, type SeedResult } from './seed.js';
import { cpuMs, postgresCpu, postgresCpuBetween } from './proc.js';
import { SERVICE_ENV, serviceArgs } from './service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: {
    downloads: { type: 'string', default: '50000' },
    clients: { type: 'string', default: '32' },
    seconds: { type: 'string', default: '10' },
    rates: { type: 'string', default: '0,10,50' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
    'read-cache-mb': { type: 'string' },
    only: { type: 'string' },
    'no-peer': { type: 'boolean', default: false },
    floor: { type: 'boolean', default: false },
    /** Also a second service on the embedded database (PGlite), seeded alike, its two faces measured beside the rest. */
    embedded: { type: 'boolean', default: false },
    /** Node's flags for the service process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" (space-separated). */
    /** A file the service's log (its standard output, LOG_LEVEL warn) is appended to; by default it is dropped. */
    'service-log': { type: 'string' },
    'node-flags': { type: 'string', default: '' },
  },
});
/** How long the writer runs alone at each rate before the cells are measured. */
const WRITER_WARM_UP_MS = 5_000;
const fail = (message: string): never => {
  console.error(message);
  process.exit(2);
};
const whole = (text: string) => (/^\d[\d_]*$/.test(text) ? Number(text.replaceAll('_', '')) : NaN);
const DOWNLOADS = whole(opts.downloads!);
const CLIENTS = whole(opts.clients!);
const SECONDS = Number(opts.seconds);
const RATES = opts.rates!.split(',').map(Number);
if (!Number.isSafeInteger(DOWNLOADS) || DOWNLOADS < 1000 || DOWNLOADS > 5_000_000)
  fail('--downloads takes a number of downloads from 1000 to 5000000.');
if (!Number.isInteger(CLIENTS) || CLIENTS < 1) fail('--clients takes a positive whole number.');
if (!(SECONDS > 0)) fail('--seconds takes a positive number.');
if (RATES.some((r) => !Number.isFinite(r) || r < 0)) fail('--rates takes writes per second such as 0,10,50.');
const READ_CACHE_MB = opts['read-cache-mb'];
if (READ_CACHE_MB !== undefined && !/^\d+$/.test(READ_CACHE_MB)) fail('--read-cache-mb takes a whole number.');
const ONLY = opts.only ? new RegExp(opts.only) : null;
const PEER = !opts['no-peer'];
const FLOOR = opts.floor!;
const EMBEDDED = opts.embedded!;
const KEY = 'dm_bench_super_key_0000000000000000000000000000';
/** The unmeasured run before each cell. */
const WARMUP_SECONDS = 2;

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
const BASE = `http://127.0.0.1:${await freePort()}`;
const PEER_BASE = `http://127.0.0.1:${await freePort()}`;
const FLOOR_BASE = `http://127.0.0.1:${await freePort()}`;
const EMBEDDED_BASE = `http://127.0.0.1:${await freePort()}`;

// ───────────── the catalogue and the rows requests pick from

/** Ids the requests pick from at random: what a super key and the peer show alike. */
interface Pools {
  /** Visible downloads in categories guests may view. */
  downloads: number[];
  /** Leaf categories guests may view. */
  leaves: number[];
  /** Files whose bytes are in storage, for the writer's counted downloads. */
  files: number[];
  /** Their storage keys (the seed writes the same ones on every database). */
  fileKeys: string[];
  /** Pages of the unfiltered lists that exist (of 20 and of 100 rows). */
  pages20: number;
  pages100: number;
}
const pick = <T>(list: T[]): T => list[Math.floor(Math.random() * list.length)]!;
const upTo = (n: number) => 1 + Math.floor(Math.random() * n);
/** Deep pages cost every server an offset scan; readers mostly look at the first ones. */
const PAGE_SPAN = 50;

/** The 64 bytes of each of these files, in a data directory's storage. */
function putFileBytes(dataDir: string, keys: string[]): void {
  for (const key of keys) {
    const p = path.join(dataDir, 'files', key);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, Buffer.alloc(64, 7));
  }
}

async function preparePools(db: pg.Client, dataDir: string): Promise<Pools> {
  const ids = async (sql: string) => (await db.query<{ id: number }>(sql)).rows.map((r) => r.id);
  const downloads = await ids(`SELECT id FROM download WHERE state = 'visible' AND "categoryId" % 20 <> 0 ORDER BY id`);
  const leaves = await ids(`SELECT id FROM category WHERE "parentId" > 10 AND id % 20 <> 0 ORDER BY id`);
  // The writer counts downloads of 1,000 random primary files: their bytes (64 of them) are put in storage, where the
  // seed leaves none, and their size set to match.
  const chosen = Array.from({ length: 1000 }, () => pick(downloads));
  const files = (
    await db.query<{ id: number; key: string }>(
      `UPDATE file f SET "fileSize" = 64 FROM download d
       WHERE d.id = ANY($1::int[]) AND f."versionId" = d."currentVersionId" AND f."isPrimary"
       RETURNING f.id, f."storageKey" AS key`,
      [chosen],
    )
  ).rows;
  putFileBytes(
    dataDir,
    files.map((f) => f.key),
  );
  const total = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM download')).rows[0]!.n;
  return {
    downloads,
    leaves,
    files: files.map((f) => f.id),
    fileKeys: files.map((f) => f.key),
    pages20: Math.min(PAGE_SPAN, Math.floor(total / 20)),
    pages100: Math.min(PAGE_SPAN, Math.floor(total / 100)),
  };
}

// ───────────── scenarios: each request picks its parameters, then is asked through the three faces

interface Face {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
}
interface MixedScenario {
  name: string;
  /** The scenario of peer-scenarios.ts whose row readers check that the three faces answer alike. */
  rowsOf: string;
  /** Parameters of one request (random, except in the repeated scenario). */
  params(): Record<string, number>;
  rest(p: Record<string, number>): Face;
  graphql(p: Record<string, number>): Face;
  peer(p: Record<string, number>): Face;
  /** The same read from the floor (bench/floor.ts), which answers as the peer does. */
  floor(p: Record<string, number>): Face;
}

/** The document a REST route runs, posted to /graphql with the variables of one request. */
function serviceGraphql(method: string, routePath: string): (variables: Record<string, unknown>) => Face {
  const route = routes.find((r) => r.method === method && r.path === routePath);
  if (!route) throw new Error(`no route ${method} ${routePath}`);
  const query = print(route.document as DocumentNode);
  return (variables) => ({ method: 'POST', path: '/graphql', body: JSON.stringify({ query, variables }) });
}
const peerQuery =
  (query: string) =>
  (variables: Record<string, unknown>): Face => ({
    method: 'POST',
    path: '/graphql',
    body: document(query, variables),
  });

const listDownloadsGql = serviceGraphql('GET', '/api/mc-dm-downloads/');
const getDownloadGql = serviceGraphql('GET', '/api/mc-dm-downloads/:download_id/');
const listCommentsGql = serviceGraphql('GET', '/api/mc-dm-comments/');
const ORDER = 'orderBy: [LAST_UPDATE_DESC, ID_DESC]';
const peerGet = peerQuery('query ($id: Int!) { downloadById(id: $id) { ...D ...DFull } }');
const peerList = (full: boolean, filter: boolean) =>
  peerQuery(
    `query ($first: Int!, $offset: Int!${filter ? ', $c: Int!' : ''}) { allDownloads(first: $first, offset: $offset${
      filter ? ', condition: { categoryId: $c }' : ''
    }, ${ORDER}) { totalCount nodes { ...D${full ? ' ...DFull' : ''} } } }`,
  );
const peerList20 = peerList(false, false);
const peerList100Full = peerList(true, false);
const peerListByCategory = peerList(false, true);
const peerComments = peerQuery(
  'query ($d: Int!) { allComments(first: 20, condition: { downloadId: $d }, orderBy: [COMMENT_DATE_DESC, ID_DESC]) { totalCount nodes { ...Cm } } }',
);

function mixedScenarios(pools: Pools): MixedScenario[] {
  const all: MixedScenario[] = [
    {
      name: 'download get, full',
      rowsOf: 'download get full',
      params: () => ({ id: pick(pools.downloads) }),
      rest: (p) => ({ method: 'GET', path: `/api/mc-dm-downloads/${p.id}/?with=full` }),
      graphql: (p) => getDownloadGql({ downloadId: p.id, full: true }),
      peer: (p) => peerGet({ id: p.id }),
      floor: (p) => ({ method: 'GET', path: `/get?id=${p.id}` }),
    },
    {
      name: 'list by category, 20',
      rowsOf: 'downloads list by category',
      params: () => ({ c: pick(pools.leaves) }),
      rest: (p) => ({ method: 'GET', path: `/api/mc-dm-downloads/?category_id=${p.c}&per_page=20` }),
      graphql: (p) => listDownloadsGql({ categoryId: p.c, perPage: 20, full: false }),
      peer: (p) => peerListByCategory({ c: p.c, first: 20, offset: 0 }),
      floor: (p) => ({ method: 'GET', path: `/list?first=20&offset=0&c=${p.c}` }),
    },
    {
      name: 'list, 20, no filter',
      rowsOf: 'downloads list 20',
      params: () => ({ page: upTo(pools.pages20) }),
      rest: (p) => ({ method: 'GET', path: `/api/mc-dm-downloads/?per_page=20&page=${p.page}` }),
      graphql: (p) => listDownloadsGql({ page: p.page, perPage: 20, full: false }),
      peer: (p) => peerList20({ first: 20, offset: (p.page! - 1) * 20 }),
      floor: (p) => ({ method: 'GET', path: `/list?first=20&offset=${(p.page! - 1) * 20}` }),
    },
    {
      name: 'list, 100, full',
      rowsOf: 'downloads list 100 full',
      params: () => ({ page: upTo(pools.pages100) }),
      rest: (p) => ({ method: 'GET', path: `/api/mc-dm-downloads/?per_page=100&page=${p.page}&with=full` }),
      graphql: (p) => listDownloadsGql({ page: p.page, perPage: 100, full: true }),
      peer: (p) => peerList100Full({ first: 100, offset: (p.page! - 1) * 100 }),
      floor: (p) => ({ method: 'GET', path: `/list?first=100&offset=${(p.page! - 1) * 100}&full=1` }),
    },
    {
      name: 'comments of one download',
      rowsOf: 'comments list',
      params: () => ({ d: pick(pools.downloads) }),
      rest: (p) => ({ method: 'GET', path: `/api/mc-dm-comments/?download_id=${p.d}` }),
      graphql: (p) => listCommentsGql({ downloadId: p.d, full: false }),
      peer: (p) => peerComments({ d: p.d }),
      floor: (p) => ({ method: 'GET', path: `/comments?d=${p.d}` }),
    },
    {
      name: 'repeated: list, 20, page 1',
      rowsOf: 'downloads list 20',
      params: () => ({ page: 1 }),
      rest: () => ({ method: 'GET', path: '/api/mc-dm-downloads/?per_page=20&page=1' }),
      graphql: () => listDownloadsGql({ page: 1, perPage: 20, full: false }),
      peer: () => peerList20({ first: 20, offset: 0 }),
      floor: () => ({ method: 'GET', path: '/list?first=20&offset=0' }),
    },
    // One download asked again and again while the writer edits, comments on and counts others: its answers are
    // evicted only by writes about it (a per-download answer), where the list above goes with any edit.
    {
      name: 'repeated: download get, full',
      rowsOf: 'download get full',
      params: () => ({ id: pools.downloads[0]! }),
      rest: (p) => ({ method: 'GET', path: `/api/mc-dm-downloads/${p.id}/?with=full` }),
      graphql: (p) => getDownloadGql({ downloadId: p.id, full: true }),
      peer: (p) => peerGet({ id: p.id }),
      floor: (p) => ({ method: 'GET', path: `/get?id=${p.id}` }),
    },
    {
      name: 'repeated: comments of one download',
      rowsOf: 'comments list',
      params: () => ({ d: pools.downloads[0]! }),
      rest: (p) => ({ method: 'GET', path: `/api/mc-dm-comments/?download_id=${p.d}` }),
      graphql: (p) => listCommentsGql({ downloadId: p.d, full: false }),
      peer: (p) => peerComments({ d: p.d }),
      floor: (p) => ({ method: 'GET', path: `/comments?d=${p.d}` }),
    },
  ];
  return all.filter((sc) => !ONLY || ONLY.test(sc.name));
}

type FaceName = 'rest' | 'graphql' | 'peer' | 'floor' | 'embedded rest' | 'embedded graphql';

/** The service's request for a face (the embedded service's faces ask what the other service's do). */
function faceRequest(sc: MixedScenario, face: FaceName, p: Record<string, number>): Face {
  if (face === 'embedded rest') return sc.rest(p);
  if (face === 'embedded graphql') return sc.graphql(p);
  return sc[face](p);
}
const isEmbedded = (face: FaceName) => face === 'embedded rest' || face === 'embedded graphql';
const baseOf = (face: FaceName) =>
  face === 'peer' ? PEER_BASE : face === 'floor' ? FLOOR_BASE : isEmbedded(face) ? EMBEDDED_BASE : BASE;
const JSON_HEADERS = { 'content-type': 'application/json' };
/** An autocannon request that asks for a fresh random row each time it is sent. */
function varied(sc: MixedScenario, face: FaceName): autocannon.Request {
  const first = faceRequest(sc, face, sc.params());
  return {
    method: first.method,
    path: first.path,
    headers: first.body ? JSON_HEADERS : {},
    setupRequest: (req: any) => {
      const f = faceRequest(sc, face, sc.params());
      return { ...req, path: f.path, ...(f.body ? { body: f.body } : {}) };
    },
  } as autocannon.Request;
}

async function ask(base: string, f: Face): Promise<any> {
  const res = await fetch(base + f.path, {
    method: f.method,
    body: f.body,
    headers: { 'forum-api-key': KEY, ...(f.body ? JSON_HEADERS : {}) },
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${f.method} ${base}${f.path} answered ${res.status}: ${text.slice(0, 400)}`);
  const json = JSON.parse(text);
  if (json.errors) throw new Error(`${f.method} ${base}${f.path} answered errors: ${text.slice(0, 400)}`);
  return json;
}

/** Before measuring: for 5 random requests of every scenario, the three faces answer the same rows and totals. */
async function checkSameRows(list: MixedScenario[], seeded: SeedResult): Promise<void> {
  const readers = new Map(peerScenarios(seeded).map((ps) => [ps.compare, ps]));
  for (const sc of list) {
    const r = readers.get(sc.rowsOf)!;
    for (let i = 0; i < 5; i++) {
      const p = sc.params();
      const faces: [string, Rows][] = [
        ['REST', r.restRows(await ask(BASE, sc.rest(p)))],
        ['GraphQL', r.graphqlRows(await ask(BASE, sc.graphql(p)))],
        ...(PEER ? [['the peer', r.peerRows(await ask(PEER_BASE, sc.peer(p)))] as [string, Rows]] : []),
        ...(FLOOR ? [['the floor', r.peerRows(await ask(FLOOR_BASE, sc.floor(p)))] as [string, Rows]] : []),
      ];
      for (const [face, rows] of faces.slice(1)) {
        if (JSON.stringify(rows) !== JSON.stringify(faces[0]![1]))
          throw new Error(
            `${sc.name} ${JSON.stringify(p)}: ${face} answers other rows than REST:\n  ${JSON.stringify(rows)}\n  ${JSON.stringify(faces[0]![1])}`,
          );
      }
    }
  }
}

// ───────────── the background writer

interface WriterTally {
  sent: number;
  failed: number;
  lastError: string | null;
}

/** Writes through the REST face at `rate` a second until stopped: 3 in 5 count a file download, 1 posts a comment, 1 edits a download. */
function startWriter(rate: number, pools: Pools, base: string = BASE): { stop(): Promise<WriterTally> } {
  const tally: WriterTally = { sent: 0, failed: 0, lastError: null };
  if (rate === 0) return { stop: async () => tally };
  const inFlight = new Set<Promise<void>>();
  const form = { 'content-type': 'application/x-www-form-urlencoded', 'forum-api-key': KEY };
  const one = async (n: number) => {
    const kind = n % 5;
    const d = pick(pools.downloads);
    const res =
      kind < 3
        ? await fetch(`${base}/api/mc-dm-files/${pick(pools.files)}/data/`, { headers: { 'forum-api-key': KEY } })
        : kind === 3
          ? await fetch(`${base}/api/mc-dm-comments/`, {
              method: 'POST',
              headers: { ...form, 'forum-api-user': String(1 + (n % 100)) },
              body: `download_id=${d}&message=Benchmark+comment+${n}`,
            })
          : await fetch(`${base}/api/mc-dm-downloads/${d}/`, {
              method: 'PUT',
              headers: form,
              body: `tag_line=Edited+by+the+benchmark+${n}`,
            });
    const text = await res.text();
    tally.sent++;
    if (res.status >= 300) {
      tally.failed++;
      tally.lastError = `${res.status} ${text.slice(0, 200)}`;
    }
  };
  let n = 0;
  const started = performance.now();
  const timer = setInterval(() => {
    // As many writes as the clock says are due (timers fire late on a busy machine), at most 64 in flight.
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    while (n < due && inFlight.size < 64) {
      const p = one(n++).catch((err: Error) => {
        tally.sent++;
        tally.failed++;
        tally.lastError = err.message;
      });
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    }
    if (n < due) n = due; // behind by more than 64: those writes are skipped
  }, 5);
  return {
    stop: async () => {
      clearInterval(timer);
      await Promise.all(inFlight);
      return tally;
    },
  };
}

// ───────────── measuring

interface Cell {
  scenario: string;
  face: FaceName;
  rate: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  cacheHitPct: number | null;
  /** CPU time (user + system) of the answering process per request, in ms; null where /proc is not there. */
  cpuMsPerRequest: number | null;
  /**
   * The share of the run the answering process's main thread (its event loop, where JavaScript runs) was on a core, in
   * %: near 100, that thread is what bounds the process's throughput, whatever the other cores do.
   */
  mainThreadBusyPct: number | null;
  /**
   * CPU time of the PostgreSQL server's processes per request, in ms, when they run on this machine (null when none is
   * seen in /proc): the database's share of each answer, which competes with the services for the same cores. The
   * writer's statements during the cell are in it too, alike for every face.
   */
  dbCpuMsPerRequest: number | null;
}

async function readCacheCounts(base: string): Promise<{ hit: number; miss: number } | null> {
  try {
    const text = await (await fetch(`${base}/metrics`, { headers: { 'forum-api-key': KEY } })).text();
    const count = (result: string) =>
      Number(new RegExp(`^dcs_read_cache_total\\{result="${result}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
    const counts = { hit: count('hit'), miss: count('miss') };
    return Number.isNaN(counts.hit) || Number.isNaN(counts.miss) ? null : counts;
  } catch {
    return null;
  }
}

async function measure(sc: MixedScenario, face: FaceName, rate: number): Promise<Cell> {
  const url = baseOf(face);
  const request = varied(sc, face);
  // Every cell is warmed up as it is measured (all its clients, the writer at its rate), and not counted: the first
  // cell of a scenario used to pay for the database pages its rows are on and for the server's first runs of its
  // reads (at 500,000 downloads the face measured first read at a third of the speed of the next, on the same rows).
  await autocannon({
    url,
    connections: CLIENTS,
    duration: WARMUP_SECONDS,
    requests: [request],
    headers: { 'forum-api-key': KEY },
    timeout: 30,
  });
  const cache0 = face === 'peer' || face === 'floor' ? null : await readCacheCounts(url);
  const pid = (face === 'peer' ? peer : face === 'floor' ? floor : isEmbedded(face) ? embedded : service)?.pid;
  const cpu0 = cpuMs(pid);
  const main0 = cpuMs(pid, pid);
  const db0 = postgresCpu();
  const result = await autocannon({
    url,
    connections: CLIENTS,
    duration: SECONDS,
    requests: [request],
    headers: { 'forum-api-key': KEY },
    timeout: 30,
  });
  const cpu1 = cpuMs(pid);
  const main1 = cpuMs(pid, pid);
  const dbMs = postgresCpuBetween(db0, postgresCpu());
  const cache1 = cache0 && (await readCacheCounts(url));
  const hits = cache0 && cache1 ? cache1.hit - cache0.hit : 0;
  const answered = cache0 && cache1 ? hits + cache1.miss - cache0.miss : 0;
  return {
    scenario: sc.name,
    face,
    rate,
    rps: Math.round((result.requests.total / result.duration) * 10) / 10,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    cacheHitPct: answered > 0 ? Math.round((hits / answered) * 1000) / 10 : null,
    cpuMsPerRequest:
      cpu0 !== null && cpu1 !== null && result.requests.total > 0
        ? Math.round(((cpu1 - cpu0) / result.requests.total) * 1000) / 1000
        : null,
    mainThreadBusyPct: main0 !== null && main1 !== null ? Math.round((main1 - main0) / (result.duration * 10)) : null,
    dbCpuMsPerRequest:
      dbMs !== null && result.requests.total > 0 ? Math.round((dbMs / result.requests.total) * 1000) / 1000 : null,
  };
}

function start(args: string[], env: Record<string, string>, logFile?: string): ChildProcess {
  return spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'production', ...env },
    stdio: ['ignore', logFile ? fs.openSync(logFile, 'a') : 'ignore', 'inherit'],
  });
}
async function waitReady(child: ChildProcess, url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`process exited with ${child.exitCode} before it was ready`);
    try {
      if ((await fetch(url)).status < 500) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become ready`);
}
async function stop(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

function textTable(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

function report(cells: Cell[], list: MixedScenario[], rate: number, writes: WriterTally, seconds: number): string {
  const at = (sc: string, face: FaceName) => cells.find((c) => c.scenario === sc && c.face === face && c.rate === rate);
  const ratio = (a?: Cell, b?: Cell) => (a && b && b.rps > 0 ? (a.rps / b.rps).toFixed(2) : 'n/a');
  const lat = (c?: Cell) => (c ? `${c.p50} / ${c.p99}` : 'n/a');
  const rows = list.map((sc) => {
    const [r, g, p, f] = [at(sc.name, 'rest'), at(sc.name, 'graphql'), at(sc.name, 'peer'), at(sc.name, 'floor')];
    const [er, eg] = [at(sc.name, 'embedded rest'), at(sc.name, 'embedded graphql')];
    const hit = (c?: Cell) => (c?.cacheHitPct == null ? '-' : `${c.cacheHitPct}%`);
    const errors = [r, g, p, f, er, eg].reduce((n, c) => n + (c?.errors ?? 0), 0);
    const cpu = (c?: Cell) => (c?.cpuMsPerRequest == null ? 'n/a' : c.cpuMsPerRequest.toFixed(2));
    const dbCpu = (c?: Cell) => (c?.dbCpuMsPerRequest == null ? 'n/a' : c.dbCpuMsPerRequest.toFixed(2));
    return [
      sc.name,
      `${r?.rps ?? 'n/a'} / ${g?.rps ?? 'n/a'} / ${p?.rps ?? 'n/a'}`,
      `${ratio(r, p)} / ${ratio(g, p)}`,
      lat(r),
      lat(g),
      lat(p),
      `${hit(r)} / ${hit(g)}`,
      `${cpu(r)} / ${cpu(g)} / ${cpu(p)}`,
      `${dbCpu(r)} / ${dbCpu(g)} / ${dbCpu(p)}`,
      ...(FLOOR ? [`${f?.rps ?? 'n/a'}`, ratio(f, p), cpu(f), dbCpu(f)] : []),
      ...(EMBEDDED
        ? [
            `${er?.rps ?? 'n/a'} / ${eg?.rps ?? 'n/a'}`,
            `${ratio(er, r)} / ${ratio(eg, g)}`,
            lat(er),
            lat(eg),
            `${hit(er)} / ${hit(eg)}`,
          ]
        : []),
      String(errors),
    ];
  });
  const achieved = seconds > 0 ? (writes.sent / seconds).toFixed(1) : '0';
  return [
    `\nWriter at ${rate} writes/s (achieved ${achieved}/s over the runs, ${writes.failed} refused or failed${writes.lastError ? `; last: ${writes.lastError}` : ''}), ${CLIENTS} clients, ${SECONDS} s per cell:\n`,
    textTable(
      [
        'scenario',
        'req/s REST / GraphQL / peer',
        'REST / GraphQL ÷ peer',
        'REST p50/p99 ms',
        'GraphQL p50/p99',
        'peer p50/p99',
        'cache hits REST / GraphQL',
        'CPU ms/req REST / GraphQL / peer',
        'PostgreSQL CPU ms/req',
        ...(FLOOR ? ['floor req/s', 'floor ÷ peer', 'floor CPU ms/req', 'floor PostgreSQL CPU'] : []),
        ...(EMBEDDED
          ? [
              'embedded req/s REST / GraphQL',
              'embedded ÷ PostgreSQL',
              'embedded REST p50/p99',
              'embedded GraphQL p50/p99',
              'embedded cache hits',
            ]
          : []),
        'errors',
      ],
      rows,
    ),
  ].join('\n');
}

// ───────────── the run

const admin = new pg.Client({ connectionString: opts['database-url'] });
await admin.connect();
const dbName = `dcs_mixed_${process.pid}`;
await admin.query(`CREATE DATABASE "${dbName}"`);
await admin.end();
const dbUrl = new URL(opts['database-url']!);
dbUrl.pathname = `/${dbName}`;
const databaseUrl = dbUrl.toString();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-mixed-'));
let service: ChildProcess | null = null;
let peer: ChildProcess | null = null;
let floor: ChildProcess | null = null;
let embedded: ChildProcess | null = null;
const embeddedDir = EMBEDDED ? fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-mixed-embedded-')) : null;
const began = Date.now();
try {
  const t0 = performance.now();
  const db = await openDatabase({ url: databaseUrl });
  let seeded: SeedResult;
  try {
    seeded = await seed(db, KEY, sizeFor(DOWNLOADS));
  } finally {
    await db.close();
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const pools = await preparePools(client, dataDir);
  await client.query('VACUUM ANALYZE file');
  await client.end();
  console.log(
    `Seeded ${DOWNLOADS.toLocaleString('en')} downloads on PostgreSQL in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
  );
  if (embeddedDir) {
    // The same catalogue on the embedded database (the seed's statements number its rows alike), and the same files'
    // bytes in its storage.
    const t1 = performance.now();
    const edb = await openDatabase({ pgliteDir: path.join(embeddedDir, 'db') });
    try {
      await seed(edb, KEY, sizeFor(DOWNLOADS));
      await edb.query('UPDATE file SET "fileSize" = 64 WHERE id = ANY($1::int[])', [pools.files]);
    } finally {
      await edb.close();
    }
    putFileBytes(embeddedDir, pools.fileKeys);
    console.log(`Seeded them on the embedded database in ${((performance.now() - t1) / 1000).toFixed(0)} s`);
  }
  const list = mixedScenarios(pools);
  const serviceEnv = (base: string, data: string, database: Record<string, string>) => ({
    ...SERVICE_ENV,
    ...database,
    DATA_DIR: data,
    PORT: new URL(base).port,
    HOST: '127.0.0.1',
    DM_BOOTSTRAP_KEY: KEY,
    LOG_LEVEL: 'warn',
    BASE_URL: 'http://localhost',
    COMMENT_FLOOD_SECONDS: '0',
    ...(READ_CACHE_MB !== undefined ? { READ_CACHE_MB } : {}),
  });
  const nodeFlags = opts['node-flags'].split(/\s+/).filter(Boolean);
  service = start(
    serviceArgs(nodeFlags),
    serviceEnv(BASE, dataDir, { DATABASE_URL: databaseUrl }),
    opts['service-log'],
  );
  await waitReady(service, `${BASE}/readyz`);
  if (embeddedDir) {
    embedded = start(serviceArgs(nodeFlags), serviceEnv(EMBEDDED_BASE, embeddedDir, {}), opts['service-log']);
    await waitReady(embedded, `${EMBEDDED_BASE}/readyz`);
    // The same rows on both: 20 random downloads read through REST on each.
    for (let i = 0; i < 20; i++) {
      const id = pick(pools.downloads);
      const [a, b] = await Promise.all(
        [BASE, EMBEDDED_BASE].map(
          async (base) =>
            (await (await fetch(`${base}/api/mc-dm-downloads/${id}/`, { headers: { 'forum-api-key': KEY } })).json())
              .download,
        ),
      );
      if (a?.title !== b?.title || a?.category_id !== b?.category_id)
        throw new Error(`download ${id}: the embedded database holds another row than PostgreSQL`);
    }
  }
  if (PEER) {
    peer = start(['--import', 'tsx', 'bench/peer.ts'], {
      DATABASE_URL: databaseUrl,
      PORT: new URL(PEER_BASE).port,
      DATABASE_POOL_SIZE: '10',
    });
    await waitReady(peer, `${PEER_BASE}/graphql`);
  }
  if (FLOOR) {
    floor = start(['--import', 'tsx', 'bench/floor.ts'], {
      DATABASE_URL: databaseUrl,
      PORT: new URL(FLOOR_BASE).port,
      DATABASE_POOL_SIZE: '10',
    });
    await waitReady(floor, `${FLOOR_BASE}/`);
  }
  await checkSameRows(list, seeded);
  console.log(
    `(REST, GraphQL${PEER ? ' and the peer' : ''}${FLOOR ? ' and the floor' : ''} answer the same rows and totals on 5 random requests of each scenario; read cache ${READ_CACHE_MB === '0' ? 'off' : 'on'})`,
  );
  const cells: Cell[] = [];
  const reports: string[] = [];
  for (const rate of RATES) {
    const writer = startWriter(rate, pools);
    // With --embedded, the embedded service's catalogue is written at the same rate, through its own REST face.
    const embeddedWriter = EMBEDDED ? startWriter(rate, pools, EMBEDDED_BASE) : null;
    const w0 = performance.now(); // the achieved rate counts the warm-up's writes over its time too
    // The writer runs alone for a while before the first cell: the service's write paths (never run before the first
    // rate with writes) are compiled and their statements prepared meanwhile. Without it the first cell measured at a
    // rate paid for all of that (the GraphQL download get at 50 writes/s, first in its turn, measured at twice its
    // CPU per read in two runs).
    if (rate > 0) await new Promise((r) => setTimeout(r, WRITER_WARM_UP_MS));
    for (const [i, sc] of list.entries()) {
      // The faces take turns at going first: the first cell of a scenario reads rows whose pages the database may not
      // have in memory yet, and the later ones find them there (on 500,000 downloads the face always measured first
      // had a p99 twice the next one's on the same reads).
      const faces = [
        'rest',
        'graphql',
        ...(PEER ? ['peer'] : []),
        ...(FLOOR ? ['floor'] : []),
        ...(EMBEDDED ? ['embedded rest', 'embedded graphql'] : []),
      ] as FaceName[];
      const turn = (i + RATES.indexOf(rate)) % faces.length;
      for (const face of [...faces.slice(turn), ...faces.slice(0, turn)]) {
        const cell = await measure(sc, face, rate);
        cells.push(cell);
        console.log(
          `  ${rate} w/s  ${sc.name.padEnd(28)} ${face.padEnd(7)} ${String(cell.rps).padStart(8)} req/s  p50 ${cell.p50} ms  p99 ${cell.p99} ms${cell.cacheHitPct === null ? '' : `  cache hits ${cell.cacheHitPct}%`}${cell.cpuMsPerRequest === null ? '' : `  CPU ${cell.cpuMsPerRequest} ms/req`}${cell.mainThreadBusyPct === null ? '' : ` (main thread ${cell.mainThreadBusyPct}% busy)`}${cell.dbCpuMsPerRequest === null ? '' : `  PostgreSQL CPU ${cell.dbCpuMsPerRequest} ms/req`}${cell.errors ? `  (${cell.errors} errors)` : ''}`,
        );
      }
    }
    const writes = await writer.stop();
    const embeddedWrites = await embeddedWriter?.stop();
    if (embeddedWrites?.failed)
      console.log(
        `  the embedded service's writer: ${embeddedWrites.failed} of ${embeddedWrites.sent} refused or failed; last: ${embeddedWrites.lastError}`,
      );
    const text = report(cells, list, rate, writes, (performance.now() - w0) / 1000);
    reports.push(text);
    console.log(text);
  }
  console.log(
    `\n${reports.join('\n')}\n\nTotal ${((Date.now() - began) / 60000).toFixed(1)} min; load average at the end ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} (${os.cpus().length} cores)`,
  );
  const out = path.join(root, 'bench/results', `${new Date().toISOString().replace(/[:.]/g, '-')}-mixed.json`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(
    out,
    JSON.stringify(
      { downloads: DOWNLOADS, clients: CLIENTS, seconds: SECONDS, readCacheMb: READ_CACHE_MB ?? null, cells },
      null,
      2,
    ),
  );
} finally {
  await Promise.all([stop(service), stop(peer), stop(floor), stop(embedded)]);
  fs.rmSync(dataDir, { recursive: true, force: true });
  if (embeddedDir) fs.rmSync(embeddedDir, { recursive: true, force: true });
  const c = new pg.Client({ connectionString: opts['database-url'] });
  await c.connect();
  await c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  await c.end();
}
