// The service and the admin CLI as separate processes run them: the build in dist/, as `npm start` runs the service
// (scripts/build.mjs, which writes nothing when dist/ already matches the sources). The process-level tests (kill -9,
// several instances, start-up refusals, the CLI) spawn these: node then loads plain JavaScript, where
// `node --import tsx src/….ts` compiled every module of the service again in each process (about 1.5 s of CPU a
// process, dozens of processes a run). The tests that import the sources run them through vitest as before.
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');

let built = false;
/** Brings dist/ up to date with the sources, once per test file (a no-op in a few hundredths of a second when it is). */
function ensureBuilt(): void {
  if (built) return;
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'pipe' });
  built = true;
}

/** `node <these>` starts the service (src/main.ts, built), as `npm start` does after its build. */
export function serviceArgs(): string[] {
  ensureBuilt();
  return [path.join(root, 'dist/src/main.js')];
}

/** `node <these> …` runs the admin CLI (src/cli/admin.ts, built). */
export function adminArgs(): string[] {
  ensureBuilt();
  return [path.join(root, 'dist/src/cli/admin.js')];
}
