// Once per test run: the embedded database's migrated template (src/db/template.ts), made now when the build's does
// not match the migrations (one was added or edited since `npm run build`), which the tests' embedded databases are
// opened from (test/helpers/lite-pool.ts); and, with TEST_DATABASE_URL, a PostgreSQL database with every migration
// applied, which the tests' databases are then created from (CREATE DATABASE … TEMPLATE, test/helpers/app.ts)
// instead of each running the migrations again. Dropped at the end of the run.
import crypto from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';
import { ensureTemplate } from '../src/db/template.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The migrated template database's name, or '' without TEST_DATABASE_URL. */
    postgresTemplate: string;
    /**
     * The start of the name of every database this run creates (test/helpers/app.ts), or '' without
     * TEST_DATABASE_URL: the ones still there at the end of the run are dropped then.
     */
    testDatabasePrefix: string;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | void> {
  await ensureTemplate();
  const base = process.env.TEST_DATABASE_URL;
  project.provide('postgresTemplate', '');
  project.provide('testDatabasePrefix', '');
  if (!base) return;
  const run = `${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
  const name = `dcs_template_${run}`;
  const prefix = `dcs_test_${run}_`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: base });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE "${name}"`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  const db = await openDatabase({ url: url.toString(), poolSize: 1 });
  try {
    await migrate(db);
  } finally {
    // CREATE DATABASE … TEMPLATE refuses a template anyone is connected to.
    await db.close();
  }
  project.provide('postgresTemplate', name);
  project.provide('testDatabasePrefix', prefix);
  return async () => {
    // The databases the test files left (test/helpers/app.ts), then the template. Several at once: each DROP
    // DATABASE waits for a checkpoint, and the server serves the waiting ones with one.
    const c = new pg.Client({ connectionString: base });
    await c.connect();
    const left = (
      await c.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [prefix])
    ).rows.map((r) => r.datname);
    await c.end();
    const next = () => left.pop();
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let db = next(); db !== undefined; db = next())
          await admin(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
      }),
    );
    await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  };
}
