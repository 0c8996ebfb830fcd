// `npm run bench:files`: the bytes path. A large file (1 GiB by default; --mib N) is uploaded through REST and
// through GraphQL (curl, multipart) and downloaded through the data route, against two floors measured in the
// same run on the same disk: `tee <dest> < file | sha256sum` for uploads (write + hash is the least an upload
// must do) and a bare `fs.createReadStream().pipe(res)` server for downloads. Prints throughput, the ratios, and
// the service's peak RSS growth during each upload.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { promisify } from 'node:util';
import { SERVICE_ENV, serviceArgs } from './service.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({ options: { mib: { type: 'string', default: '1024' } } });
const MIB = Number(opts.mib);
const SIZE = MIB * 1024 * 1024;
const KEY = 'dm_bench_files_key_000000000000000000000000000';
const PORT = 40_000 + Math.floor(Math.random() * 1000);
const BASE = `http://127.0.0.1:${PORT}`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-bench-files-'));

const rssMb = (pid: number) => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
  } catch {
    return 0;
  }
};

async function timed<T>(fn: () => Promise<T>): Promise<{ seconds: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { seconds: (performance.now() - t0) / 1000, value };
}

async function peakDuring<T>(pid: number, fn: () => Promise<T>): Promise<{ value: T; baseMb: number; peakMb: number }> {
  const baseMb = rssMb(pid);
  let peakMb = baseMb;
  const timer = setInterval(() => {
    peakMb = Math.max(peakMb, rssMb(pid));
  }, 20);
  try {
    return { value: await fn(), baseMb, peakMb };
  } finally {
    clearInterval(timer);
  }
}

