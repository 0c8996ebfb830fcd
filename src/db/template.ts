// A ready-made embedded database for a fresh DATA_DIR. Creating a PGlite data directory runs PostgreSQL's initdb
// compiled to WebAssembly, which costs seconds; the build (scripts/build.mjs) does it once instead, applies the
// migrations, and keeps the result as a tarball. A first start unpacks that tarball into DATA_DIR/db and goes on
// as on a restart (the migrator then finds nothing to do).
//
// It holds only the database the service uses (`postgres`): PostgreSQL's template databases, which serve only
// CREATE DATABASE (the service never runs it, and the embedded database is one database anyway), are dropped. That
// leaves about 400 files instead of 1,100 to write on a first start, where creating files is most of the cost.
//
// The tarball's name is a hash of its recipe, the PGlite version and every migration's name and checksum, so a tarball
// made by another PGlite or before a migration was added or changed is never used: the start then creates the
// database the slow way, as without a build, and the next build makes a matching tarball.
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { migrate, readMigrations, type Migration } from './migrate.js';
import type { Database } from './database.js';
import { projectRoot } from '../project-root.js';

const require = createRequire(import.meta.url);
/** Changes when the way the tarball is made changes, so that older tarballs stop matching. */
const RECIPE = 'migrated, template databases dropped, extensions pg_trgm unaccent';

/** Where the build keeps the tarballs (beside the compiled code, in the git-ignored dist/). */
export const TEMPLATE_DIR = path.join(projectRoot(), 'dist', 'pglite-template');

function pgliteVersion(): string {
  // The package's exports do not include its package.json: find it above the entry point.
  let dir = path.dirname(require.resolve('@electric-sql/pglite'));
  while (!fs.existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  return (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The tarball that matches this PGlite and these migrations (it may not exist). */
export function templateFile(migrations: Migration[] = readMigrations(), dir = TEMPLATE_DIR): string {
  const hash = crypto.createHash('sha256').update(`${RECIPE}\npglite ${pgliteVersion()}\n`);
  for (const m of migrations) hash.update(`${m.name} ${m.checksum}\n`);
  return path.join(dir, `${hash.digest('hex').slice(0, 16)}.tar.gz`);
}

/** The matching tarball's bytes, when the build made one. */
export function readTemplate(): Blob | undefined {
  try {
    return new Blob([fs.readFileSync(templateFile())]);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Makes the matching tarball unless it exists, and removes tarballs that no longer match. Returns its path and
 * whether it was made now.
 */
export async function ensureTemplate(dir = TEMPLATE_DIR): Promise<{ file: string; made: boolean }> {
  const migrations = readMigrations();
  const file = templateFile(migrations, dir);
  if (fs.existsSync(file)) return { file, made: false };
  // Loaded here, not at the top: the build checks for the tarball on every `npm start` and needs no PGlite for that.
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLITE_EXTENSIONS } = await import('./pglite-extensions.js');
  const { embeddedStartParams } = await import('./embedded-start.js');
  const lite = new PGlite({ extensions: PGLITE_EXTENSIONS, startParams: embeddedStartParams() });
  try {
    await lite.waitReady;
    // The migrator needs one session; an in-memory PGlite is one.
    const session = {
      exec: async (sql: string) => {
        await lite.exec(sql);
      },
      query: async <R>(sql: string, params?: unknown[]) => (await lite.query<R>(sql, params)).rows,
    };
    await migrate({ session: (fn) => fn(session) } as Pick<Database, 'session'> as Database, migrations);
    await lite.exec(`UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')`);
    await lite.exec('DROP DATABASE template0');
    await lite.exec('DROP DATABASE template1');
    const tarball = await lite.dumpDataDir('gzip');
    fs.mkdirSync(dir, { recursive: true });
    for (const old of fs.readdirSync(dir)) fs.rmSync(path.join(dir, old), { force: true });
    // Written under another name first: a start never sees half a file.
    fs.writeFileSync(`${file}.tmp`, Buffer.from(await tarball.arrayBuffer()));
    fs.renameSync(`${file}.tmp`, file);
  } finally {
    await lite.close();
  }
  return { file, made: true };
}
