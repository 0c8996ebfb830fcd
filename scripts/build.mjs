// `npm run build`: compiles src/ and rest-adapter/ to JavaScript in dist/ (one file per source file: esbuild only
// strips the types, in well under a second; `npm run typecheck` is what checks them), then bundles the two process
// entries, the service (dist/src/main.js) and the admin CLI (dist/src/cli/admin.js), then makes the ready-made
// embedded database for fresh data directories (src/db/template.ts) unless a matching one exists.
//
// The bundles: each entry is one file (plus a chunk for each part it imports only when needed: S3 storage, the CLI's
// direct database access) with our code and the pure-JavaScript packages it imports (Yoga, envelop,
// Pothos, the fetch ponyfills …): Node then reads and links one module in place of about 1,070 (173 of ours, 894
// from packages); what app.ts imports loaded in 0.84–0.95 s instead of 1.50–1.67 s (side by side, 2-core machine).
// Left outside, loaded from node_modules as before (BUNDLE_EXTERNAL): graphql, which must stay one instance with the
// parser class src/graphql/limits.ts requires; packages that read files beside their own code or start worker
// threads (PGlite and its adapter, Prisma and the generated client in src/generated/prisma, pino, Swagger UI,
// GraphiQL); pg; the ones loaded only when configured (the S3 SDK, ioredis); and the build tools. The other compiled files stay beside the
// bundles for the scripts and tests that import them one by one. A stack trace from the service names the bundle's
// lines; each part of the bundle starts with a comment naming its source file.
//
// `npm ci` runs it (postinstall) and `npm start` runs it before the service, so an edited source is never served
// from an older build. When nothing changed since the last build it writes nothing (a read-only install, such as
// the systemd unit in docs/deploy.md, starts as well): the names, sizes and modification times of the sources, the
// migrations, package-lock.json and this script are compared with the list the last build saved in
// dist/.sources.json, which is written last, once everything is built. Builds started at once (tests, two `npm start`s) take turns through
// a lock directory (dist/.build-lock). `--force` rebuilds anyway.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const stampFile = path.join(dist, '.sources.json');
const lockDir = path.join(dist, '.build-lock');
const force = process.argv.includes('--force');

/** The process entries bundled into one file each (see above). */
const BUNDLED = ['src/main.ts', 'src/cli/admin.ts'];
/** Packages the bundles load from node_modules (see above). */
const BUNDLE_EXTERNAL = [
  'graphql',
  'graphql/*',
  '@electric-sql/pglite',
  '@electric-sql/pglite/*',
  'pglite-prisma-adapter',
  '@prisma/*',
  'prisma',
  'pg',
  'pino',
  'swagger-ui-dist',
  '@graphql-yoga/render-graphiql',
  '@graphql-yoga/render-graphiql/*',
  '@aws-sdk/*',
  'ioredis',
  'esbuild',
  'tsx',
];

/** What a build depends on, each with its size and modification time: the sources, the migrations, the lock file, this script. */
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
  add('scripts/build.mjs');
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
  // The generated Prisma client stays a file of its own (it finds its files from its own location): imports of it
  // are rewritten relative to the bundle.
  const generatedOutside = (outfile) => ({
    name: 'generated-prisma-outside',
    setup(b) {
      b.onResolve({ filter: /\/generated\/prisma\// }, (args) => {
        const compiled = path.join(dist, path.relative(root, path.resolve(args.resolveDir, args.path)));
        const from = path.dirname(path.join(root, outfile));
        const relative = path.relative(from, compiled).split(path.sep).join('/');
        return { path: relative.startsWith('../') ? relative : `./${relative}`, external: true };
      });
    },
  });
  for (const entry of BUNDLED) {
    const outfile = path.join('dist', entry.replace(/\.ts$/, '.js'));
    await build({
      absWorkingDir: root,
      entryPoints: [entry],
      // What the entry imports only when it needs it (`await import(…)`: S3 storage, the CLI's database access, the
      // ready-made database) goes in chunks beside it, so the packages those parts import load only then too: in one
      // file, esbuild would hoist them to the top and every start would load them.
      outdir: path.dirname(outfile),
      entryNames: '[name]',
      chunkNames: '[name]-[hash]',
      splitting: true,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20.19',
      logLevel: 'warning',
      external: BUNDLE_EXTERNAL,
      plugins: [generatedOutside(outfile)],
      // CommonJS packages inside the bundle call require(); it is Node's, made for the bundle's own location.
      banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
    });
  }
  console.error(
    `build: ${entryPoints.length} files compiled to dist/, ${BUNDLED.join(' and ')} bundled, in ${Math.round(performance.now() - t0)} ms`,
  );
  const { ensureTemplate } = await import('../dist/src/db/template.js');
  const t1 = performance.now();
  const { file, made } = await ensureTemplate();
  if (made) console.error(`build: ready-made embedded database ${path.relative(root, file)} made in ${Math.round(performance.now() - t1)} ms`);
  fs.writeFileSync(stampFile, current);
});
