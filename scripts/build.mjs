// `npm run build`: compiles src/ and rest-adapter/ to JavaScript in dist/ (one file per source file, no bundling:
// esbuild only strips the types, in well under a second; `npm run typecheck` is what checks them), then makes the
// ready-made embedded database for fresh data directories (src/db/template.ts) unless a matching one exists.
//
// `npm ci` runs it (postinstall) and `npm start` runs it before the service, so an edited source is never served
// from an older build. When nothing changed since the last build it writes nothing (a read-only install, such as
// the systemd unit in docs/deploy.md, starts as well): the names, sizes and modification times of the sources, the
// migrations and package-lock.json are compared with the list the last build saved in dist/.sources.json, which
// is written last, once everything is built. Builds started at once (tests, two `npm start`s) take turns through
// a lock directory (dist/.build-lock). `--force` rebuilds anyway.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const stampFile = path.join(dist, '.sources.json');
const lockDir = path.join(dist, '.build-lock');
const force = process.argv.includes('--force');

/** What a build depends on, each with its size and modification time: the sources, the migrations, the lock file. */
function inputs() {
  const found = {};
  const add = (file) => { const st = fs.statSync(path.join(root, file)); found[file] = `${st.size} ${st.mtimeMs}`; };
  for (const [top, suffix] of [['src', '.ts'], ['rest-adapter', '.ts'], ['prisma/migrations', '.sql']]) {
    for (const entry of fs.readdirSync(path.join(root, top), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith(suffix) || entry.name.endsWith('.d.ts')) continue;
      add(path.relative(root, path.join(entry.parentPath ?? entry.path, entry.name)));
    }
  }
  add('package-lock.json');
  return found;
}

const readStamp = () => { try { return fs.readFileSync(stampFile, 'utf8'); } catch { return null; } };
const now = inputs();
const current = JSON.stringify(now, Object.keys(now).sort());
if (!force && readStamp() === current) process.exit(0);

/** Runs `fn` while holding the build lock; a lock older than two minutes is taken to be left by a killed build. */
async function locked(fn) {
  fs.mkdirSync(dist, { recursive: true });
  for (;;) {
    try { fs.mkdirSync(lockDir); break; } catch (err) { if (err.code !== 'EEXIST') throw err; }
    try { if (Date.now() - fs.statSync(lockDir).mtimeMs > 120_000) fs.rmSync(lockDir, { recursive: true, force: true }); } catch { /* gone already */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  try { return await fn(); } finally { fs.rmSync(lockDir, { recursive: true, force: true }); }
}

await locked(async () => {
  // Another build may have finished while this one waited.
  if (!force && readStamp() === current) return;
  const t0 = performance.now();
  const { build } = await import('esbuild');
  // Only the compiled code is replaced; the template tarballs beside it are kept.
  fs.rmSync(stampFile, { force: true });
  for (const dir of ['src', 'rest-adapter']) fs.rmSync(path.join(dist, dir), { recursive: true, force: true });
  const entryPoints = Object.keys(now).filter((f) => f.endsWith('.ts'));
  await build({
    absWorkingDir: root,
    entryPoints,
    outdir: 'dist',
    outbase: '.',
    format: 'esm',
    platform: 'node',
    target: 'node20.19',
    logLevel: 'warning',
  });
  console.error(`build: ${entryPoints.length} files compiled to dist/ in ${Math.round(performance.now() - t0)} ms`);
  const { ensureTemplate } = await import('../dist/src/db/template.js');
  const t1 = performance.now();
  const { file, made } = await ensureTemplate();
  if (made) console.error(`build: ready-made embedded database ${path.relative(root, file)} made in ${Math.round(performance.now() - t1)} ms`);
  fs.writeFileSync(stampFile, current);
});
