// Prisma CLI configuration: the WebAssembly schema engine over an embedded PGlite directory,
// so `prisma migrate dev` / `prisma migrate diff` work offline. The service itself applies
// migrations with src/db/migrate.ts; this file is only for authoring them.
import { defineConfig, type PrismaConfig } from 'prisma/config';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PGLITE_EXTENSIONS } from './src/db/pglite-extensions.js';

export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  // (cast: the adapter pins an older @prisma/driver-adapter-utils whose types differ, not its behaviour)
  adapter: async () =>
    new PrismaPGlite(
      new PGlite(process.env.PRISMA_DEV_DB_DIR ?? '.prisma-dev-db', { extensions: PGLITE_EXTENSIONS }),
    ) as unknown as Awaited<ReturnType<Extract<PrismaConfig, { adapter: unknown }>['adapter']>>,
});
