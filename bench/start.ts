// `npm run bench:start`: how long the service takes from process start to its first answers, on a fresh data
// directory and on a restart of the same one. It builds first (`npm run build`), then each run starts the service
// as `npm start` does after its build step (`node dist/src/main.js`) on a free port, polls /readyz every 10 ms until
// it answers 200, then sends one GraphQL query and one REST request, and stops it with SIGTERM. Prints each run
// (wall-clock ms from spawn; the CPU ms the process had used by its first REST answer, which depends less on what
// else the machine is doing; and the start-up steps the service logs) and the medians.
//
//   npm run bench:start                     # 5 fresh starts and 5 restarts
//   npm run bench:start -- --runs 10
//   npm run bench:start -- --command 'node --import tsx src/main.ts'   # the uncompiled start, for comparison
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cpuMs } from './proc.js';

const { values: opts } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    command: { type: 'string', default: 'node dist/src/main.js' },
  },
});
const root = path.resolve(import.meta.dirname, '..');
const KEY = 'dm_bench_start_key_00000000000000000000000000';
const [cmd, ...args] = opts.command!.split(' ').filter(Boolean);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

interface Run {
  ready: number;
  graphql: number;
  rest: number;
  cpu?: number;
  phases?: Record<string, number>;
}

async function once(dataDir: string): Promise<Run> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t0 = performance.now();
  const child = spawn(cmd!, args, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DM_BOOTSTRAP_KEY: KEY,
    },
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => {
    out += b.toString();
  });
  child.stderr.on('data', (b: Buffer) => {
    out += b.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let ready = 0;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}:\n${out}`);
      if (performance.now() - t0 > 60_000) throw new Error(`not ready after 60 s:\n${out}`);
      const status = await fetch(`${base}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) {
        ready = performance.now() - t0;
        break;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const gql = await fetch(`${base}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Forum-Api-Key': KEY },
      body: JSON.stringify({ query: '{ categories(perPage: 5) { nodes { id title } pagination { total } } }' }),
    });
    if (gql.status !== 200) throw new Error(`GraphQL answered ${gql.status}: ${await gql.text()}`);
    const answer = (await gql.json()) as { errors?: unknown };
    if (answer.errors) throw new Error(`GraphQL answered errors: ${JSON.stringify(answer.errors)}`);
    const graphql = performance.now() - t0;
    const rest = await fetch(`${base}/api/mc-dm-categories/`, { headers: { 'Forum-Api-Key': KEY } });
    if (rest.status !== 200) throw new Error(`REST answered ${rest.status}: ${await rest.text()}`);
    await rest.text();
    const restMs = performance.now() - t0;
    const cpu = cpuMs(child.pid) ?? undefined;
    const listening = out.split('\n').find((l) => l.includes('"msg":"listening"'));
    const phases = listening ? (JSON.parse(listening) as { startup?: Record<string, number> }).startup : undefined;
    return { ready, graphql, rest: restMs, cpu, phases };
  } finally {
    child.kill('SIGTERM');
    const code = await exited;
    if (code !== 0) console.error(`(the service exited with ${code} after SIGTERM)`);
  }
}

const runs = Number(opts.runs);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)]!;
};
const ms = (x: number) => `${Math.round(x)}`.padStart(6);
console.log(
  `${opts.command} — ${runs} fresh starts and ${runs} restarts (ms from spawn; load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')})`,
);
// The build's own command is measured on a build of the current sources (what `npm start` runs first).
if (opts.command === 'node dist/src/main.js')
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' });
console.log(
  'run       readyz graphql   rest    CPU   start-up steps (ms since process start, as the service logs them)',
);
const fresh: Run[] = [];
const again: Run[] = [];
for (let i = 0; i < runs; i++) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-bench-start-'));
  try {
    for (const [label, list] of [
      ['fresh', fresh],
      ['restart', again],
    ] as const) {
      const r = await once(dir);
      list.push(r);
      console.log(
        `${label.padEnd(8)} ${ms(r.ready)} ${ms(r.graphql)} ${ms(r.rest)} ${r.cpu === undefined ? '     ?' : ms(r.cpu)}   ${r.phases ? JSON.stringify(r.phases) : ''}`,
      );
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
for (const [label, list] of [
  ['fresh', fresh],
  ['restart', again],
] as const) {
  const cpu = list.every((r) => r.cpu !== undefined) ? `, CPU ${Math.round(median(list.map((r) => r.cpu!)))} ms` : '';
  console.log(
    `median ${label.padEnd(8)} readyz ${Math.round(median(list.map((r) => r.ready)))} ms, first GraphQL answer ${Math.round(median(list.map((r) => r.graphql)))} ms, first REST answer ${Math.round(median(list.map((r) => r.rest)))} ms${cpu}`,
  );
}
