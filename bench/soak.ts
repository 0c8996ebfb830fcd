// `npm run bench:soak`: the service under mixed load with attacks interleaved, for a minute. Starts the service as a
// child process (`npm start`'s code path) on a fresh embedded database (or --database-url), seeds a small catalogue,
// then for --seconds (60) runs at once:
//   - autocannon, --connections (32) keep-alive connections cycling through reads and writes (REST and GraphQL), each
//     sending its next request when the last is answered (or at most --rate requests/s in all);
//   - a probe: one client, in its own process, doing a trivial read (GET one category) every 20 ms, whose latencies
//     are reported;
//   - attacks, each in its own loop: GraphQL alias bombs, deeply nested queries, uploads over MAX_UPLOAD_BYTES
//     (set to 8 MiB here), uploads with a read-only key, sockets that send a body one byte a second and sockets that
//     send their headers one byte a second (16 of each kept open).
// Then it waits for the server to settle and prints: the probe's p50/p99, 5xx answers (load, probe and attacks),
// how the attacks were answered, files left in DATA_DIR/files/.tmp, the server's CPU time and its RSS at start, peak
// and end. --cpu-prof also prints where the server's CPU time went (self time by package and function).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { summarize, type CpuProfile } from './cpu-profile.js';
import { SERVICE_ENV, serviceArgs } from './service.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    connections: { type: 'string', default: '32' },
    'database-url': { type: 'string' },
    settle: { type: 'string', default: '15' },
    rate: { type: 'string' },
    rounds: { type: 'string', default: '1' },
    'cpu-prof': { type: 'boolean', default: false },
    gc: { type: 'boolean', default: false },
  },
});
const SECONDS = Number(opts.seconds);
const CONNECTIONS = Number(opts.connections);
/** --rate N: the load sends at most N requests a second in all (autocannon's overallRate); default: as fast as answered. */
const RATE = opts.rate ? Number(opts.rate) : undefined;
/** --rounds N: repeat the minute N times on the same server, to tell a leak (RSS keeps rising) from a plateau. */
const ROUNDS = Number(opts.rounds);
const KEY = 'dm_soak_super_key_00000000000000000000000000000';
const PORT = 41_000 + Math.floor(Math.random() * 1000);
const BASE = `http://127.0.0.1:${PORT}`;
const UPLOAD_LIMIT = 8 * 1024 * 1024;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-soak-'));
const dataDir = path.join(dir, 'data');

