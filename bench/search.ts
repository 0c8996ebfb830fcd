// `npm run bench:search`: search latency and relevance on a seeded catalogue, against a naive ILIKE baseline measured
// in the same run.
//
//   npm run bench:search                                   # embedded database, 50,000 downloads
//   npm run bench:search -- --database-url postgres://postgres@127.0.0.1:5432/test --downloads 500000
//   npm run bench:search -- --downloads 5000 --seconds 3   # a quick look
//
// The catalogue: 200 categories three levels deep (guests may not view every 20th), a user per 50 downloads, and
// downloads whose titles are three words of a small vocabulary (adjective, noun, noun), tag lines and descriptions
// (with BB code) made of the same words, two tags each, 2% moderated and 1% deleted. The service runs as its own
// process, compiled, as `npm start` runs it (bench/service.ts; --node-flags passes Node's flags to it, e.g.
// "--cpu-prof --cpu-prof-dir=/tmp/prof"), on that database; 16 clients (--clients) in this process send GraphQL
// `search` requests with a registered user's key for --seconds per scenario, and the latency of each request is
// recorded, with the service process's CPU time per request (user + system, /proc). The baseline runs the same
// searches' naive form straight on the database with as many clients, before the service starts (the embedded
// database is this process's until then): `title ILIKE '%word%' OR description ILIKE '%word%'`, visible rows, newest
// first, a page of 20 and the count. Relevance: 100 titles of the catalogue, each with one typo (two letters swapped,
// one dropped or one doubled), searched with first: 5; the score is how many find their download among those 5.
// After the service stops, the misspelled-title statement, as the service sends it, runs under EXPLAIN ANALYZE (an
// instance of the service in this process captures it). --only <regex> runs only the scenarios (and the steps
// "relevance" and "statement") whose names match; --skip-baseline leaves the ILIKE baseline out.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import type { Database } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { startApp } from '../src/app.js';
import { bootstrap } from '../src/modules/accounts/index.js';
import { SERVICE_ENV, serviceArgs } from './service.js';

const { values: opts } = parseArgs({
  allowPositionals: true,
  options: {
    'database-url': { type: 'string' },
    downloads: { type: 'string' },
    clients: { type: 'string', default: '16' },
    seconds: { type: 'string', default: '10' },
    keep: { type: 'string' },
    'seed-only': { type: 'boolean', default: false },
    /** Only the scenarios (and the steps "relevance", "statement") whose names match this regular expression. */
    only: { type: 'string' },
    'skip-baseline': { type: 'boolean', default: false },
    /** Node's flags for the service process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" (space-separated). */
    'node-flags': { type: 'string', default: '' },
  },
});
const DOWNLOADS = Number(opts.downloads ?? 50_000);
const CLIENTS = Number(opts.clients);
const SECONDS = Number(opts.seconds);
const KEY = 'dm_bench_search_super_key_000000000000000000';

const ADJECTIVES =
  'ancient amber arctic azure blazing bold broken bronze burning calm crimson crystal cursed dark deep desert distant dusty eastern elder emerald endless enchanted epic eternal fallen fiery floating forgotten frozen gilded golden grand green hidden hollow icy iron jade jagged lost lunar magic marble mighty misty mossy mystic noble northern obsidian old pale polar quiet radiant red royal ruined rusty sacred sandy scarlet secret shadow shining silent silver simple sky small solar southern stone storm sunken swift tall thorny tiny twisted urban velvet vast verdant wild windy winter wooden'.split(
    ' ',
  );
const NOUNS =
  'abbey academy airship anvil arena armory bakery bastion bay bazaar beacon bridge canyon castle cathedral cavern chapel citadel city cliff colony cottage crater crypt dam dock dome dungeon empire estate factory farm fjord forest forge fort fortress garden gate glacier grove harbor haven hideout hill hive island jungle keep kingdom lab labyrinth lagoon lair library lighthouse manor market maze meadow mill mine monastery monument mountain museum oasis observatory outpost palace park pass peak pier pyramid quarry ranch reef refuge ridge ruins sanctuary school shrine skyscraper spire stable station statue stronghold swamp temple tower town tree tunnel valley vault village villa volcano warehouse watchtower well windmill workshop'.split(
    ' ',
  );

