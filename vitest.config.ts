import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { configDefaults, defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

// Test files run in parallel in worker processes (pool "forks"): TEST_WORKERS at once, by default one per core (at
// least two). The files are mostly busy on the CPU (the embedded database runs in the test's own process): with a
// process per file, three workers on two cores were slower than two; with shared workers, one run of three took 400 s
// against 423–440 s for two; once the embedded databases were used again (test/helpers/lite-pool.ts), three took 381 s
// against 346 s for two, the two cores busy throughout; on a faster day, 301 s against 270 s: two stay the default. Each
// file has its own databases, data directories and ports (test/helpers/app.ts). Most files share their worker's process
// and modules ('parallel' below): loading the service's modules once per worker instead of once per file took the suite
// from 548 s to 440 s (vitest 4; vitest 3 retired shared workers without awaiting their teardown, and runs ended on an
// unhandled "Terminating worker thread").
const WORKERS = Number(process.env.TEST_WORKERS) || Math.max(2, os.availableParallelism());

// Files that must run with no other test file beside them: first, one at a time, in one worker. They leave the second
// core to whatever else runs at the start (.ci/run starts the type check and the lint beside the tests, at the lowest
// priority: run here, their 15 s of CPU take nothing from the test files that follow).
const ALONE = [
  // The read cache's tests count hits and the counter lag in seconds: a busy machine could make an answer outlive it.
  'test/read-cache.test.ts',
  // These measure time against bounds: a query's answer while attacks arrive.
  'test/graphql-limits.test.ts',
];

// The longest files, started first so that none of them begins near the end (on a fresh clone vitest knows no
// durations from an earlier run and starts the largest files first). Longest first, as measured on the 2-core machine.
const LONGEST_FIRST = [
  'test/authz-matrix.test.ts',
  'test/authz-matrix-postgres.test.ts',
  'test/fuzz.test.ts',
  'test/invariants.test.ts',
  'test/admin-cli.test.ts',
  'test/totals.test.ts',
  'test/readme.test.ts',
  'test/resource-reads.test.ts',
  'test/metrics.test.ts',
  'test/webhooks.test.ts',
  'test/hardening.test.ts',
  'test/versions.test.ts',
  'test/fair-share.test.ts',
  'test/subscriptions.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = LONGEST_FIRST.indexOf(
        path
          .relative(import.meta.dirname, f.moduleId)
          .split(path.sep)
          .join('/'),
      );
      return i === -1 ? LONGEST_FIRST.length : i;
    };
    return sorted
      .map((file, i) => ({ file, i }))
      .sort((a, b) => rank(a.file) - rank(b.file) || a.i - b.i)
      .map(({ file }) => file);
  }
}

// What both groups of files share. The root holds what is the whole run's: the PostgreSQL template made once
// (test/global-setup.ts, given to both groups), the pool of workers and the order of the files.
const shared = {
  // graphql ships both ESM and CommonJS builds; the schema's plugins and our code must share one instance.
  resolve: { alias: { graphql: require.resolve('graphql') } },
  test: { pool: 'forks' as const, testTimeout: 30_000, hookTimeout: 60_000 },
};

// Files that replace modules (vi.mock): each runs in a fresh module graph of its own, beside the others.
const ISOLATED = ['test/list-columns.test.ts'];

export default defineConfig({
  ...shared,
  test: {
    ...shared.test,
    globalSetup: ['test/global-setup.ts'],
    maxWorkers: WORKERS,
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        ...shared,
        test: { ...shared.test, name: 'isolated', include: ISOLATED, sequence: { groupOrder: 2 } },
      },
      {
        ...shared,
        test: {
          ...shared.test,
          name: 'parallel',
          // The files of a worker share its process and its modules: the service's modules (the schema, the
          // client, the routes) are loaded once per worker instead of once per file. Each file still opens its own
          // databases, data directories and ports, and puts back what it changes in shared modules (LIMITS).
          isolate: false,
          sequence: { groupOrder: 2 },
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE, ...ISOLATED],
        },
      },
      {
        ...shared,
        // groupOrder 1, not 0: vitest would put a one-worker isolated project of order 0 at the very end.
        test: { ...shared.test, name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
