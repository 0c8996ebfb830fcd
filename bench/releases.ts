// `npm run bench:releases [-- --db pglite|postgres --downloads 500 --rounds 200 --catalogue 500000 --keep <name>]`:
// the two release reads a launcher makes, against the compiled service, seeded through the API:
//   - update check: POST /api/mc-dm-updates/ with 500 hashes (every one known: 500 downloads, each with a 1.0.0
//     holding the file and two newer versions, one of them a beta), channel release, compatible_with one value;
//   - lookup by hash: GET /api/mc-dm-files/?hash=…&hash=… and GraphQL filesByHash with 100 of those hashes (the
//     route's bound), each request its own hundred;
//   - resolution: GET /api/mc-dm-versions/<root>/dependencies/ over a 200-version graph (50 downloads × 4 semver
//     versions; each download's versions need the next two downloads with ^1.1.0, a back edge makes a cycle).
// Sequential requests (one client) after a warm-up; prints p50, p99 and max per scenario. `--catalogue N` first
// seeds the catalogue of `npm run bench` (bench/seed.ts: N downloads with a version and 2 files each, set-based SQL)
// under those rows, so the hashes are looked up among N × 2 files. `--keep <name>` (PostgreSQL) keeps the seeded
// database `bench_releases_<name>` after the run and reuses it on the next run with the same name and sizes.
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openDatabase } from '../src/db/client.js';
import { seed as seedCatalogue, sizeFor } from './seed.js';
import { SERVICE_ENV, serviceArgs } from './service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: {
    db: { type: 'string', default: 'pglite' },
    downloads: { type: 'string', default: '500' },
    rounds: { type: 'string', default: '200' },
    catalogue: { type: 'string', default: '0' },
    keep: { type: 'string' },
    'postgres-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    /** Node's flags for the service process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" (space-separated). */
    'node-flags': { type: 'string', default: '' },
  },
});
const DOWNLOADS = Number(opts.downloads);
const ROUNDS = Number(opts.rounds);
const CATALOGUE = Number(opts.catalogue);
if (opts.keep !== undefined && (opts.db !== 'postgres' || !/^[a-z0-9_]+$/.test(opts.keep)))
  throw new Error('--keep takes a name of [a-z0-9_], with --db postgres');
const KEY = 'dm_bench_releases_key_0000000000000000000000000';
const PORT = 41_000 + Math.floor(Math.random() * 1000);
const BASE = `http://127.0.0.1:${PORT}`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-bench-releases-'));

