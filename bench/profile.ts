// `npm run bench:profile`: where a request's time goes. Seeds a small catalogue into an in-memory database, then
// for each route prints milliseconds and SQL statements per request (sequential, one client), for three writes (a
// download edited, a comment posted, a file downloaded and counted) milliseconds, this process's CPU and the SQL statements per request (outside transactions), and for the route
// given with --route a CPU profile's top functions by self time (with --profile-writes, each write's too). `--database-url postgres://…` runs on a fresh
// database of that server (dropped at the end) instead. In --route, `:download`, `:version`, `:commentDownload` and
// `:category` stand for the seeded ids the route table uses.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { print, type DocumentNode } from 'graphql';
import { routes as restRoutes } from '../rest-adapter/routes.js';
import pg from 'pg';
import { Session } from 'node:inspector/promises';
import { openDatabase } from '../src/db/client.js';
import { loadConfig } from '../src/config.js';
import { startApp } from '../src/app.js';
import { createLogger } from '../src/log.js';
import { seed } from './seed.js';
import { summarize, type CpuProfile } from './cpu-profile.js';

const { values: opts } = parseArgs({
  options: {
    route: { type: 'string' },
    requests: { type: 'string', default: '200' },
    'database-url': { type: 'string' },
    /** Also a CPU profile of each write's requests (top functions by self time). */
    'profile-writes': { type: 'boolean', default: false },
    /** Reads through the service's own fetch handler, without a socket: the profile holds the service alone. */
    'in-process': { type: 'boolean', default: false },
    /** READ_CACHE_MB for the service (default 0: off). On, every request after the first repeats a kept answer: the
     * figures are then those of the cache's hits. */
    'read-cache-mb': { type: 'string', default: '0' },
  },
});
const N = Number(opts.requests);
const KEY = 'dm_profile_key_000000000000000000000000000000';
const server = opts['database-url'];
const dbName = `dcs_profile_${process.pid}`;
const onServer = async (sql: string) => {
  const c = new pg.Client({ connectionString: server });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
};
let dbUrl: string | undefined;
if (server) {
  await onServer(`CREATE DATABASE "${dbName}"`);
  const url = new URL(server);
  url.pathname = `/${dbName}`;
  dbUrl = url.toString();
}
// Files' bytes go to a directory of this run's (removed at the end).
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-profile-'));
const db = await openDatabase(dbUrl ? { url: dbUrl } : { memory: true });
const s = await seed(db, KEY, { users: 100, downloads: 5000, filesPerDownload: 2, commentsPerDownload: 4 });
// The read cache off unless --read-cache-mb: every request here repeats one read, which it would answer without
// computing anything (with it on, what a hit costs is measured).
// Comment flood control off: the writes below post one comment after another as a few users.
const app = await startApp(
  loadConfig(
    {},
    {
      port: 0,
      logLevel: 'silent',
      bootstrapKey: KEY,
      readCacheMb: Number(opts['read-cache-mb']),
      commentFloodSeconds: 0,
      dataDir,
    },
  ),
  {
    db,
    log: createLogger('silent'),
  },
);
// In-process, the URL and init go to the app's fetch handler, which makes the request as its HTTP server does (a body
// with its Content-Length, as a client sends it).
const request = opts['in-process'] ? (url: string, init?: RequestInit) => app.fetch(url, init) : fetch;
const get = async (path: string) => {
  if (!path.startsWith('{')) return (await request(app.url + path, { headers: { 'Forum-Api-Key': KEY } })).text();
  // A GraphQL operation, given as its JSON body.
  return (
    await request(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'Forum-Api-Key': KEY, 'content-type': 'application/json' },
      body: path,
    })
  ).text();
};
const gql = (query: string) => JSON.stringify({ query });
/** The document a REST route runs, as a /graphql body with `variables`. */
const routeBody = (method: string, path: string, variables: Record<string, unknown>) =>
  JSON.stringify({
    query: print(restRoutes.find((r) => r.method === method && r.path === path)!.document as DocumentNode),
    variables,
  });