function sqlArray(words: string[]): string {
  return `ARRAY[${words.map((w) => `'${w}'`).join(',')}]`;
}

/**
 * A fresh database on the server (dropped by `drop`), or an embedded one in a temporary directory, which is also the
 * service's data directory (its database is `<dir>/db`, where the service opens it). `reopen` opens it again after
 * this process closed it for the service.
 */
async function createDatabase(): Promise<{
  db: Database;
  url?: string;
  seeded?: number | null;
  /** A kept database that holds tables already (a seed, finished or not). */
  used: boolean;
  dataDir: string;
  reopen(): Promise<Database>;
  drop(): Promise<void>;
}> {
  const kept = opts.keep;
  if (kept !== undefined && !/^[a-z0-9_]+$/.test(kept)) throw new Error('--keep takes a name of [a-z0-9_]');
  if (!opts['database-url']) {
    // Kept: the directory <tmp>/dcs-bench-search-<name>, left in place for the next run with that name.
    const dir = kept
      ? path.join(os.tmpdir(), `dcs-bench-search-${kept}`)
      : fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-bench-search-'));
    const existed = kept !== undefined && fs.existsSync(path.join(dir, 'db', 'PG_VERSION'));
    const open = () => openDatabase({ pgliteDir: path.join(dir, 'db') });
    const db = await open();
    return {
      db,
      seeded: existed ? await seededSize(db) : null,
      used: existed,
      dataDir: dir,
      reopen: open,
      drop: async () => {
        if (!kept) fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-bench-search-'));
  const name = kept ? `dcs_bench_search_${kept}` : `dcs_bench_search_${process.pid}`;
  const admin = new pg.Client({ connectionString: opts['database-url'] });
  await admin.connect();
  const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
  if (!exists) await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(opts['database-url']);
  url.pathname = `/${name}`;
  const open = () => openDatabase({ url: url.toString(), poolSize: CLIENTS });
  const db = await open();
  return {
    db,
    url: url.toString(),
    seeded: exists ? await seededSize(db) : null,
    used: exists && (await db.query(`SELECT 1 FROM pg_tables WHERE tablename = 'download'`)).length > 0,
    dataDir: dir,
    reopen: open,
    drop: async () => {
      fs.rmSync(dir, { recursive: true, force: true });
      if (kept) return;
      const a = new pg.Client({ connectionString: opts['database-url'] });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await a.end();
    },
  };
}

/** The size a kept database was seeded with (written last by `seed`), or null when its seed did not finish. */
async function seededSize(db: Database): Promise<number | null> {
  const [table] = await db.query(`SELECT 1 FROM pg_tables WHERE tablename = 'bench_search_seed'`);
  if (!table) return null;
  const [row] = await db.query<{ downloads: number }>('SELECT downloads FROM bench_search_seed');
  return row ? row.downloads : null;
}

export async function seed(db: Database, DOWNLOADS: number): Promise<void> {
  await migrate(db);
  await bootstrap(db, KEY);
  await db.session(async (s) => {
    const q = (sql: string) => s.exec(sql);
    const adj = sqlArray(ADJECTIVES);
    const noun = sqlArray(NOUNS);
    const pick = (arr: string, n: number, salt: string) => `(${arr})[1 + abs(hashtext(g::text || '${salt}')) % ${n}]`;
    await q(`INSERT INTO category (title, "displayOrder") SELECT 'Top ' || g, g FROM generate_series(1, 10) g`);
    await q(
      `INSERT INTO category ("parentId", title, "displayOrder") SELECT 1 + (g % 10), 'Mid ' || g, g FROM generate_series(1, 40) g`,
    );
    await q(
      `INSERT INTO category ("parentId", title, "displayOrder") SELECT 11 + (g % 40), 'Leaf ' || g, g FROM generate_series(1, 150) g`,
    );
    await q(`INSERT INTO category_permission ("categoryId", "groupId", permission, value)
             SELECT c.id, (SELECT id FROM user_group WHERE name = 'registered'), 'view', 'deny' FROM category c WHERE c.id % 20 = 0`);
    const users = Math.max(1, Math.ceil(DOWNLOADS / 50));
    await q(`INSERT INTO "user" (username, "primaryGroupId")
             SELECT 'user' || g, (SELECT id FROM user_group WHERE name = 'registered') FROM generate_series(1, ${users}) g`);
    await q(`INSERT INTO tag (name) SELECT unnest(${noun})`);
    await q(`INSERT INTO download ("categoryId", "userId", title, "tagLine", description, "downloadCount", "ratingAvg",
                                   "lastUpdate", "createdDate", state)
             SELECT 1 + (g % 200), 1 + (g % ${users}),
                    initcap(${pick(adj, ADJECTIVES.length, 'a')}) || ' ' || initcap(${pick(noun, NOUNS.length, 'b')}) || ' ' || initcap(${pick(noun, NOUNS.length, 'c')}),
                    'A ' || ${pick(adj, ADJECTIVES.length, 'd')} || ' ' || ${pick(noun, NOUNS.length, 'e')} || ' map',
                    '[b]' || initcap(${pick(adj, ADJECTIVES.length, 'f')}) || '[/b] ' || ${pick(noun, NOUNS.length, 'g')}
                      || (CASE WHEN g % 3 = 0 THEN ' for survival servers' ELSE ' for creative building' END)
                      || ', with a ' || ${pick(noun, NOUNS.length, 'h')} || ' and a [url=https://example.com/' || g || ']'
                      || ${pick(noun, NOUNS.length, 'i')} || '[/url].',
                    (g * 7919) % 10000, ((g * 31) % 50) / 10.0,
                    now() - g * interval '1 minute', now() - g * 2 * interval '1 minute',
                    (CASE WHEN g % 50 = 0 THEN 'moderated' WHEN g % 97 = 0 THEN 'deleted' ELSE 'visible' END)::"DownloadState"
             FROM generate_series(1::bigint, ${DOWNLOADS}::bigint) g`);
    await q(`INSERT INTO download_tag ("downloadId", "tagId")
             SELECT DISTINCT d.id, t.id FROM download d, LATERAL (VALUES (1 + abs(hashtext(d.id::text || 't')) % ${NOUNS.length}), (1 + abs(hashtext(d.id::text || 'u')) % ${NOUNS.length})) x(n)
             JOIN tag t ON t.id = x.n`);
    await q('VACUUM ANALYZE');
  });
}

/** Marks a kept database as seeded with `downloads` (a later run with the same --keep and size reuses it). */
async function markSeeded(db: Database, downloads: number): Promise<void> {
  await db.query('CREATE TABLE bench_search_seed (downloads int NOT NULL)');
  await db.query('INSERT INTO bench_search_seed (downloads) VALUES ($1)', [downloads]);
}

const loadAverage = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface Figures {
  requests: number;
  p50: number;
  p99: number;
  perSecond: number;
  errors: number;
}

/** Runs `one` from CLIENTS loops for `seconds`; `one(i)` is the i-th request overall. */
async function measure(one: (i: number) => Promise<boolean>, seconds = SECONDS): Promise<Figures> {
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const ok = await one(next++).catch(() => false);
        latencies.push(performance.now() - t0);
        if (!ok) errors++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    perSecond: latencies.length / elapsed,
    errors,
  };
}

/** One typo in `title`: two neighbouring letters swapped, one dropped or one doubled, in one of its longer words. */
function typo(title: string, n: number): string {
  const words = title.split(' ');
  const w = n % words.length;
  const word = words[w]!;
  const at = 1 + (n % Math.max(1, word.length - 2));
  const kind = n % 3;
  words[w] =
    kind === 0
      ? word.slice(0, at) + word[at + 1] + word[at] + word.slice(at + 2)
      : kind === 1
        ? word.slice(0, at) + word.slice(at + 1)
        : word.slice(0, at) + word[at] + word.slice(at);
  return words.join(' ');
}

/** A port free at the moment (the service process is told to listen on it). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** CPU seconds the process has used, user and system, from /proc/<pid>/stat (NaN where there is no /proc). */
function cpuOf(pid: number): { user: number; system: number } {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
  } catch {
    return { user: Number.NaN, system: Number.NaN };
  }
}

/** CPU seconds used so far by each PostgreSQL backend serving database `name` (this machine's server only). */
async function backendsCpu(db: Database | null, name: string | undefined): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (!db || !name) return out;
  const rows = await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name]);
  for (const r of rows) {
    const c = cpuOf(r.pid);
    if (!Number.isNaN(c.user)) out.set(r.pid, c.user + c.system);
  }
  return out;
}

