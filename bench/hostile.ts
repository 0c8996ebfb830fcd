// `npm run bench:hostile`: ordinary clients beside hostile ones. Seeds a catalogue (bench/seed.ts) plus the rows the
// attacks feed on — a category of downloads with 100 versions each, and one of downloads with 108 KB descriptions —
// starts the service as a child process (`npm start`'s code path) and runs two phases of --seconds (60) each:
//   1. ordinary: --connections (32) keep-alive clients (autocannon) reading single downloads, pages, comments and
//      GraphQL lists, each request on a random row with the key of one of 32 ordinary guest keys;
//   2. hostile: the same ordinary clients plus --hostile (4) clients that each loop over the attacks of the safety
//      review — three levels of version lists under a 10-row page, aliases over large text fields, 5000-deep selections and
//      list values, malformed multipart bodies (no header colon, an empty header before a cut part, a 100 KB header
//      line), a read-only key uploading 2 MiB, a forged cursor — with a guest key holding every scope.
// It prints, per phase, the ordinary clients' p50/p99 and 5xx, then the ratio of the p99s (target < 3), the peak RSS
// of the service and of each PostgreSQL backend of the bench database (target < 500 MB), how every attack was
// answered, and whether the service is still up. `--attacks <regex>` keeps the attacks whose names match.
// `--database-url postgres://…` runs on a fresh database on that server (the target setting); without it, on the
// embedded database.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { openDatabase } from '../src/db/client.js';
import { seed, sizeFor } from './seed.js';
import { SERVICE_ENV, serviceArgs } from './service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    connections: { type: 'string', default: '32' },
    hostile: { type: 'string', default: '4' },
    downloads: { type: 'string', default: '20000' },
    attacks: { type: 'string' },
    'database-url': { type: 'string' },
    /** Node's flags for the service process, e.g. "--max-old-space-size=256" (space-separated). */
    'node-flags': { type: 'string', default: '' },
  },
});
const SECONDS = Number(opts.seconds);
const CONNECTIONS = Number(opts.connections);
const HOSTILE = Number(opts.hostile);
const DOWNLOADS = Number(opts.downloads);
for (const [name, n] of Object.entries({
  seconds: SECONDS,
  connections: CONNECTIONS,
  hostile: HOSTILE,
  downloads: DOWNLOADS,
})) {
  if (!Number.isInteger(n) || n < 1) {
    console.error(`--${name} takes a whole number of at least 1.`);
    process.exit(2);
  }
}
const KEY = 'dm_hostile_super_key_0000000000000000000000000000';
const PORT = 42_000 + Math.floor(Math.random() * 1000);
const BASE = `http://127.0.0.1:${PORT}`;
const VERSIONS_PER_DOWNLOAD = 100;
const BIG_DESCRIPTION = 108 * 1024;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-hostile-'));
const dataDir = path.join(dir, 'data');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resident memory of a process in MB (VmRSS), and the part of it that is its own (RssAnon: not shared buffers). */
function memoryOf(pid: number): { rss: number; anon: number } {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
    return { rss: kb('VmRSS') / 1024, anon: kb('RssAnon') / 1024 };
  } catch {
    return { rss: 0, anon: 0 };
  }
}

// ── the attacks ──────────────────────────────────────────────────────────────────────────────────────────────

interface Attack {
  name: string;
  send(): Promise<string>;
}

