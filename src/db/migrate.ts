// Applies prisma/migrations/*/migration.sql in order, recorded in Prisma's own _prisma_migrations
// table, under a PostgreSQL advisory lock so several instances may start at once.
// (`prisma migrate deploy` cannot be used over driver adapters on a server: see docs/architecture.md.)
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Database } from './database.js';
import { projectRoot } from '../project-root.js';

export const MIGRATIONS_DIR = path.join(projectRoot(), 'prisma', 'migrations');
const LOCK_ID = 72_640_331; // arbitrary, constant: "the migrator"

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && fs.existsSync(path.join(dir, e.name, 'migration.sql')))
    .map((e) => e.name)
    .sort()
    .map((name) => {
      const sql = fs.readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: crypto.createHash('sha256').update(sql).digest('hex') };
    });
}

/** Returns the names of the migrations it applied. */
export async function migrate(db: Database, migrations = readMigrations()): Promise<string[]> {
  return db.session(async (s) => {
    await s.query('SELECT pg_advisory_lock($1)', [LOCK_ID]);
    try {
      await s.exec(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
        "id" VARCHAR(36) PRIMARY KEY NOT NULL,
        "checksum" VARCHAR(64) NOT NULL,
        "finished_at" TIMESTAMPTZ,
        "migration_name" VARCHAR(255) NOT NULL,
        "logs" TEXT,
        "rolled_back_at" TIMESTAMPTZ,
        "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
        "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`);
      const done = await s.query<{ migration_name: string; checksum: string }>(
        'SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
      );
      const applied = new Map(done.map((r) => [r.migration_name, r.checksum]));
      const ran: string[] = [];
      for (const m of migrations) {
        const previous = applied.get(m.name);
        if (previous !== undefined) {
          if (previous !== m.checksum) {
            throw new Error(
              `Migration ${m.name} was changed after it was applied (checksum differs); add a new migration instead.`,
            );
          }
          continue;
        }
        await s.exec('BEGIN');
        try {
          await s.exec(m.sql);
          await s.query(
            `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count)
             VALUES ($1, $2, now(), $3, 1)`,
            [crypto.randomUUID(), m.checksum, m.name],
          );
          await s.exec('COMMIT');
        } catch (err) {
          await s.exec('ROLLBACK');
          throw new Error(`Migration ${m.name} failed: ${(err as Error).message}`);
        }
        ran.push(m.name);
      }
      return ran;
    } finally {
      await s.query('SELECT pg_advisory_unlock($1)', [LOCK_ID]);
    }
  });
}
