// Once per test run: with TEST_DATABASE_URL, a PostgreSQL database with every migration applied, which the tests'
// databases are then created from (CREATE DATABASE … TEMPLATE, test/helpers/app.ts) instead of each running the
// migrations again. Dropped at the end of the run.
import crypto from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The migrated template database's name, or '' without TEST_DATABASE_URL. */
    postgresTemplate: string;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | void> {
  const base = process.env.TEST_DATABASE_URL;
  project.provide('postgresTemplate', '');
  if (!base) return;
  const name = `dcs_template_${process.pid}_${crypto.randomBytes(4).toString('hex')}`;
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
  return async () => {
    await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  };
}