const one = async (sql: string, p: unknown[]) =>
  Number(Object.values((await db.query<Record<string, unknown>>(sql, p))[0]!)[0]);
const ids: Record<string, number> = {
  commentDownload: s.commentDownloadId,
  download: s.downloadId,
  version: s.versionId,
  category: s.leafCategory,
  file: await one('SELECT min(id) FROM file WHERE "versionId" = $1', [s.versionId]),
  comment: await one('SELECT min(id) FROM comment WHERE "downloadId" = $1', [s.commentDownloadId]),
};
const withIds = (route: string) =>
  route.replace(/:(commentDownload|download|version|category|file|comment)\b/g, (_m, k: string) => String(ids[k]));
/** A route as printed: GraphQL bodies by their query text. */
const label = (route: string) => {
  if (!route.startsWith('{')) return route.slice(0, 60);
  const { query, variables } = JSON.parse(route) as { query: string; variables?: unknown };
  const name = /^\s*query\s+(\w+)/.exec(query)?.[1];
  return `gql ${name ? `${name} ${JSON.stringify(variables)}` : query.replace(/\s+/g, ' ')}`.slice(0, 60);
};

const routes = [
  `/api/mc-dm-downloads/${s.downloadId}/`,
  `/api/mc-dm-downloads/${s.downloadId}/?with=full`,
  `/api/mc-dm-downloads/?category_id=${s.leafCategory}`,
  '/api/mc-dm-downloads/?per_page=100&with=full',
  '/api/mc-dm-categories/',
  `/api/mc-dm-categories/${s.leafCategory}/`,
  `/api/mc-dm-files/?version_id=${s.versionId}`,
  '/api/mc-dm-files/:file/',
  `/api/mc-dm-comments/?download_id=${s.commentDownloadId}`,
  '/api/mc-dm-comments/:comment/',
  gql(
    `{ comments(downloadId: ${s.commentDownloadId}) { nodes { commentId message username canEdit } pagination { total } } }`,
  ),
  gql(
    `{ commentsConnection(downloadId: ${s.commentDownloadId}) { totalCount edges { cursor node { commentId message } } } }`,
  ),
  gql(`{ filesConnection(versionId: ${s.versionId}) { totalCount nodes { fileId filename } } }`),
  gql('{ categoriesConnection(first: 20) { totalCount nodes { categoryId title } } }'),
  // The REST routes' own documents posted to /graphql, with variables: the same reads as the routes above.
  '/api/mc-dm-downloads/?per_page=20',
  routeBody('GET', '/api/mc-dm-downloads/', { perPage: 20, full: false }),
  routeBody('GET', '/api/mc-dm-comments/', { downloadId: s.commentDownloadId, full: false }),
  routeBody('GET', '/api/mc-dm-downloads/:download_id/', { downloadId: s.downloadId, full: true }),
];
console.log('#  ', 'route'.padEnd(60), 'ms/req', ' SQL/req');
for (const [i, route] of routes.entries()) {
  const path = withIds(route);
  for (let i = 0; i < 20; i++) await get(path);
  const st0 = db.statements();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await get(path);
  console.log(
    `#${i}`.padEnd(3),
    label(path).padEnd(60),
    ((performance.now() - t0) / N).toFixed(2).padStart(6),
    ((db.statements() - st0) / N).toFixed(1).padStart(8),
  );
}

