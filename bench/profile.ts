// `npm run bench:profile`: where a request's time goes. Seeds a small catalogue into an in-memory database, then
// for each route prints milliseconds and SQL statements per request (sequential, one client), and for the route
// given with --route a CPU profile's top functions by self time.
import { parseArgs } from 'node:util';
import { Session } from 'node:inspector/promises';
import { openDatabase } from '../src/db/client.js';
import { loadConfig } from '../src/config.js';
import { startApp } from '../src/app.js';
import { createLogger } from '../src/log.js';
import { seed } from './seed.js';
import { summarize, type CpuProfile } from './cpu-profile.js';

const { values: opts } = parseArgs({ options: { route: { type: 'string' }, requests: { type: 'string', default: '200' } } });
const N = Number(opts.requests);
const KEY = 'dm_profile_key_000000000000000000000000000000';
const db = await openDatabase({ memory: true });
const s = await seed(db, KEY, { users: 100, downloads: 5000, filesPerDownload: 2, commentsPerDownload: 4 });
const app = await startApp(loadConfig({}, { port: 0, logLevel: 'silent', bootstrapKey: KEY }), { db, log: createLogger('silent') });
const get = async (path: string) => (await fetch(app.url + path, { headers: { 'Forum-Api-Key': KEY } })).text();

const routes = [
  `/api/mc-dm-downloads/${s.downloadId}/`, `/api/mc-dm-downloads/${s.downloadId}/?with=full`,
  `/api/mc-dm-downloads/?category_id=${s.leafCategory}`, '/api/mc-dm-downloads/?per_page=100&with=full',
  '/api/mc-dm-categories/', `/api/mc-dm-files/?version_id=${s.versionId}`, `/api/mc-dm-comments/?download_id=${s.commentDownloadId}`,
];
console.log('route'.padEnd(52), 'ms/req', ' SQL/req');
for (const path of routes) {
  for (let i = 0; i < 20; i++) await get(path);
  const st0 = db.statements();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await get(path);
  console.log(path.padEnd(52), ((performance.now() - t0) / N).toFixed(2).padStart(6), ((db.statements() - st0) / N).toFixed(1).padStart(8));
}

if (opts.route) {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  for (let i = 0; i < N; i++) await get(opts.route);
  const { profile } = (await session.post('Profiler.stop')) as { profile: CpuProfile };
  const summary = summarize(profile);
  console.log(`\nSelf time by package for ${opts.route}:`);
  for (const line of summary.packages) console.log(line);
  console.log(`\nTop self time for ${opts.route} (${N} requests; the client runs in the same process):`);
  for (const line of summary.functions) console.log(line);
}
await app.close();