function attacks(
  ids: { versionsCategory: number; bigTextCategory: number; versionId: number },
  guestKey: string,
  readOnlyKey: string,
): Attack[] {
  const gql = (key: string, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    fetch(`${BASE}/graphql`, {
      method: 'POST',
      headers: { ...headers, 'Forum-Api-Key': key },
      body,
      signal: AbortSignal.timeout(30_000),
    });
  const json = (query: string) => JSON.stringify({ query });
  const status = async (res: Promise<Response>) => {
    try {
      const r = await res;
      const text = await r.text();
      const code = /"code":"([^"]+)"/.exec(text)?.[1];
      return `${r.status}${code ? ` ${code}` : ''}`;
    } catch (err) {
      return `no answer (${(err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name})`;
    }
  };
  const deep = (n: number) => `{ ${'viewer { '.repeat(1)}${'a { '.repeat(n)}b${' }'.repeat(n)} }`;
  const multipart = (tail: string) => {
    const boundary = 'hostileboundary';
    const operations = JSON.stringify({
      query: 'mutation($f: Upload) { createFile(input: { versionId: 1, file: $f }) { file { fileId } } }',
      variables: { f: null },
    });
    return {
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      body:
        `--${boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${operations}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="map"\r\n\r\n{}\r\n--${boundary}\r\n${tail}`,
    };
  };
  const malformed = (name: string, tail: string): Attack => ({
    name,
    send: () => {
      const m = multipart(tail);
      return status(gql(guestKey, m.body, m.headers));
    },
  });
  const uploadBody = () => {
    const boundary = 'readonlyboundary';
    const operations = JSON.stringify({
      query: 'mutation($f: Upload) { createFile(input: { versionId: 1, file: $f }) { file { fileId } } }',
      variables: { f: null },
    });
    return {
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n${operations}\r\n` +
            `--${boundary}\r\nContent-Disposition: form-data; name="map"\r\n\r\n{"0":["variables.f"]}\r\n` +
            `--${boundary}\r\nContent-Disposition: form-data; name="0"; filename="x.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
        ),
        Buffer.alloc(2 * 1024 * 1024, 7),
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]),
    };
  };
  return [
    // Three levels of versions under a 10-row page: 10 × 100 × 100 × 100 rows where lists are not bounded.
    {
      name: 'nested version lists',
      send: () =>
        status(
          gql(
            guestKey,
            json(
              `{ downloads(perPage: 10, categoryId: ${ids.versionsCategory}) { nodes { versions { download { versions { download { versions { versionId } } } } } } } }`,
            ),
          ),
        ),
    },
    {
      name: '30 aliases over 20 large descriptions',
      send: () =>
        status(
          gql(
            guestKey,
            json(
              `{ ${Array.from({ length: 30 }, (_, i) => `a${i}: downloads(perPage: 20, categoryId: ${ids.bigTextCategory}) { nodes { description } }`).join(' ')} }`,
            ),
          ),
        ),
    },
    {
      name: 'large text under nested lists',
      send: () =>
        status(
          gql(
            guestKey,
            json(
              `{ downloads(perPage: 100, categoryId: ${ids.bigTextCategory}) { nodes { description versions { download { description versions { download { description } } } } } } }`,
            ),
          ),
        ),
    },
    { name: '5000-deep selections', send: () => status(gql(guestKey, json(deep(5000)))) },
    {
      name: '5000-deep list value',
      send: () =>
        status(
          gql(guestKey, json(`{ downloads(categoryId: ${'['.repeat(5000)}1${']'.repeat(5000)}) { nodes { title } } }`)),
        ),
    },
    {
      name: '5000-deep inline fragments',
      send: () =>
        status(gql(guestKey, json(`{ ${'... on Query { '.repeat(5000)}viewer { userId }${' }'.repeat(5000)} }`))),
    },
    malformed('multipart: a header without a colon', 'no colon here\r\n\r\nxx'),
    malformed(
      'multipart: an empty header before a cut part',
      '\r\n\r\nContent-Disposition: form-data; name="0"; filename="a"\r\n\r\nabc',
    ),
    malformed(
      'multipart: a 100 KB header line',
      `Content-Disposition: form-data; name="0"; filename="${'h'.repeat(100 * 1024)}"\r\n\r\nabc`,
    ),
    {
      name: 'read-only key uploading 2 MiB',
      send: () => {
        const u = uploadBody();
        return status(gql(readOnlyKey, u.body as unknown as string, u.headers));
      },
    },
    {
      name: 'forged cursor',
      send: () =>
        status(
          gql(
            guestKey,
            json(
              `{ downloadsConnection(first: 5, after: "${Buffer.from('{"l":"downloadsConnection","o":"title","v":"x"}').toString('base64url')}") { edges { node { title } } } }`,
            ),
          ),
        ),
    },
  ];
}

