// The service as the benchmarks start it: compiled, as `npm start` runs it (dist/src/main.js, built here first when
// a source changed), not through tsx, whose source maps and loader hooks a deployment does not carry.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let built = false;

/** Node's arguments that run the compiled service (after `nodeFlags`), building it first once per benchmark. */
export function serviceArgs(nodeFlags: string[] = []): string[] {
  if (!built) {
    execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    built = true;
  }
  return [...nodeFlags, path.join(root, 'dist/src/main.js')];
}

/**
 * The environment `npm start` gives the service (package.json): glibc's malloc limited to two arenas, and V8's young
 * generation allowed to grow to 32 MB semi-spaces (docs/deploy.md, Memory).
 */
export const SERVICE_ENV: Record<string, string> = {
  MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
  NODE_OPTIONS: `--max-semi-space-size=32 ${process.env.NODE_OPTIONS ?? ''}`.trim(),
};