async function call(method: string, url: string, body?: unknown, extra: Record<string, string> = {}) {
  const res = await fetch(`${BASE}${url}`, {
    method,
    headers: { 'Forum-Api-Key': KEY, ...(body ? { 'content-type': 'application/json' } : {}), ...extra },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await res.json()) as any;
  if (res.status !== 200) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  return json;
}

async function upload(versionId: number, bytes: Buffer, user: string): Promise<string> {
  const form = new FormData();
  form.append('version_id', String(versionId));
  form.append('file', new Blob([new Uint8Array(bytes)]), 'mod.jar.txt');
  const res = await fetch(`${BASE}/api/mc-dm-files/`, {
    method: 'POST',
    headers: { 'Forum-Api-Key': KEY, 'Forum-Api-User': user },
    body: form,
  });
  const json = (await res.json()) as any;
  if (res.status !== 200) throw new Error(`upload: ${res.status} ${JSON.stringify(json)}`);
  return json.file.file_hash as string;
}

/** Runs `n` tasks with at most `limit` in flight. */
async function pool(n: number, limit: number, fn: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

async function measure(label: string, fn: () => Promise<void>) {
  for (let i = 0; i < 20; i++) await fn();
  const ms: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  console.log(
    `${label.padEnd(52)} p50 ${pct(ms, 50).toFixed(1).padStart(6)} ms   p99 ${pct(ms, 99).toFixed(1).padStart(6)} ms   max ${ms[ms.length - 1]!.toFixed(1).padStart(6)} ms   (${ROUNDS} requests)`,
  );
}

/** The rows the two scenarios read, made through the API: the update check's downloads and the dependency graph. */
async function seedReleases(): Promise<Seeded> {
  const { createUser } = (
    await call('POST', '/graphql', {
      query: 'mutation { createUser(input: { username: "publisher" }) { user { userId } } }',
    })
  ).data;
  const user = String(createUser.user.userId);
  const as = { 'Forum-Api-User': user };
  const category = (await call('POST', '/api/mc-dm-categories/', { title: 'Mods' })).category.category_id;

  console.log(`Seeding ${DOWNLOADS} downloads (3 versions each, a file in the first) on ${opts.db} …`);
  const hashes: string[] = new Array(DOWNLOADS);
  await pool(DOWNLOADS, 8, async (i) => {
    const d = (
      await call(
        'POST',
        '/api/mc-dm-downloads/',
        { category_id: category, title: `Mod ${i}`, version_string: '1.0.0' },
        as,
      )
    ).download;
    hashes[i] = await upload(d.current_version_id, crypto.randomBytes(64), user);
    await call(
      'POST',
      '/api/mc-dm-versions/',
      { download_id: d.download_id, version_string: '1.1.0', compatible_with: ['1.21'] },
      as,
    );
    const v3 = {
      download_id: d.download_id,
      version_string: '1.2.0-beta.1',
      channel: 'beta',
      compatible_with: ['1.21'],
    };
    await call('POST', '/api/mc-dm-versions/', v3, as);
  });
  console.log('Seeding the 200-version dependency graph (50 downloads × 4 versions) …');
  const graph: { downloadId: number; versionIds: number[] }[] = [];
  for (let i = 0; i < 50; i++) {
    const d = (
      await call(
        'POST',
        '/api/mc-dm-downloads/',
        { category_id: category, title: `Lib ${i}`, version_string: '1.0.0' },
        as,
      )
    ).download;
    const versionIds = [d.current_version_id as number];
    for (const v of ['1.1.0', '1.2.0', '1.3.0']) {
      versionIds.push(
        (await call('POST', '/api/mc-dm-versions/', { download_id: d.download_id, version_string: v }, as)).version
          .version_id,
      );
    }
    graph.push({ downloadId: d.download_id, versionIds });
  }
  for (let i = 0; i < 50; i++) {
    const deps = [2 * i + 1, 2 * i + 2]
      .filter((j) => j < 50)
      .map((j) => ({ download_id: graph[j]!.downloadId, version_range: '^1.1.0' }));
    if (i === 49) deps.push({ download_id: graph[11]!.downloadId, version_range: '*' }); // back to an ancestor: a cycle
    for (const versionId of graph[i]!.versionIds) {
      await call('PUT', `/api/mc-dm-versions/${versionId}/`, { dependencies: deps }, as);
    }
  }
  return { hashes, graph };
}

interface Seeded {
  hashes: string[];
  graph: { downloadId: number; versionIds: number[] }[];
}
type Kept = Seeded & { catalogue: number };

/** What a kept database was seeded with (written last), or null when its seed did not finish. */
async function keptSeed(url: string): Promise<Kept | null> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const t = await c.query(`SELECT 1 FROM pg_tables WHERE tablename = 'bench_releases_seed'`);
    if (t.rowCount === 0) return null;
    const r = await c.query<{ seed: Kept }>('SELECT seed FROM bench_releases_seed');
    return r.rows[0]?.seed ?? null;
  } finally {
    await c.end();
  }
}

async function markSeeded(url: string, seed: Kept): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('CREATE TABLE bench_releases_seed (seed jsonb NOT NULL)');
    await c.query('INSERT INTO bench_releases_seed (seed) VALUES ($1)', [JSON.stringify(seed)]);
  } finally {
    await c.end();
  }
}