// ── the run ──────────────────────────────────────────────────────────────────────────────────────────────────

async function main() {
  fs.mkdirSync(dataDir, { recursive: true });
  const serverUrl = opts['database-url'];
  const dbName = `dcs_hostile_${process.pid}`;
  let databaseUrl: string | undefined;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: serverUrl });
    await c.connect();
    try {
      return await c.query(sql);
    } finally {
      await c.end();
    }
  };
  if (serverUrl) {
    await admin(`CREATE DATABASE "${dbName}"`);
    const url = new URL(serverUrl);
    url.pathname = `/${dbName}`;
    databaseUrl = url.toString();
  }
  let service: ChildProcess | undefined;
  try {
    console.log(
      `Seeding ${DOWNLOADS.toLocaleString('en')} downloads, plus 100 with ${VERSIONS_PER_DOWNLOAD} versions each and 20 with ${BIG_DESCRIPTION / 1024} KB descriptions …`,
    );
    const db = await openDatabase(databaseUrl ? { url: databaseUrl } : { pgliteDir: path.join(dataDir, 'db') });
    const seeded = await seed(db, KEY, sizeFor(DOWNLOADS));
    const ids = await db.session(async (s) => {
      const one = async (sql: string) => Number((await s.query<{ id: number }>(sql))[0]!.id);
      const versionsCategory = await one(
        `INSERT INTO category (title, "displayOrder") VALUES ('Many versions', 0) RETURNING id`,
      );
      const bigTextCategory = await one(
        `INSERT INTO category (title, "displayOrder") VALUES ('Large text', 0) RETURNING id`,
      );
      await s.exec(`INSERT INTO download ("categoryId", "userId", title, "tagLine", description, state)
                    SELECT ${versionsCategory}, 1, 'Versions ' || g, '', 'many versions', 'visible' FROM generate_series(1, 100) g`);
      await s.exec(`INSERT INTO version ("downloadId", "versionString")
                    SELECT d.id, '1.' || n FROM download d, generate_series(1, ${VERSIONS_PER_DOWNLOAD}) n WHERE d."categoryId" = ${versionsCategory}`);
      await s.exec(`INSERT INTO download ("categoryId", "userId", title, "tagLine", description, state)
                    SELECT ${bigTextCategory}, 1, 'Large ' || g, '', repeat('Lorem ipsum dolor sit amet. ', ${Math.ceil(BIG_DESCRIPTION / 28)}), 'visible'
                    FROM generate_series(1, 20) g`);
      await s.exec(
        `INSERT INTO version ("downloadId", "versionString") SELECT id, '1.0' FROM download WHERE "categoryId" = ${bigTextCategory}`,
      );
      await s.exec(`UPDATE download d SET "currentVersionId" = (SELECT max(v.id) FROM version v WHERE v."downloadId" = d.id)
                    WHERE d."categoryId" IN (${versionsCategory}, ${bigTextCategory})`);
      await s.exec('ANALYZE');
      return { versionsCategory, bigTextCategory, versionId: seeded.versionId };
    });
    await db.close();

    const env: Record<string, string> = {
      ...SERVICE_ENV,
      DATA_DIR: dataDir,
      PORT: String(PORT),
      HOST: '127.0.0.1',
      DM_BOOTSTRAP_KEY: KEY,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '0',
      RATE_LIMIT_SUPER_PER_MINUTE: '0',
      NODE_ENV: 'production',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    };
    service = spawn(process.execPath, serviceArgs(opts['node-flags'].split(/\s+/).filter(Boolean)), {
      cwd: root,
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, ...env },
    });
    let exited: string | null = null;
    service.on('exit', (code, signal) => {
      exited = `exited (code ${code}, signal ${signal})`;
    });
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${BASE}/readyz`)).ok) break;
      } catch {
        /* starting */
      }
      if (i > 600 || exited) throw new Error(`the service did not start${exited ? `: ${exited}` : ''}`);
      await sleep(100);
    }
    const pid = service.pid!;
    const superGql = async (query: string) => {
      const res = await fetch(`${BASE}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'Forum-Api-Key': KEY },
        body: JSON.stringify({ query }),
      });
      const body = (await res.json()) as { data?: any; errors?: unknown };
      if (body.errors) throw new Error(JSON.stringify(body.errors));
      return body.data;
    };
    const guestKey = (await superGql('mutation { createApiKey(input: { type: GUEST, scopes: ["all"] }) { key } }'))
      .createApiKey.key as string;
    const readOnlyKey = (
      await superGql('mutation { createApiKey(input: { type: GUEST, scopes: ["mc_dm_download:read"] }) { key } }')
    ).createApiKey.key as string;

    // Ordinary traffic: every request on a random visible row of the seeded catalogue.
    const visibleDownload = () => {
      for (;;) {
        const g = 1 + Math.floor(Math.random() * DOWNLOADS);
        if (g % 50 && g % 97) return g;
      }
    };
    const leafCategory = () => 51 + Math.floor(Math.random() * 150);
    // Each ordinary request carries the key of one of CONNECTIONS ordinary clients, picked at random: the service's
    // fair shares and limits are per key, and ordinary traffic is many users, not one.
    const ordinaryKeys: string[] = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      ordinaryKeys.push(
        (await superGql('mutation { createApiKey(input: { type: GUEST, scopes: ["all"] }) { key } }')).createApiKey
          .key as string,
      );
    }
    const keyed = (r: autocannon.Request) => ({
      ...r,
      headers: { ...r.headers, 'forum-api-key': ordinaryKeys[Math.floor(Math.random() * ordinaryKeys.length)]! },
    });
    const requests: autocannon.Request[] = [
      {
        method: 'GET',
        setupRequest: (r) => keyed({ ...r, path: `/api/mc-dm-downloads/${visibleDownload()}/?with=full` }),
      },
      {
        method: 'GET',
        setupRequest: (r) => keyed({ ...r, path: `/api/mc-dm-downloads/?category_id=${leafCategory()}&per_page=20` }),
      },
      {
        method: 'GET',
        setupRequest: (r) => keyed({ ...r, path: `/api/mc-dm-comments/?download_id=${visibleDownload()}` }),
      },
      {
        method: 'POST',
        path: '/graphql',
        headers: { 'content-type': 'application/json' },
        setupRequest: (r) =>
          keyed({
            ...r,
            body: JSON.stringify({
              query:
                'query($c: Int) { downloads(categoryId: $c, perPage: 20) { nodes { downloadId title owner { username } } } }',
              variables: { c: leafCategory() },
            }),
          }),
      },
      {
        method: 'POST',
        path: '/graphql',
        headers: { 'content-type': 'application/json' },
        setupRequest: (r) =>
          keyed({
            ...r,
            body: JSON.stringify({
              query: 'query($d: Int!) { download(downloadId: $d) { title currentVersion { versionString } } }',
              variables: { d: visibleDownload() },
            }),
          }),
      },
    ];
    const ordinary = (seconds: number) =>
      new Promise<autocannon.Result>((resolve, reject) =>
        autocannon({ url: BASE, connections: CONNECTIONS, duration: seconds, requests, timeout: 30 }, (err, res) =>
          err ? reject(err) : resolve(res),
        ),
      );

    // Memory: the service, and each PostgreSQL backend serving the bench database, sampled every 100 ms.
    const peak = { service: 0, backend: 0, backendAnon: 0, stall: 0, heapUsed: 0, heapTotal: 0, external: 0 };
    let backendPids: number[] = [];
    const refreshBackends = async () => {
      if (!serverUrl) return;
      try {
        const r = await admin(`SELECT pid FROM pg_stat_activity WHERE datname = '${dbName}'`);
        // Only processes of this machine that are PostgreSQL's (a server elsewhere has pids that mean nothing here).
        backendPids = r.rows
          .map((row: { pid: number }) => row.pid)
          .filter((p: number) => {
            try {
              return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').startsWith('postgres');
            } catch {
              return false;
            }
          });
      } catch {
        /* the server is busy: keep the last list */
      }
    };
    const sample = () => {
      peak.service = Math.max(peak.service, memoryOf(pid).rss);
      for (const b of backendPids) {
        const m = memoryOf(b);
        peak.backend = Math.max(peak.backend, m.rss);
        peak.backendAnon = Math.max(peak.backendAnon, m.anon);
      }
    };
    const resetPeaks = () => {
      peak.service = 0;
      peak.backend = 0;
      peak.backendAnon = 0;
      peak.stall = 0;
      peak.heapUsed = 0;
      peak.heapTotal = 0;
      peak.external = 0;
    };
    // The longest event-loop stall, from /metrics (prom-client's lag maximum since its last scrape). On the embedded
    // database a statement runs on the service's own thread, so this bounds the longest statement from above.
    const readStall = async () => {
      try {
        const text = await (
          await fetch(`${BASE}/metrics`, { headers: { 'forum-api-key': KEY }, signal: AbortSignal.timeout(5000) })
        ).text();
        const gauge = (name: string) => Number(new RegExp(`^dcs_${name} (\\S+)`, 'm').exec(text)?.[1] ?? 0);
        peak.stall = Math.max(peak.stall, gauge('nodejs_eventloop_lag_max_seconds') * 1000);
        // Where the resident memory is: V8's heap (used, and reserved) and memory outside it (buffers), in MB.
        peak.heapUsed = Math.max(peak.heapUsed, gauge('nodejs_heap_size_used_bytes') / 2 ** 20);
        peak.heapTotal = Math.max(peak.heapTotal, gauge('nodejs_heap_size_total_bytes') / 2 ** 20);
        peak.external = Math.max(peak.external, gauge('nodejs_external_memory_bytes') / 2 ** 20);
      } catch {
        /* busy or gone: the next scrape sees the same maximum */
      }
    };
    await refreshBackends();
    const sampler = setInterval(sample, 100);
    const backendTimer = setInterval(() => {
      void refreshBackends();
      void readStall();
    }, 1000);

    const fiveXx = (r: autocannon.Result) =>
      Object.entries(r.statusCodeStats ?? {})
        .filter(([code]) => Number(code) >= 500)
        .reduce((n, [, s]) => n + (s as { count: number }).count, 0);

    console.log('Warming up (5 s) …');
    await ordinary(5);

    console.log(`Phase 1: ${CONNECTIONS} ordinary clients for ${SECONDS} s …`);
    resetPeaks();
    const quiet = await ordinary(SECONDS);
    await readStall();
    const quietPeak = { ...peak };

    console.log(`Phase 2: ${CONNECTIONS} ordinary clients and ${HOSTILE} hostile ones for ${SECONDS} s …`);
    resetPeaks();
    const list = attacks(ids, guestKey, readOnlyKey).filter(
      (a) => !opts.attacks || new RegExp(opts.attacks).test(a.name),
    );
    if (!list.length) throw new Error(`--attacks ${opts.attacks} names no attack`);
    const answers = new Map<string, Map<string, number>>();
    const until = Date.now() + SECONDS * 1000;
    const hostileLoop = async (offset: number) => {
      for (let i = offset; Date.now() < until && !exited; i++) {
        const attack = list[i % list.length]!;
        const answer = await attack.send();
        const byAnswer = answers.get(attack.name) ?? new Map<string, number>();
        byAnswer.set(answer, (byAnswer.get(answer) ?? 0) + 1);
        answers.set(attack.name, byAnswer);
      }
    };
    const [loud] = await Promise.all([
      ordinary(SECONDS),
      ...Array.from({ length: HOSTILE }, (_, i) => hostileLoop(i * 3)),
    ]);
    await readStall();
    const loudPeak = { ...peak };
    clearInterval(sampler);
    clearInterval(backendTimer);

    let alive = false;
    try {
      alive = (await fetch(`${BASE}/healthz`)).ok;
    } catch {
      /* down */
    }

    const row = (name: string, r: autocannon.Result) =>
      `  ${name.padEnd(22)} ${String(Math.round(r.requests.average)).padStart(6)} req/s   p50 ${String(r.latency.p50).padStart(4)} ms   p99 ${String(r.latency.p99).padStart(5)} ms   5xx ${fiveXx(r)}   errors ${r.errors + r.timeouts}`;
    console.log(
      `\nHostile mix on ${serverUrl ? 'a PostgreSQL server' : 'the embedded database'}: ${DOWNLOADS.toLocaleString('en')} downloads, ${SECONDS} s per phase, ${os.cpus().length} CPUs, Node ${process.version}`,
    );
    console.log('Ordinary clients:');
    console.log(row('alone', quiet));
    console.log(row(`beside ${HOSTILE} hostile`, loud));
    const ratio = loud.latency.p99 / Math.max(1, quiet.latency.p99);
    console.log(`  p99 beside hostile clients ÷ alone: ${ratio.toFixed(2)} (target < 3)`);
    const mem = (p: typeof peak) =>
      `service ${p.service.toFixed(0)} MB${serverUrl ? `, largest PostgreSQL backend ${p.backend.toFixed(0)} MB (of which its own ${p.backendAnon.toFixed(0)} MB, the rest shared buffers)` : ''}`;
    const heap = (p: typeof peak) =>
      `V8 heap used ${p.heapUsed.toFixed(0)} MB of ${p.heapTotal.toFixed(0)} MB, outside the heap ${p.external.toFixed(0)} MB (peaks, sampled each second)`;
    console.log(`Peak RSS alone: ${mem(quietPeak)}; ${heap(quietPeak)}`);
    console.log(`Peak RSS beside hostile clients: ${mem(loudPeak)} (target < 500 MB each); ${heap(loudPeak)}`);
    console.log(
      `Longest event-loop stall: alone ${quietPeak.stall.toFixed(0)} ms, beside hostile clients ${loudPeak.stall.toFixed(0)} ms${serverUrl ? '' : ' (the embedded database runs each statement on this thread: target < 1000 ms)'}`,
    );
    console.log('Attacks, by answer:');
    for (const [name, byAnswer] of answers) {
      console.log(`  ${name}: ${[...byAnswer].map(([a, n]) => `${n}× ${a}`).join(', ')}`);
    }
    console.log(`Service after the run: ${exited ?? (alive ? 'up (/healthz 200)' : 'not answering')}`);
    const met =
      ratio < 3 &&
      fiveXx(loud) === 0 &&
      loudPeak.service < 500 &&
      loudPeak.backend < 500 &&
      alive &&
      (serverUrl !== undefined || loudPeak.stall < 1000);
    console.log(met ? 'All targets met.' : 'Targets NOT met.');
    const results = {
      date: new Date().toISOString(),
      database: serverUrl ? 'postgres' : 'pglite',
      downloads: DOWNLOADS,
      seconds: SECONDS,
      connections: CONNECTIONS,
      hostile: HOSTILE,
      alone: { rps: quiet.requests.average, p50: quiet.latency.p50, p99: quiet.latency.p99, fiveXx: fiveXx(quiet) },
      beside: { rps: loud.requests.average, p50: loud.latency.p50, p99: loud.latency.p99, fiveXx: fiveXx(loud) },
      ratio,
      peakAlone: quietPeak,
      peakBeside: loudPeak,
      alive,
      attacks: Object.fromEntries([...answers].map(([n, m]) => [n, Object.fromEntries(m)])),
      loadAverage: os.loadavg(),
    };
    fs.mkdirSync(path.join(root, 'bench', 'results'), { recursive: true });
    fs.writeFileSync(
      path.join(root, 'bench', 'results', `hostile-${results.date.replace(/[:.]/g, '-')}.json`),
      JSON.stringify(results, null, 2),
    );
    process.exitCode = met ? 0 : 1;
  } finally {
    if (service && service.exitCode === null && service.signalCode === null) {
      service.kill('SIGTERM');
      await Promise.race([new Promise((r) => service!.once('exit', r)), sleep(20_000)]);
      if (service.exitCode === null && service.signalCode === null) service.kill('SIGKILL');
    }
    if (serverUrl) await admin(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
