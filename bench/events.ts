// `npm run bench:events`: how fast a committed change reaches a webhook. Starts the built service (`npm run build`
// first; `node dist/src/main.js`) on a fresh data directory (or --database-url), with a local receiver as the
// webhook; posts comments at --rate writes a second for --seconds, and for each one measures from the write's answer
// (its transaction has committed) to the receiver getting the delivery: an upper bound of commit → first attempt.
// Also prints the service's own histogram (dcs_webhook_first_attempt_seconds: outbox row → attempt start).
//
//   npm run bench:events                                   # embedded PGlite, 50 writes/s for 20 s
//   npm run bench:events -- --rate 100 --seconds 30
//   npm run bench:events -- --database-url postgres://postgres@127.0.0.1:5432/test   # a fresh database made there
//                                                                                   # for the run, then dropped
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';

const { values: opts } = parseArgs({
  options: {
    rate: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '20' },
    'database-url': { type: 'string' },
    /** The same writes without a webhook: the baseline the delivery work is compared with. */
    'no-webhook': { type: 'boolean', default: false },
  },
});
const rate = Number(opts.rate);
const seconds = Number(opts.seconds);
const root = path.resolve(import.meta.dirname, '..');
const KEY = 'dm_bench_events_key_0000000000000000000000000';

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};

async function main() {
  const received = new Map<number, number>();
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const at = performance.now();
      const id = (JSON.parse(body) as { data: { comment_id: number } }).data.comment_id;
      if (!received.has(id)) received.set(id, at);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/hook`;

  // A fresh database on the server, never the one named: the service migrates what it starts on.
  let databaseUrl: string | undefined;
  let dropDatabase = async () => {};
  if (opts['database-url']) {
    const name = `bench_events_${process.pid}_${Date.now()}`;
    const admin = new pg.Client({ connectionString: opts['database-url'] });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${name}"`);
    await admin.end();
    const u = new URL(opts['database-url']);
    u.pathname = `/${name}`;
    databaseUrl = u.toString();
    dropDatabase = async () => {
      const c = new pg.Client({ connectionString: opts['database-url'] });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    };
  }
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-bench-events-'));
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      DM_BOOTSTRAP_KEY: KEY,
      LOG_LEVEL: 'warn',
      EXTERNAL_URL_ALLOW_PRIVATE: '1',
      COMMENT_FLOOD_SECONDS: '0',
      RATE_LIMIT_PER_MINUTE: '0',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    for (let i = 0; ; i++) {
      const ok = await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (i > 3000) throw new Error('the service did not start');
      await sleep(10);
    }
    const gql = async (query: string, variables: Record<string, unknown> = {}) => {
      const r = (await (
        await fetch(`${base}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'Forum-Api-Key': KEY },
          body: JSON.stringify({ query, variables }),
        })
      ).json()) as { data: any; errors?: unknown[] };
      if (r.errors) throw new Error(JSON.stringify(r.errors));
      return r.data;
    };
    const suffix = Date.now().toString(36);
    const userId = (
      await gql(`mutation($u: String!) { createUser(input: { username: $u }) { user { userId } } }`, {
        u: `bench${suffix}`,
      })
    ).createUser.user.userId;
    const categoryId = (await gql(`mutation { createCategory(input: { title: "Bench" }) { category { categoryId } } }`))
      .createCategory.category.categoryId;
    const downloadId = (
      await fetch(`${base}/api/mc-dm-downloads/`, {
        method: 'POST',
        headers: {
          'Forum-Api-Key': KEY,
          'Forum-Api-User': String(userId),
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: `category_id=${categoryId}&title=Bench`,
      }).then((r) => r.json() as Promise<{ download: { download_id: number } }>)
    ).download.download_id;
    if (!opts['no-webhook'])
      await gql(`mutation($i: CreateWebhookInput!) { createWebhook(input: $i) { secret } }`, {
        i: { url: hookUrl, events: ['comment.posted'], downloadId },
      });

    const committed = new Map<number, number>();
    const refused: string[] = [];
    const writes: Promise<void>[] = [];
    const total = rate * seconds;
    const started = performance.now();
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      writes.push(
        fetch(`${base}/api/mc-dm-comments/`, {
          method: 'POST',
          headers: {
            'Forum-Api-Key': KEY,
            'Forum-Api-User': String(userId),
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: `download_id=${downloadId}&message=bench+${i}`,
        })
          .then((r) => r.json() as Promise<{ comment?: { comment_id: number } }>)
          .then((b) => {
            if (b.comment) committed.set(b.comment.comment_id, performance.now());
            else refused.push(JSON.stringify(b).slice(0, 200));
          }),
      );
    }
    await Promise.all(writes);
    const achieved = total / ((performance.now() - started) / 1000);
    for (let i = 0; i < 500 && !opts['no-webhook'] && received.size < committed.size; i++) await sleep(20);
    const latencies = [...committed].map(([id, at]) => (received.get(id) ?? Number.NaN) - at).filter(Number.isFinite);
    const metrics = await (await fetch(`${base}/metrics`, { headers: { 'Forum-Api-Key': KEY } })).text();
    const sum = Number(/^dcs_webhook_first_attempt_seconds_sum ([\d.e+-]+)/m.exec(metrics)?.[1]);
    const count = Number(/^dcs_webhook_first_attempt_seconds_count (\d+)/m.exec(metrics)?.[1]);
    const under = (le: string) =>
      Number(new RegExp(`^dcs_webhook_first_attempt_seconds_bucket\\{le="${le}"\\} (\\d+)`, 'm').exec(metrics)?.[1]);
    const db = opts['database-url'] ? 'PostgreSQL' : 'PGlite';
    console.log(
      `bench:events (${db}${opts['no-webhook'] ? ', no webhook' : ''}): ${total} comments at ${rate}/s asked, ${achieved.toFixed(1)}/s achieved`,
    );
    console.log(`  delivered ${latencies.length} of ${committed.size} committed; ${refused.length} writes refused`);
    if (refused.length) console.log(`  first refusal: ${refused[0]}`);
    console.log(
      `  write answered → receiver got it: p50 ${quantile(latencies, 0.5).toFixed(1)} ms, p90 ${quantile(latencies, 0.9).toFixed(1)} ms, p99 ${quantile(latencies, 0.99).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`,
    );
    console.log(
      `  service histogram (outbox row → attempt start): mean ${((sum / count) * 1000).toFixed(1)} ms over ${count}; ≤0.1 s ${under('0.1')}, ≤0.25 s ${under('0.25')}, ≤0.5 s ${under('0.5')}, ≤1 s ${under('1')}, ≤2 s ${under('2')}`,
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    receiver.closeAllConnections();
    receiver.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    await dropDatabase();
  }
}

await main();