// Writes through the REST face, each a transaction of its own: what a write costs the service (its own CPU: on the
// embedded database that includes the database's work, which runs in this process; on a server, only the service's).
const send = async (method: string, path: string, form: Record<string, string>, user: number) => {
  const res = await fetch(app.url + path, {
    method,
    headers: {
      'Forum-Api-Key': KEY,
      'Forum-Api-User': String(user),
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams(form).toString(),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
};
/** A counted download: the file's bytes, or its redirect for an external link, as user `user`. */
const download = async (fileId: number, user: number) => {
  const res = await fetch(`${app.url}/api/mc-dm-files/${fileId}/data/`, {
    headers: { 'Forum-Api-Key': KEY, 'Forum-Api-User': String(user) },
    redirect: 'manual',
  });
  const text = await res.text();
  if (res.status !== 200 && res.status !== 302) throw new Error(`file ${fileId}: ${res.status} ${text.slice(0, 200)}`);
};
// Files of the seed's downloads, one after another (a counted download of the same file by the same user in a row is
// still counted: each request counts).
// Their bytes (64) are put in storage, where the seed leaves none, and their size set to match.
const files: number[] = [];
for (const f of await db.query<{ id: number; key: string }>(
  'UPDATE file SET "fileSize" = 64 WHERE id IN (SELECT id FROM file ORDER BY id LIMIT 1000) RETURNING id, "storageKey" AS key',
)) {
  const p = path.join(dataDir, 'files', f.key);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, Buffer.alloc(64, 7));
  files.push(f.id);
}
const writes: [string, (i: number) => Promise<void>][] = [
  [
    'PUT /api/mc-dm-downloads/:download/ (tag_line)',
    (i) => send('PUT', `/api/mc-dm-downloads/${ids.download}/`, { tag_line: `Edited ${i}` }, 1),
  ],
  [
    'POST /api/mc-dm-comments/',
    (i) =>
      send(
        'POST',
        '/api/mc-dm-comments/',
        { download_id: String(ids.commentDownload), message: `Comment ${i}` },
        1 + (i % 50),
      ),
  ],
  ['GET /api/mc-dm-files/:file/data/ (counted)', (i) => download(files[i % files.length]!, 1 + (i % 50))],
];
console.log('\n#  ', 'write'.padEnd(60), 'ms/req', 'CPU ms/req', ' SQL/req');
for (const [name, write] of writes) {
  for (let i = 0; i < 20; i++) await write(i);
  const session = opts['profile-writes'] ? new Session() : null;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const st0 = db.statements();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await write(i);
  const cpu = process.cpuUsage(cpu0);
  console.log(
    '  '.padEnd(3),
    name.padEnd(60),
    ((performance.now() - t0) / N).toFixed(2).padStart(6),
    ((cpu.user + cpu.system) / 1000 / N).toFixed(2).padStart(10),
    ((db.statements() - st0) / N).toFixed(1).padStart(8),
  );
  if (session) {
    const { profile } = (await session.post('Profiler.stop')) as { profile: CpuProfile };
    if (process.env.PROFILE_OUT)
      (await import('node:fs')).writeFileSync(
        `${process.env.PROFILE_OUT}-${name.split(' ')[0]}.cpuprofile`,
        JSON.stringify(profile),
      );
    const summary = summarize(profile);
    console.log(`\nSelf time by package for ${name} (${N} requests, the profiler's overhead included):`);
    for (const line of summary.packages) console.log(line);
    console.log(`\nTop self time for ${name}:`);
    for (const line of summary.functions) console.log(line);
    session.disconnect();
  }
}

if (opts.route) {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  // `--route '#N'`: the N-th route of the table above (GraphQL bodies are long to type).
  const route = withIds(/^#\d+$/.test(opts.route) ? routes[Number(opts.route.slice(1))]! : opts.route);
  for (let i = 0; i < N; i++) await get(route);
  const { profile } = (await session.post('Profiler.stop')) as { profile: CpuProfile };
  if (process.env.PROFILE_OUT) fs.writeFileSync(`${process.env.PROFILE_OUT}-route.cpuprofile`, JSON.stringify(profile));
  const summary = summarize(profile);
  console.log(`\nSelf time by package for ${opts.route}:`);
  for (const line of summary.packages) console.log(line);
  const client = opts['in-process'] ? 'in-process: no socket' : 'the client runs in the same process';
  console.log(`\nTop self time for ${opts.route} (${N} requests; ${client}):`);
  for (const line of summary.functions) console.log(line);
  console.log(`\nTop inclusive time for ${opts.route}:`);
  for (const line of summary.inclusive) console.log(line);
}
await app.close(); // closes the database too
if (server) await onServer(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
fs.rmSync(dataDir, { recursive: true, force: true });
