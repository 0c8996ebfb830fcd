// `npm run build`: compiles src/ and rest-adapter/ to JavaScript in dist/ (one file per source file, no bundling:
// esbuild only strips the types, in well under a second; `npm run typecheck` is what checks them), then makes the
// ready-made embedded database for fresh data directories (src/db/template.ts) unless a matching one exists.
//
// `npm ci` runs it (postinstall) and `npm start` runs it before the service, so an edited source is never served
// from an older build. When nothing changed since the last build it writes nothing (a read-only install, such as
// the systemd unit in docs/deploy.md, starts as well): the sources' names, sizes and modification times are
// compared with the list the last build saved in dist/.sources.json. `--force` rebuilds anyway.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const stampFile = path.join(dist, '.sources.json');
const force = process.argv.includes('--force');

/** Every .ts file under the source folders, with its size and modification time. */
function sources() {
  const found = {};
  for (const top of ['src', 'rest-adapter']) {
    for (const entry of fs.readdirSync(path.join(root, top), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) continue;
      const file = path.relative(root, path.join(entry.parentPath ?? entry.path, entry.name));
      const st = fs.statSync(path.join(root, file));
      found[file] = `${st.size} ${st.mtimeMs}`;
    }
  }
  return found;
}

const t0 = performance.now();
const now = sources();
let previous = null;
try { previous = fs.readFileSync(stampFile, 'utf8'); } catch { /* no build yet */ }
const current = JSON.stringify(now, Object.keys(now).sort());
if (force || previous !== current) {
  const { build } = await import('esbuild');
  // Only the compiled code is replaced; the template tarballs beside it are kept.
  for (const dir of ['src', 'rest-adapter']) fs.rmSync(path.join(dist, dir), { recursive: true, force: true });
  fs.rmSync(stampFile, { force: true });
  await build({
    absWorkingDir: root,
    entryPoints: Object.keys(now),
    outdir: 'dist',
    outbase: '.',
    format: 'esm',
    platform: 'node',
    target: 'node20.19',
    logLevel: 'warning',
  });
  fs.writeFileSync(stampFile, current);
  console.error(`build: ${Object.keys(now).length} files compiled to dist/ in ${Math.round(performance.now() - t0)} ms`);
}

const { ensureTemplate } = await import('../dist/src/db/template.js');
const t1 = performance.now();
const { file, made } = await ensureTemplate();
if (made) console.error(`build: ready-made embedded database ${path.relative(root, file)} made in ${Math.round(performance.now() - t1)} ms`);
