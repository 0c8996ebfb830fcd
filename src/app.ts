// Assembles the service: database → migrations → first-start data → HTTP server.
// `main.ts` runs it from the environment; tests run it on a fresh database.
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Config } from './config.js';
import { openDatabase, targetOf, type Database } from './db/client.js';
import { Reads } from './db/reads.js';
import { migrate } from './db/migrate.js';
import { bootstrap } from './db/bootstrap.js';
import { createLogger, type Logger } from './log.js';
import { schema } from './schema/index.js';
import type { Services } from './schema/context.js';
import { createHttpServer } from './http/server.js';
import { LocalStorage } from './files/storage/local.js';
import { S3Storage, s3TmpDir } from './files/storage/s3.js';
import { schedulePurge } from './jobs/purge.js';
import { scheduleRevalidation } from './jobs/revalidate.js';
import { PermissionCache } from './permissions/load.js';
import { AuthCache } from './auth/visitor.js';
import { createEvents } from './events.js';

export interface App {
  url: string;
  server: http.Server;
  db: Database;
  services: Services;
  log: Logger;
  /** The generated bootstrap key, when this start created one. */
  generatedKey?: string;
  close(): Promise<void>;
}

export async function startApp(config: Config, opts: { db?: Database; log?: Logger } = {}): Promise<App> {
  const log = opts.log ?? createLogger(config.logLevel);
  const db = opts.db ?? await openDatabase(targetOf(config));
  try {
    const applied = await migrate(db);
    if (applied.length > 0) log.info({ applied }, 'migrations applied');
    const { groups, generatedKey } = await bootstrap(db, config.bootstrapKey);
    const storage = config.storage === 's3'
      ? new S3Storage({ ...config.s3!, tmpDir: s3TmpDir(config.dataDir) })
      : new LocalStorage(path.join(config.dataDir, 'files'));
    const cacheMs = config.cacheSeconds * 1000;
    const services: Services = {
      prisma: db.prisma, reads: new Reads(db), config, groups, storage,
      permissions: new PermissionCache(db.prisma, cacheMs), auth: new AuthCache(cacheMs),
      events: createEvents({ url: config.redisUrl, prefix: config.redisChannelPrefix }, log),
    };
    const server = createHttpServer({ schema, services, ping: db.ping, log });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    log.info({ url, database: db.kind }, 'listening');
    const stopPurge = schedulePurge(db.prisma, storage, config.softDeleteRetentionDays, log);
    const stopRevalidation = scheduleRevalidation(db.prisma, storage, config.externalUrlAllowPrivate, log);
    return {
      url, server, db, services, log, generatedKey,
      async close() {
        stopPurge();
        stopRevalidation();
        server.closeAllConnections?.();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await services.events.close();
        if (storage instanceof S3Storage) storage.destroy();
        await db.close();
      },
    };
  } catch (err) {
    if (!opts.db) await db.close().catch(() => {});
    throw err;
  }
}