async function main() {
  let databaseUrl: string | undefined;
  let dropDb = async () => {};
  let kept: Kept | null = null;
  if (opts.db === 'postgres') {
    const name = opts.keep ? `bench_releases_${opts.keep}` : `bench_releases_${process.pid}`;
    const admin = new pg.Client({ connectionString: opts['postgres-url'] });
    await admin.connect();
    const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
    if (!exists) await admin.query(`CREATE DATABASE "${name}"`);
    await admin.end();
    const u = new URL(opts['postgres-url']!);
    u.pathname = `/${name}`;
    databaseUrl = u.toString();
    if (exists) {
      kept = await keptSeed(databaseUrl);
      if (!kept) throw new Error(`${name} exists but holds no finished seed: drop it or pick another --keep`);
      if (kept.catalogue !== CATALOGUE || kept.hashes.length !== DOWNLOADS)
        throw new Error(`${name} was seeded with --catalogue ${kept.catalogue} --downloads ${kept.hashes.length}`);
    }
    dropDb = async () => {
      if (opts.keep) return;
      const a = new pg.Client({ connectionString: opts['postgres-url'] });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await a.end();
    };
  }
  const t0 = performance.now();
  if (CATALOGUE > 0 && !kept) {
    console.log(`Seeding the catalogue of npm run bench: ${CATALOGUE.toLocaleString('en')} downloads …`);
    const db = await openDatabase(databaseUrl ? { url: databaseUrl } : { pgliteDir: path.join(dir, 'db') });
    try {
      await seedCatalogue(db, KEY, sizeFor(CATALOGUE));
    } finally {
      await db.close();
    }
    console.log(`Catalogue seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s.`);
  }
  const service: ChildProcess = spawn(process.execPath, serviceArgs(opts['node-flags'].split(/\s+/).filter(Boolean)), {
    cwd: root,
    env: {
      ...process.env,
      ...SERVICE_ENV,
      PORT: String(PORT),
      DATA_DIR: dir,
      DM_BOOTSTRAP_KEY: KEY,
      RATE_LIMIT_PER_MINUTE: '0',
      READ_CACHE_MB: '0',
      LOG_LEVEL: 'warn',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      // A kept database remembers the data directory of the run that seeded it, gone since; these scenarios read no
      // stored bytes (hashes and versions are rows), so a new directory is allowed.
      ...(kept ? { ALLOW_SPLIT_STORAGE: '1' } : {}),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${BASE}/readyz`)).ok) break;
      } catch {
        /* not listening yet */
      }
      if (i > 300) throw new Error('the service did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    let hashes: string[];
    let graph: { downloadId: number; versionIds: number[] }[];
    if (kept) {
      ({ hashes, graph } = kept);
      console.log(`Reusing the kept database bench_releases_${opts.keep}.`);
    } else {
      ({ hashes, graph } = await seedReleases());
      if (opts.keep) await markSeeded(databaseUrl!, { catalogue: CATALOGUE, hashes, graph });
    }
    console.log(`Seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s.\n`);

    const updates = await call('POST', '/api/mc-dm-updates/', {
      hashes: hashes.slice(0, 500),
      channel: 'release',
      compatible_with: ['1.21'],
    });
    if (updates.updates.length !== Math.min(500, DOWNLOADS)) throw new Error('the update check missed hashes');
    const resolved = await call('GET', `/api/mc-dm-versions/${graph[0]!.versionIds[3]}/dependencies/`);
    console.log(
      `resolution of the graph's root: ${resolved.versions.length} versions, ${resolved.conflicts.length} conflicts, ${resolved.cycles.length} cycles`,
    );
    const n = Math.min(500, DOWNLOADS);
    await measure(`update check, ${n} hashes (REST, ${opts.db})`, async () => {
      await call('POST', '/api/mc-dm-updates/', {
        hashes: hashes.slice(0, 500),
        channel: 'release',
        compatible_with: ['1.21'],
      });
    });
    await measure(`update check, ${n} hashes (GraphQL, ${opts.db})`, async () => {
      await call('POST', '/graphql', {
        query:
          'query($h: [String!]!) { updates(hashes: $h, channel: RELEASE, compatibleWith: ["1.21"]) { hash current { versionId } latest { versionId fileList(first: 1) { fileId } } } }',
        variables: { h: hashes.slice(0, 500) },
      });
    });
    // The lookup by hash (a launcher identifying installed files): 100 hashes a request, the route's bound, each
    // request its own hundred of the 500 known ones.
    const hundred = (i: number) => hashes.slice((i * 100) % n, ((i * 100) % n) + 100);
    const lookupRest = (i: number) =>
      call(
        'GET',
        `/api/mc-dm-files/?per_page=100&${hundred(i)
          .map((h) => `hash=${encodeURIComponent(h)}`)
          .join('&')}`,
      );
    const lookupGraphql = (i: number) =>
      call('POST', '/graphql', {
        query: 'query($h: [String!]!) { filesByHash(hashes: $h) { fileId fileHash version { versionId } } }',
        variables: { h: hundred(i) },
      });
    const restFound = (await lookupRest(0)).files.length;
    const graphqlFound = (await lookupGraphql(0)).data.filesByHash.length;
    if (restFound !== hundred(0).length || graphqlFound !== hundred(0).length)
      throw new Error(
        `the lookup by hash found ${restFound} (REST) and ${graphqlFound} (GraphQL) of ${hundred(0).length}`,
      );
    let round = 0;
    await measure(`lookup by hash, ${hundred(0).length} hashes (REST ?hash=, ${opts.db})`, async () => {
      await lookupRest(round++);
    });
    await measure(`lookup by hash, ${hundred(0).length} hashes (GraphQL filesByHash, ${opts.db})`, async () => {
      await lookupGraphql(round++);
    });
    await measure(`resolution, 200-version graph (REST, ${opts.db})`, async () => {
      await call('GET', `/api/mc-dm-versions/${graph[0]!.versionIds[3]}/dependencies/`);
    });
  } finally {
    service.kill('SIGTERM');
    await new Promise((r) => service.once('exit', r));
    await dropDb();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