async function gql(query: string, user?: string) {
  const res = await fetch(`${BASE}/graphql`, {
    method: 'POST',
    headers: { 'Forum-Api-Key': KEY, 'content-type': 'application/json', ...(user ? { 'Forum-Api-User': user } : {}) },
    body: JSON.stringify({ query }),
  });
  const body = (await res.json()) as any;
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

async function main() {
  const source = path.join(dir, 'source.bin');
  console.log(`Writing a ${MIB} MiB test file …`);
  const chunk = crypto.randomBytes(1024 * 1024);
  const fd = fs.openSync(source, 'w');
  for (let i = 0; i < MIB; i++) {
    chunk[0] = i & 255;
    fs.writeSync(fd, chunk);
  }
  fs.closeSync(fd);

  const floor = await timed(() => run('sh', ['-c', `tee "${path.join(dir, 'tee.bin')}" < "${source}" | sha256sum`]));
  fs.rmSync(path.join(dir, 'tee.bin'));

  const service: ChildProcess = spawn(process.execPath, serviceArgs(), {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      ...SERVICE_ENV,
      DATA_DIR: path.join(dir, 'data'),
      PORT: String(PORT),
      DM_BOOTSTRAP_KEY: KEY,
      LOG_LEVEL: 'warn',
      MAX_UPLOAD_BYTES: String(SIZE * 2),
    },
  });
  try {
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${BASE}/readyz`)).ok) break;
      } catch {
        /* starting */
      }
      if (i > 300) throw new Error('the service did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    const pid = service.pid!;
    const big = String(SIZE * 4);
    await gql('mutation { createUser(input: { username: "bench" }) { user { userId } } }');
    const cat = (await gql('mutation { createCategory(input: { title: "Big" }) { category { categoryId } } }'))
      .createCategory.category.categoryId;
    await gql(
      `mutation { updateCategory(input: { categoryId: ${cat}, maxFileSize: ${big}, maxVersionSize: ${big}, maxDownloadSize: ${big} }) { category { categoryId } } }`,
    );
    const dl = (
      await gql(
        `mutation { createDownload(input: { categoryId: ${cat}, title: "Big" }) { download { currentVersionId } } }`,
        '1',
      )
    ).createDownload.download;
    const version = dl.currentVersionId;

    const curl = (args: string[]) =>
      run('curl', ['-sS', '--fail-with-body', '-H', `Forum-Api-Key: ${KEY}`, '-H', 'Forum-Api-User: 1', ...args], {
        maxBuffer: 1 << 20,
      });
    const rest = await peakDuring(pid, () =>
      timed(() =>
        curl(['-F', `version_id=${version}`, '-F', `file=@${source};filename=big.bin`, `${BASE}/api/mc-dm-files/`]),
      ),
    );
    const restFile = JSON.parse(rest.value.value.stdout).file;
    const graphql = await peakDuring(pid, () =>
      timed(() =>
        curl([
          '-F',
          `operations={"query":"mutation($f: Upload!) { createFile(input: { versionId: ${version}, file: $f }) { file { fileId fileHash } } }","variables":{"f":null}}`,
          '-F',
          'map={"0":["variables.f"]}',
          '-F',
          `0=@${source};filename=big2.bin`,
          `${BASE}/graphql`,
        ]),
      ),
    );
    const gqlBody = JSON.parse(graphql.value.value.stdout);
    if (gqlBody.errors) throw new Error(JSON.stringify(gqlBody.errors));

    const served = await timed(() => curl(['-o', '/dev/null', `${BASE}/api/mc-dm-files/${restFile.file_id}/data/`]));
    const bare = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-length': String(SIZE) });
      fs.createReadStream(source).pipe(res);
    });
    await new Promise<void>((r) => bare.listen(0, '127.0.0.1', () => r()));
    const bareUrl = `http://127.0.0.1:${(bare.address() as any).port}/`;
    const bareServed = await timed(() => run('curl', ['-sS', '-o', '/dev/null', bareUrl]));
    bare.close();

    const mbps = (s: number) => (MIB / s).toFixed(0);
    const ratio = (floorS: number, s: number) => Math.round((floorS / s) * 100) / 100;
    const results = {
      mib: MIB,
      floorUpload: { seconds: floor.seconds, mibPerS: Number(mbps(floor.seconds)) },
      rest: {
        seconds: rest.value.seconds,
        ratio: ratio(floor.seconds, rest.value.seconds),
        rssGrowthMb: Math.round(rest.peakMb - rest.baseMb),
      },
      graphql: {
        seconds: graphql.value.seconds,
        ratio: ratio(floor.seconds, graphql.value.seconds),
        rssGrowthMb: Math.round(graphql.peakMb - graphql.baseMb),
      },
      download: {
        seconds: served.seconds,
        bareSeconds: bareServed.seconds,
        ratio: ratio(bareServed.seconds, served.seconds),
      },
    };
    console.log(`\n${MIB} MiB on ${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version}\n`);
    console.log(`floor: tee | sha256sum          ${floor.seconds.toFixed(2)} s  ${mbps(floor.seconds)} MiB/s`);
    console.log(
      `upload through REST             ${rest.value.seconds.toFixed(2)} s  ${mbps(rest.value.seconds)} MiB/s  ratio ${results.rest.ratio} (target ≥ 0.8)  RSS growth ${results.rest.rssGrowthMb} MB (target < 100)`,
    );
    console.log(
      `upload through GraphQL          ${graphql.value.seconds.toFixed(2)} s  ${mbps(graphql.value.seconds)} MiB/s  ratio ${results.graphql.ratio} (target ≥ 0.8)  RSS growth ${results.graphql.rssGrowthMb} MB (target < 100)`,
    );
    console.log(
      `floor: bare createReadStream    ${bareServed.seconds.toFixed(2)} s  ${mbps(bareServed.seconds)} MiB/s`,
    );
    console.log(
      `download through the data route ${served.seconds.toFixed(2)} s  ${mbps(served.seconds)} MiB/s  ratio ${results.download.ratio} (target ≥ 0.8)`,
    );
    const out = path.join(root, 'bench/results', `files-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, JSON.stringify(results, null, 2));
    console.log(`\nWritten to ${path.relative(root, out)}`);
  } finally {
    service.kill('SIGTERM');
    await new Promise((r) => service.once('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
