import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { configDefaults, defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

// Test files run in parallel, each in its own process (pool "forks"): TEST_WORKERS at once, by default one per core
// (at least two). Three workers on two cores were slower than two on a fresh-clone run: the files are mostly busy on
// the CPU (the embedded database runs in the test's own process). Each file has its own databases, data directories
// and ports (test/helpers/app.ts).
const WORKERS = Number(process.env.TEST_WORKERS) || Math.max(2, os.availableParallelism());

// Files that must run with nothing else beside them: after the others, one at a time, in one worker.
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

export default defineConfig({
  ...shared,
  test: {
    ...shared.test,
    globalSetup: ['test/global-setup.ts'],
    maxWorkers: WORKERS,
    minWorkers: 1,
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        ...shared,
        test: {
          ...shared.test,
          name: 'parallel',
          // Each file still starts in a process of its own: the forks pool reads `poolOptions.forks.isolate` from the
          // root config, not from a project's, and this setting only spares resetting the modules inside a worker.
          // Shared worker processes (that option on the root) collected the files in 14 s instead of 101 s and ran
          // the suite 80 s faster, but tinypool then retires workers between groups of files and at the end without
          // awaiting their teardown, and the pool's close kills a worker whose teardown is still pending: runs ended
          // on an unhandled "Terminating worker thread" (seen with 2 and 3 workers, vitest 3.2.7, tinypool 1.x),
          // sometimes leaving that worker spinning (a CPU profile: vitest's listener for unhandled errors reporting
          // through the closed IPC channel, catching its own ERR_IPC_CHANNEL_CLOSED, without end).
          isolate: false,
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE],
        },
      },
      {
        ...shared,
        test: { ...shared.test, name: 'alone', include: ALONE, poolOptions: { forks: { singleFork: true } } },
      },
    ],
  },
});