const rssMb = (pid: number) => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
  } catch {
    return 0;
  }
};
/** CPU seconds (user + system) the process has used, from /proc/<pid>/stat. */
const cpuSeconds = (pid: number) => {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

async function gql(query: string, variables: Record<string, unknown> = {}, asUser?: number) {
  const res = await fetch(`${BASE}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'Forum-Api-Key': KEY,
      ...(asUser ? { 'Forum-Api-User': String(asUser) } : {}),
    },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: any; errors?: unknown[] };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

/** The server's memory as its /metrics reports it (V8 heap used and sized, memory outside the heap), in MB. */
async function memory(): Promise<string> {
  const text = await (await fetch(`${BASE}/metrics`, { headers: { 'Forum-Api-Key': KEY } })).text();
  const mb = (name: string) =>
    (Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) / 1024 / 1024).toFixed(0);
  const space = (name: string) => mb(`dcs_nodejs_heap_space_size_total_bytes\\{space="${name}"\\}`);
  return `heap used ${mb('dcs_nodejs_heap_size_used_bytes')} of ${mb('dcs_nodejs_heap_size_total_bytes')} MB (young ${space('new')}, old ${space('old')}), external ${mb('dcs_nodejs_external_memory_bytes')} MB`;
}

/** What the attacks got back, by attack and status (or "closed" for a socket the server ended). */
const answers = new Map<string, Map<string, number>>();
const count = (attack: string, outcome: string) => {
  const m = answers.get(attack) ?? new Map<string, number>();
  m.set(outcome, (m.get(outcome) ?? 0) + 1);
  answers.set(attack, m);
};
let fiveHundreds = 0;

async function attackLoop(name: string, until: number, once: () => Promise<string>, pauseMs: number) {
  while (Date.now() < until) {
    const outcome = await once().catch((err: Error) => `error ${(err as NodeJS.ErrnoException).code ?? err.message}`);
    if (/^5\d\d/.test(outcome)) fiveHundreds++;
    count(name, outcome);
    await sleep(pauseMs);
  }
}

async function post(pathname: string, body: BodyInit, headers: Record<string, string>): Promise<string> {
  const res = await fetch(`${BASE}${pathname}`, {
    method: 'POST',
    body,
    headers: { 'Forum-Api-Key': KEY, ...headers },
  });
  const text = await res.text();
  const code = /"code":"([^"]+)"/.exec(text)?.[1] ?? '';
  return `${res.status} ${code}`.trim();
}

function multipart(fields: [string, string][], file: { name: string; size: number }): { body: Blob; type: string } {
  const boundary = `soak${Math.random().toString(16).slice(2)}`;
  const parts: Buffer[] = [];
  for (const [k, v] of fields)
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${file.name}"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    ),
  );
  parts.push(Buffer.alloc(file.size, 7), Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: new Blob([Buffer.concat(parts)]), type: `multipart/form-data; boundary=${boundary}` };
}

/** A socket that sends `head`, then one byte of `drip` a second until the server closes it; resolves with how long it stayed open. */
function slowSocket(head: string, drip: string): Promise<string> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(PORT, '127.0.0.1', () => socket.write(head));
    let i = 0;
    let answer = '';
    const timer = setInterval(() => {
      if (socket.writable) socket.write(drip[i++ % drip.length]!);
    }, 1000);
    socket.on('data', (d) => {
      answer ||= d.toString().split('\r\n')[0]!;
    });
    const done = () => {
      clearInterval(timer);
      const held = Math.round((Date.now() - started) / 1000);
      resolve(`${answer ? answer.replace('HTTP/1.1 ', '') : 'closed'} after ≤${Math.ceil(held / 5) * 5}s`);
    };
    socket.on('close', done);
    socket.on('error', () => {});
  });
}

async function main() {
  fs.mkdirSync(dataDir, { recursive: true });
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    PORT: String(PORT),
    HOST: '127.0.0.1',
    DM_BOOTSTRAP_KEY: KEY,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '0',
    RATE_LIMIT_SUPER_PER_MINUTE: '0',
    COMMENT_FLOOD_SECONDS: '0',
    MAX_UPLOAD_BYTES: String(UPLOAD_LIMIT),
  };
  // --database-url names a server: the soak runs on a fresh database there, dropped at the end.
  const serverUrl = opts['database-url'];
  const dbName = `dcs_soak_${process.pid}`;
  const onServer = async (sql: string) => {
    const c = new pg.Client({ connectionString: serverUrl });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  if (serverUrl) {
    await onServer(`CREATE DATABASE "${dbName}"`);
    const url = new URL(serverUrl);
    url.pathname = `/${dbName}`;
    env.DATABASE_URL = url.toString();
  }
  const profDir = path.join(dir, 'prof');
  // --gc: the service collects garbage on SIGUSR2, so the end of a round also shows what a full collection leaves.
  const gcHook = [
    '--expose-gc',
    '--import',
    'data:text/javascript,process.on("SIGUSR2", () => globalThis.gc({ type: "major", execution: "sync", flavor: "last-resort" }))',
  ];
  const service = spawn(
    process.execPath,
    serviceArgs([...(opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []), ...(opts.gc ? gcHook : [])]),
    { cwd: root, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ...SERVICE_ENV, ...env } },
  );
  try {
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${BASE}/readyz`)).ok) break;
      } catch {
        /* starting */
      }
      if (i > 600) throw new Error('the service did not start');
      await sleep(100);
    }
    const pid = service.pid!;

    // A small catalogue: a user, a category, downloads with comments.
    const user = (await gql('mutation { createUser(input: { username: "soak" }) { user { userId } } }')).createUser.user
      .userId as number;
    const cat = (await gql('mutation { createCategory(input: { title: "Soak" }) { category { categoryId } } }'))
      .createCategory.category.categoryId as number;
    const downloads: { downloadId: number; currentVersionId: number }[] = [];
    for (let i = 0; i < 20; i++) {
      downloads.push(
        (
          await gql(
            'mutation($i: CreateDownloadInput!) { createDownload(input: $i) { download { downloadId currentVersionId } } }',
            { i: { categoryId: cat, title: `Soak ${i}`, description: 'x'.repeat(500) } },
            user,
          )
        ).createDownload.download,
      );
      await gql(
        'mutation($i: CreateCommentInput!) { createComment(input: $i) { comment { commentId } } }',
        { i: { downloadId: downloads[i]!.downloadId, message: 'first' } },
        user,
      );
    }
    const readOnly = (
      await gql(
        'mutation { createApiKey(input: { type: SUPER, scopes: ["mc_dm_download:read", "mc_dm_category:read"] }) { key } }',
      )
    ).createApiKey.key as string;
    const d = downloads[0]!;
    const asUser = { 'Forum-Api-Key': KEY, 'Forum-Api-User': String(user) };
    const form = (o: Record<string, string | number>) =>
      new URLSearchParams(Object.entries(o).map(([k, v]) => [k, String(v)])).toString();
    const requests: autocannon.Request[] = [
      { method: 'GET', path: `/api/mc-dm-downloads/${d.downloadId}/?with=full`, headers: asUser },
      { method: 'GET', path: '/api/mc-dm-downloads/?per_page=20', headers: asUser },
      { method: 'GET', path: `/api/mc-dm-comments/?download_id=${d.downloadId}`, headers: asUser },
      { method: 'GET', path: `/api/mc-dm-files/?version_id=${d.currentVersionId}`, headers: asUser },
      {
        method: 'POST',
        path: '/graphql',
        headers: { ...asUser, 'content-type': 'application/json' },
        body: JSON.stringify({ query: `{ downloads(perPage: 10) { nodes { downloadId title owner { username } } } }` }),
      },
      {
        method: 'PUT',
        path: `/api/mc-dm-downloads/${downloads[1]!.downloadId}/`,
        headers: { ...asUser, 'content-type': 'application/x-www-form-urlencoded' },
        body: form({ tag_line: 'soaked' }),
      },
      {
        method: 'POST',
        path: '/api/mc-dm-comments/',
        headers: { ...asUser, 'content-type': 'application/x-www-form-urlencoded' },
        body: form({ download_id: downloads[2]!.downloadId, message: 'soak comment' }),
      },
    ];

    // Warm up, then take the starting RSS.
    await new Promise<void>((resolve, reject) =>
      autocannon({ url: BASE, connections: 4, duration: 3, requests }, (err) => (err ? reject(err) : resolve())),
    );
    await sleep(2000);
    const rssStart = rssMb(pid);
    const memStart = await memory();
    let rssPeak = rssStart;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, rssMb(pid));
    }, 100);

    for (let round = 1; round <= ROUNDS; round++) {
      answers.clear();
      fiveHundreds = 0;
      const until = Date.now() + SECONDS * 1000;
      const load = new Promise<autocannon.Result>((resolve, reject) =>
        autocannon(
          { url: BASE, connections: CONNECTIONS, duration: SECONDS, requests, ...(RATE ? { overallRate: RATE } : {}) },
          (err, res) => (err ? reject(err) : resolve(res)),
        ),
      );

      // The probe runs in its own process (bench/soak-probe.ts): a client of its own, as a real user would be.
      const probeRun = new Promise<{ latencies: number[]; fiveHundreds: number }>((resolve, reject) => {
        const child = spawn(
          process.execPath,
          [
            '--import',
            'tsx',
            path.join(root, 'bench', 'soak-probe.ts'),
            '--url',
            `${BASE}/api/mc-dm-categories/${cat}/`,
            '--key',
            KEY,
            '--seconds',
            String(SECONDS),
          ],
          { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
        );
        let out = '';
        child.stdout.on('data', (d) => {
          out += d;
        });
        child.on('exit', (code) =>
          code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`the probe exited with ${code}`)),
        );
      });
      const cpuBefore = cpuSeconds(pid);

      const aliasBomb = JSON.stringify({
        query: `{ ${Array.from({ length: 3000 }, (_, i) => `a${i}: viewer { userId }`).join(' ')} }`,
      });
      const deep = JSON.stringify({
        query: `{ ${'categories { nodes { parent { '.repeat(150)}categoryId${' } } }'.repeat(150)} }`,
      });
      const big = multipart([['version_id', String(d.currentVersionId)]], {
        name: 'file',
        size: UPLOAD_LIMIT + 4 * 1024 * 1024,
      });
      const gqlBig = multipart(
        [
          [
            'operations',
            JSON.stringify({
              query: `mutation($f: Upload!) { createFile(input: { versionId: ${d.currentVersionId}, file: $f }) { file { fileId } } }`,
              variables: { f: null },
            }),
          ],
          ['map', JSON.stringify({ 0: ['variables.f'] })],
        ],
        { name: '0', size: UPLOAD_LIMIT + 4 * 1024 * 1024 },
      );
      const attacks = [
        attackLoop(
          'alias bomb (3,000 aliases)',
          until,
          () => post('/graphql', aliasBomb, { 'content-type': 'application/json' }),
          100,
        ),
        attackLoop(
          'deep query (450 levels)',
          until,
          () => post('/graphql', deep, { 'content-type': 'application/json' }),
          100,
        ),
        attackLoop(
          'REST upload over MAX_UPLOAD_BYTES',
          until,
          () => post('/api/mc-dm-files/', big.body, { 'content-type': big.type, 'Forum-Api-User': String(user) }),
          200,
        ),
        attackLoop(
          'GraphQL upload over MAX_UPLOAD_BYTES',
          until,
          () =>
            post('/graphql', gqlBig.body, {
              'content-type': gqlBig.type,
              accept: 'application/graphql-response+json',
              'Forum-Api-User': String(user),
            }),
          200,
        ),
        attackLoop(
          'upload with a read-only key',
          until,
          () =>
            fetch(`${BASE}/api/mc-dm-files/`, {
              method: 'POST',
              body: big.body,
              headers: { 'Forum-Api-Key': readOnly, 'content-type': big.type },
            }).then(async (r) => {
              await r.arrayBuffer();
              return String(r.status);
            }),
          200,
        ),
        ...Array.from({ length: 16 }, () =>
          attackLoop(
            'slow body (1 byte/s)',
            until,
            () =>
              slowSocket(
                `POST /api/mc-dm-comments/ HTTP/1.1\r\nHost: x\r\nForum-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`,
                '{"message":"',
              ),
            0,
          ),
        ),
        ...Array.from({ length: 16 }, () =>
          attackLoop(
            'slow headers (1 byte/s)',
            until,
            () =>
              slowSocket(
                'GET /api/mc-dm-categories/ HTTP/1.1\r\nHost: x\r\n',
                'X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
              ),
            0,
          ),
        ),
      ];

      const result = await load;
      const cpuUsed = cpuSeconds(pid) - cpuBefore;
      const { latencies: probe, fiveHundreds: probe5xx } = await probeRun;
      fiveHundreds += probe5xx;
      await Promise.all(attacks); // the slow sockets end at their deadlines, after the load
      await sleep(Number(opts.settle) * 1000);
      const rssEnd = rssMb(pid);
      const tmpDir = path.join(dataDir, 'files', '.tmp');
      const leftovers = fs.existsSync(tmpDir) ? fs.readdirSync(tmpDir) : [];

      const sorted = [...probe].sort((a, b) => a - b);
      const load5xx = (result as unknown as Record<string, number>)['5xx'] ?? 0;
      console.log(
        `\nSoak round ${round} of ${ROUNDS}: ${SECONDS} s, ${CONNECTIONS} connections of mixed reads and writes${RATE ? ` at ${RATE} requests/s` : ' (closed loop)'}, attacks interleaved, ${opts['database-url'] ? 'PostgreSQL server' : 'embedded PGlite'}; ${os.cpus().length} CPUs (${os.cpus()[0]?.model}), Node ${process.version}`,
      );
      console.log(
        `load: ${result.requests.total} requests (${Math.round(result.requests.average)}/s), latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}, 5xx ${load5xx}, errors ${result.errors}, timeouts ${result.timeouts}`,
      );
      console.log(
        `server CPU during the load: ${cpuUsed.toFixed(1)} s of ${SECONDS} s (${((100 * cpuUsed) / SECONDS).toFixed(0)}% of one core), ${((1000 * cpuUsed) / result.requests.total).toFixed(2)} ms per load request (attacks included)`,
      );
      console.log(
        `trivial read (GET /api/mc-dm-categories/<id>/, one client in its own process, every 20 ms): ${sorted.length} requests, p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, max ${sorted.at(-1)?.toFixed(1)} ms`,
      );
      console.log(`5xx answers: ${load5xx + fiveHundreds} (load ${load5xx}, probe and attacks ${fiveHundreds})`);
      for (const [attack, outcomes] of answers) {
        console.log(
          `  ${attack}: ${[...outcomes]
            .sort((a, b) => b[1] - a[1])
            .map(([o, n]) => `${n} × ${o}`)
            .join(', ')}`,
        );
      }
      console.log(
        `temporary files left in DATA_DIR/files/.tmp: ${leftovers.length}${leftovers.length ? ` (${leftovers.slice(0, 5).join(', ')})` : ''}`,
      );
      console.log(
        `server RSS: start ${rssStart.toFixed(0)} MB, peak ${rssPeak.toFixed(0)} MB, end ${rssEnd.toFixed(0)} MB (${opts.settle} s after round ${round}; end − start ${(rssEnd - rssStart).toFixed(0)} MB)`,
      );
      console.log(`server memory: at start ${memStart}; at the end ${await memory()}`);
      if (opts.gc) {
        process.kill(pid, 'SIGUSR2');
        await sleep(2000);
        console.log(`after a full garbage collection: ${await memory()}, RSS ${rssMb(pid).toFixed(0)} MB`);
      }
    }
    clearInterval(sampler);
  } finally {
    service.kill('SIGTERM');
    await new Promise((r) => service.once('exit', r));
    if (opts['cpu-prof'] && fs.existsSync(profDir)) {
      for (const file of fs.readdirSync(profDir)) {
        const summary = summarize(JSON.parse(fs.readFileSync(path.join(profDir, file), 'utf8')) as CpuProfile);
        console.log(
          `\nServer CPU profile (whole run, start and settling included: ${(summary.totalMs / 1000).toFixed(1)} s sampled), self time by package:`,
        );
        for (const line of summary.packages) console.log(line);
        console.log('\nTop functions by self time:');
        for (const line of summary.functions) console.log(line);
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
    if (serverUrl) await onServer(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