/** CPU seconds the backends used between two readings: those that started since count whole; those gone, not at all. */
function backendsDelta(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [pid, cpu] of after) sum += cpu - (before.get(pid) ?? 0);
  return sum;
}

/** The compiled service as its own process on the bench's database, once it answers /readyz. */
async function startService(env: Record<string, string>): Promise<{ url: string; process: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, serviceArgs(opts['node-flags'].split(/\s+/).filter(Boolean)), {
    env: { ...process.env, ...SERVICE_ENV, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (exited) throw new Error('the service exited while starting');
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {
      /* not listening yet */
    }
    if (i > 600) throw new Error('the service did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, process: child };
}

async function stopService(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

async function main() {
  const where = opts['database-url'] ? 'PostgreSQL server' : 'embedded database';
  const only = opts.only ? new RegExp(opts.only) : null;
  const runs = (step: string) => !only || only.test(step);
  console.log(
    `bench:search on the ${where}: ${DOWNLOADS.toLocaleString('en')} downloads, ${CLIENTS} clients, ${SECONDS} s per scenario; load average ${loadAverage()}`,
  );
  const target = await createDatabase();
  let db: Database | null = target.db;
  const { url, seeded, dataDir, drop, reopen } = target;
  const dbName = url ? new URL(url).pathname.slice(1) : undefined;
  let service: ChildProcess | null = null;
  try {
    if (seeded === DOWNLOADS) {
      await migrate(db); // a kept database seeded before a new migration
      console.log(
        `reusing the kept database ${url ? `dcs_bench_search_${opts.keep}` : dataDir} (${DOWNLOADS.toLocaleString('en')} downloads)`,
      );
    } else {
      // A kept database with tables but no finished seed, or one of another size.
      if (target.used)
        throw new Error(
          `the kept database ${url ? `dcs_bench_search_${opts.keep}` : dataDir} holds another seed: drop it or pick another --keep`,
        );
      const t0 = performance.now();
      await seed(db, DOWNLOADS);
      if (opts.keep) await markSeeded(db, DOWNLOADS);
      console.log(`seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    if (opts['seed-only']) return;
    const titles = (
      await db.query<{ id: number; title: string }>(
        // Downloads the user may view: visible, and neither their category nor its parents is one the user may not
        // view (a denial holds for the categories under it too).
        `SELECT d.id, d.title FROM download d JOIN category c ON c.id = d."categoryId"
           LEFT JOIN category p ON p.id = c."parentId" LEFT JOIN category gp ON gp.id = p."parentId"
         WHERE d.state = 'visible' AND c.id % 20 <> 0 AND coalesce(p.id, 1) % 20 <> 0 AND coalesce(gp.id, 1) % 20 <> 0
         ORDER BY hashtext(d.id::text) LIMIT 100`,
      )
    ).map((r) => ({ id: r.id, title: r.title }));
    const misspelled = titles.map((t, i) => typo(t.title, i + 7));

    const SEARCH = `query($q: String!, $f: DownloadFilter, $first: Int) { search(query: $q, filter: $f, first: $first) {
      totalCount edges { node { downloadId title } highlight { title tagLine description } } } }`;
    const FACETED = `query($q: String!, $f: DownloadFilter) { search(query: $q, filter: $f) {
      totalCount edges { node { downloadId title } } facets { categories { category { categoryId } count } tags { tag count } prefixes { prefixId count } } } }`;
    const ok = (r: { data?: any; errors?: unknown[] }) => !r.errors && r.data?.search != null;
    let base = '';
    const post = (query: string, variables: Record<string, unknown>, key: string) =>
      fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'forum-api-key': key },
        body: JSON.stringify({ query, variables }),
      });
    const gql = async (query: string, variables: Record<string, unknown>, key = KEY) => {
      // Once more on a reset: a kept-alive connection the server closed while idle.
      const res = await post(query, variables, key).catch(() => post(query, variables, key));
      return (await res.json()) as { data?: any; errors?: unknown[] };
    };
    let userKey = '';
    const scenarios: { name: string; word: string; run: (i: number) => Promise<boolean> }[] = [
      { name: 'common word', word: 'survival', run: async () => ok(await gql(SEARCH, { q: 'survival' }, userKey)) },
      {
        name: 'phrase',
        word: 'creative building',
        run: async () => ok(await gql(SEARCH, { q: '"creative building"' }, userKey)),
      },
      {
        name: 'misspelled title',
        word: misspelled[0]!.split(' ')[0]!,
        run: async (i: number) => ok(await gql(SEARCH, { q: misspelled[i % misspelled.length] }, userKey)),
      },
      {
        name: 'filtered faceted',
        word: 'castle',
        run: async () => ok(await gql(FACETED, { q: 'castle', f: { categoryId: 1 } }, userKey)),
      },
    ].filter((s) => runs(s.name));

    // The naive baseline, straight on the database, before the service starts (the embedded database is this
    // process's until it closes it for the service).
    const baselines = new Map<string, Figures>();
    if (!opts['skip-baseline']) {
      const baseline = async (word: string) => {
        const like = `%${word}%`;
        await db!.query(
          `SELECT d.id, d.title, (SELECT count(*) FROM download x WHERE x.state = 'visible' AND (x.title ILIKE $1 OR x.description ILIKE $1)) AS total
           FROM download d WHERE d.state = 'visible' AND (d.title ILIKE $1 OR d.description ILIKE $1)
           ORDER BY d."lastUpdate" DESC LIMIT 20`,
          [like],
        );
        return true;
      };
      for (const s of scenarios) {
        const b = await measure(() => baseline(s.word));
        baselines.set(s.name, b);
        console.log(
          `ILIKE baseline, ${s.name} (${s.word}): p50 ${b.p50.toFixed(1)} ms, p99 ${b.p99.toFixed(1)} ms, ${b.perSecond.toFixed(1)} req/s`,
        );
      }
    }
    // The service's own process, on the bench's database (PostgreSQL: with as many connections as clients).
    const serviceEnv: Record<string, string> = {
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '0',
      READ_CACHE_MB: '0',
      DM_BOOTSTRAP_KEY: KEY,
      DATA_DIR: dataDir,
      ...(url ? { DATABASE_URL: url, DATABASE_POOL_SIZE: String(CLIENTS) } : {}),
      // A kept database remembers the data directory of an earlier run, gone since; a search reads no stored bytes.
      ...(opts.keep ? { ALLOW_SPLIT_STORAGE: '1' } : {}),
    };
    if (!url) {
      await db.close();
      db = null;
    }
    const started = await startService(serviceEnv);
    service = started.process;
    base = started.url;
    // A registered user's key: the permission filter (a category in 20 hidden, moderated and deleted rows) applies.
    const made = await gql(`mutation { createApiKey(input: { type: USER, userId: 1, scopes: ["all"] }) { key } }`, {});
    userKey = made.data.createApiKey.key as string;

    const rows: Record<string, string | number>[] = [];
    for (const s of scenarios) {
      await measure(s.run, 1); // warm-up: plans, caches, the JIT
      // CPU per request: the service process (user / system), the database's backends (PostgreSQL on this machine;
      // the embedded database is inside the service) and this process, the 16 clients.
      const service0 = cpuOf(service.pid!);
      const backends0 = await backendsCpu(db, dbName);
      const bench0 = process.cpuUsage();
      const f = await measure(s.run);
      const bench = process.cpuUsage(bench0);
      const backends = backendsDelta(backends0, await backendsCpu(db, dbName));
      const service1 = cpuOf(service.pid!);
      const perRequest = (seconds: number) => ((1000 * seconds) / f.requests).toFixed(2);
      const b = baselines.get(s.name);
      rows.push({
        scenario: s.name,
        'p50 ms': f.p50.toFixed(1),
        'p99 ms': f.p99.toFixed(1),
        'req/s': f.perSecond.toFixed(1),
        errors: f.errors,
        'CPU ms/req: service user+sys': `${perRequest(service1.user - service0.user)}+${perRequest(service1.system - service0.system)}`,
        database: url ? perRequest(backends) : '(in service)',
        clients: perRequest((bench.user + bench.system) / 1e6),
        'ILIKE p50 ms': b ? b.p50.toFixed(1) : '-',
        'ILIKE p99 ms': b ? b.p99.toFixed(1) : '-',
      });
      console.log(JSON.stringify(rows.at(-1)));
    }
    if (rows.length) console.table(rows);
    if (runs('relevance')) {
      let found = 0;
      const misses: string[] = [];
      for (const [i, t] of titles.entries()) {
        const r = await gql(SEARCH, { q: misspelled[i], first: 5 }, userKey);
        const ids = (r.data?.search?.edges ?? []).map((e: any) => e.node.downloadId);
        if (ids.includes(t.id)) found++;
        else if (misses.length < 5)
          misses.push(
            `"${misspelled[i]}" for "${t.title}"${r.errors ? ` (${JSON.stringify(r.errors).slice(0, 200)})` : ''}`,
          );
      }
      console.log(`relevance: ${found}/100 misspelled titles find their download in the top 5`);
      if (misses.length) console.log(`  missed, e.g.: ${misses.join('; ')}`);
    }
    await stopService(service);
    service = null;
    console.log(`load average ${loadAverage()}`);
    if (!runs('statement')) return;
    // The statement of the misspelled-title scenario, as the service sends it (its parameters too), once per title
    // under EXPLAIN ANALYZE: its execution time (noisy under load) and the buffers it touches (not). The service
    // runs in this process for it, on the same database and data directory, to capture the statements.
    db ??= await reopen();
    // Its log at error: a kept database lists every earlier run's data directory in a warning at each start.
    const config = loadConfig({ PORT: '0', ...serviceEnv, LOG_LEVEL: 'error' }, { dataDir, databaseUrl: url });
    const app = await startApp(config, { db });
    base = app.url;
    const statements: { sql: string; params: unknown[] }[] = [];
    const query = db.query.bind(db);
    db.query = (async (sql: string, params?: unknown[], o?: { prepared?: boolean }) => {
      if (sql.includes('dcs_search_typo_query')) statements.push({ sql, params: params ?? [] });
      return query(sql, params, o);
    }) as Database['query'];
    for (const q of misspelled) await gql(SEARCH, { q }, userKey);
    db.query = query;
    const plans: { ms: number; buffers: number }[] = [];
    for (const st of statements) {
      const [row] = await db.query<Record<string, any>>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${st.sql}`,
        st.params,
        {
          prepared: false,
        },
      );
      const plan = (row!['QUERY PLAN'] as any[])[0];
      plans.push({
        ms: plan['Execution Time'],
        buffers: plan.Plan['Shared Hit Blocks'] + plan.Plan['Shared Read Blocks'],
      });
    }
    const ms = plans.map((p) => p.ms).sort((a, b) => a - b);
    const buffers = plans.map((p) => p.buffers).sort((a, b) => a - b);
    console.log(
      `misspelled-title statement (EXPLAIN ANALYZE, ${plans.length} titles): execution p50 ${percentile(ms, 50).toFixed(1)} ms, max ${ms.at(-1)?.toFixed(1)} ms; buffers p50 ${percentile(buffers, 50)}, max ${buffers.at(-1)}`,
    );
    await app.close();
  } finally {
    if (service) await stopService(service).catch(() => {});
    await db?.close().catch(() => {});
    await drop();
  }
}

// Run when started as a script (bench:search), not when imported for its seed.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
