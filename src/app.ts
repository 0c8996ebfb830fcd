// Assembles the service: database → migrations → first-start data → HTTP server.
// `main.ts` runs it from the environment; tests run it on a fresh database.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Config } from './config.js';
import { StartError } from './errors.js';
import { openDatabase, targetOf, type Database } from './db/client.js';
import { migrate } from './db/migrate.js';
import { ensureSearchLanguage } from './modules/downloads/index.js';
import { bootstrap } from './modules/accounts/index.js';
import { sharedSecret } from './db/secrets.js';
import { CursorSeal } from './db/keyset.js';
import { createLogger, type Logger } from './log.js';
import { schema } from './modules/index.js';
import type { Services } from './graphql/context.js';
import { ReadCache } from './http/read-cache.js';
import { statementReader } from './db/cache-versions.js';
import { ViewCounter, flushViews } from './modules/downloads/index.js';
import { LIMITS } from './config.js';
import { createRequestHandler } from './http/server.js';
import { releaseMemoryWhenIdle } from './http/idle-memory.js';
import { RateLimits } from './http/rate-limit.js';
import { LocalStorage } from './files/storage/local.js';
// The S3 SDK is loaded only when STORAGE=s3 (it is a large part of the modules a start would otherwise load).
import type { S3Storage } from './files/storage/s3.js';
import { schedulePurge } from './jobs/purge.js';
import { scheduleRevalidation } from './jobs/revalidate.js';
import { scheduleReclaim } from './jobs/reclaim.js';
import { scheduleHashBackfill } from './jobs/file-hashes.js';
import { PermissionCache } from './permissions/load.js';
import { AuthCache } from './auth/visitor.js';
import { LocalChangeFeed, PostgresChangeFeed, type ChangeFeed } from './db/changes.js';
import { registerLocalStorage } from './files/storage/identity.js';
import { sweepTemporaryFiles } from './files/storage/tmp-sweep.js';
import { applyServerTimeouts } from './http/timeouts.js';
import { answerClientErrors } from './http/client-errors.js';
import { loadTrustedDocuments } from './graphql/trusted-documents.js';
import { createEvents } from './events.js';
import { dispatchedSince, EventDispatcher } from './jobs/events.js';
import { webhookRenderer } from '../rest-adapter/render.js';

export interface App {
  url: string;
  server: http.Server;
  db: Database;
  services: Services;
  log: Logger;
  /** The generated bootstrap key, when this start created one. */
  generatedKey?: string;
  /** Answers to reads kept while the tables they read are unchanged (src/http/read-cache.ts). */
  readCache: ReadCache;
  /** Adds the views counted so far to view_count now (it also runs every LIMITS.viewFlushMs, and on close). */
  flushViews(): Promise<void>;
  /** The outbox dispatcher of this instance: subscriptions and webhook deliveries (src/jobs/events.ts). */
  dispatcher: EventDispatcher;
  /**
   * Answers a request in this process, without a socket: the same plugins and routes as over HTTP, except multipart
   * bodies (uploads are streamed from the connection itself, so they need HTTP). Given a URL and its init rather than
   * a Request, the request is made as the HTTP server makes one (Yoga's own Request class: a string body is kept as
   * it is, with its Content-Length, as a client sends it), not as a web-stream body.
   */
  fetch(request: Request | string, init?: RequestInit): Promise<Response>;
  /**
   * Stops accepting connections, lets requests in flight finish for up to `graceMs` (uploads included), then closes
   * what is left, the jobs, the database (releasing the embedded database's lock) and the other connections. The
   * grace bounds the whole: database connections still in use when it ends are closed under their holders.
   */
  close(opts?: { graceMs?: number }): Promise<void>;
}

/** Binds the port before anything is written, so a start that cannot serve leaves no trace (a bootstrap key included). */
async function listen(server: http.Server, config: Config): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const where = `${config.host}:${config.port}`;
      if (err.code === 'EADDRINUSE')
        reject(
          new StartError(
            `Port ${config.port} on ${config.host} is already in use: stop the other process or set PORT.`,
          ),
        );
      else if (err.code === 'EACCES')
        reject(
          new StartError(`Not allowed to listen on ${where}: choose a PORT above 1023 or run with the needed rights.`),
        );
      else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN')
        reject(new StartError(`HOST ${config.host} is not an address of this machine.`));
      else reject(err);
    });
    server.listen(config.port, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
}

export async function startApp(
  config: Config,
  opts: { db?: Database; log?: Logger; loadedAt?: number } = {},
): Promise<App> {
  const log = opts.log ?? createLogger(config.logLevel);
  // Read before anything else: a bad file stops the start with a message naming it.
  const trustedDocuments = loadTrustedDocuments(config.graphql.persistedDocumentsPath, schema);
  // Until the service is assembled, requests are told to come back.
  let handler: http.RequestListener | null = null;
  // Header and request deadlines (set in http/timeouts.ts) are checked this often; Node's default is 30 s.
  const server = http.createServer({ connectionsCheckingInterval: 1000 }, (req, res) => {
    if (handler) return handler(req, res);
    if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      return res.end(JSON.stringify({ status: 'starting' }));
    }
    res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' });
    res.end(
      JSON.stringify({
        errors: [{ code: 'server_starting', message: 'The service is starting; try again in a moment.', params: {} }],
      }),
    );
  });
  applyServerTimeouts(server, config.http);
  answerClientErrors(server);
  const url = await listen(server, config);
  // When each step of the start finished, in ms since the process started (logged with "listening").
  const startup: Record<string, number> = {
    modules: Math.round(opts.loadedAt ?? 0),
    listen: Math.round(performance.now()),
  };
  const mark = (step: string) => {
    startup[step] = Math.round(performance.now());
  };
  let db: Database | undefined = opts.db;
  // What the service opened, closed in reverse order on close() or on a failed start.
  const closers: (() => unknown)[] = [];
  const closeAll = async () => {
    for (const c of closers.splice(0).reverse()) await Promise.resolve(c()).catch(() => {});
  };
  try {
    db ??= await openDatabase(targetOf(config));
    mark('database');
    const database = db;
    const applied = await migrate(db);
    if (applied.length > 0) log.info({ applied }, 'migrations applied');
    if (await ensureSearchLanguage(db, config.searchLanguage))
      log.info({ language: config.searchLanguage }, 'search documents rewritten for SEARCH_LANGUAGE');
    mark('migrations');
    const { groups, generatedKey } = await bootstrap(db, config.bootstrapKey);
    mark('bootstrap');
    const storage: LocalStorage | S3Storage =
      config.storage === 's3'
        ? await import('./files/storage/s3.js').then(
            ({ S3Storage, s3TmpDir }) => new S3Storage({ ...config.s3!, tmpDir: s3TmpDir(config.dataDir) }),
          )
        : new LocalStorage(path.join(config.dataDir, 'files'));
    if (storage instanceof LocalStorage) {
      const storageId = await registerLocalStorage(db.prisma, storage.root, {
        allowSplit: config.allowSplitStorage,
        log,
      });
      log.info({ storageId }, 'local storage registered');
    }
    const swept = await sweepTemporaryFiles(storage.tmpDir, config.http.idleTimeout * 1000);
    if (swept.length > 0) log.info({ removed: swept.length }, 'temporary files left by an earlier run removed');
    const cacheMs = config.cacheSeconds * 1000;
    const feed: ChangeFeed = database.url
      ? new PostgresChangeFeed(
          database.url,
          (channel, payload) => database.query('SELECT pg_notify($1, $2)', [channel, payload]),
          log,
        )
      : new LocalChangeFeed();
    closers.push(() => feed.close());
    if (feed instanceof PostgresChangeFeed) await feed.whenListening();
    const cursors = new CursorSeal(config.cursorSecret ?? (await sharedSecret(db, 'cursor')));
    const services: Services = {
      prisma: db.prisma,
      db,
      config,
      groups,
      storage,
      permissions: new PermissionCache(db.prisma, cacheMs, feed),
      auth: new AuthCache(cacheMs, feed),
      events: createEvents({ url: config.redisUrl, prefix: config.redisChannelPrefix }, log),
      cursors,
    };
    const rateLimits = new RateLimits(
      {
        perMinute: config.rateLimitPerMinute,
        superPerMinute: config.rateLimitSuperPerMinute,
        redisUrl: config.redisUrl,
      },
      log,
    );
    closers.push(() => rateLimits.close());
    // Answers kept while the tables they read are unchanged; emptied by any change announced on the feed (the key and
    // permission caches it would otherwise outlive).
    const readCache = new ReadCache({
      maxBytes: config.readCacheMb * 2 ** 20,
      ttlMs: cacheMs,
      counterLagMs: LIMITS.readCacheCounterLagMs,
      versions: db.cacheVersions,
      readsOf: await statementReader(db),
      compact: db.compactCacheVersions,
      compactAt: LIMITS.cacheBumpsCompactAt,
      admitWindow: config.readCacheAdmitWindow,
    });
    if (readCache.enabled) db.onStatement((sql, operation) => readCache.observe(sql, operation));
    feed.onChange(() => readCache.clear());
    // The version bumps are compacted when reads see many waiting, and at least this often (reads may be off).
    const compactTimer = setInterval(
      () => void database.compactCacheVersions().catch(() => {}),
      LIMITS.cacheBumpsCompactMs,
    );
    compactTimer.unref();
    // Views: counted in memory per request, added to view_count in one transaction per batch (a counters-only
    // write: it evicts only the kept answers that show counters, src/http/read-cache.ts).
    const views = new ViewCounter();
    services.views = views;
    const openDb = db;
    let flushing: Promise<void> = Promise.resolve();
    const flushNow = () => {
      flushing = flushing.then(async () => {
        const counts = views.take();
        if (counts.size === 0) return;
        try {
          await flushViews(openDb.prisma, counts);
        } catch (err) {
          // What the committed batches added is gone from `counts`: the rest is tried again with the next flush.
          views.giveBack(counts);
          log.warn({ err }, 'views not flushed; they are tried again with the next batch');
        }
      });
      return flushing;
    };
    const viewTimer = setInterval(() => void flushNow(), LIMITS.viewFlushMs);
    viewTimer.unref();
    const dispatcher = new EventDispatcher(db, services.events, log, {
      render: webhookRenderer(schema, services),
      retrySeconds: config.webhooks.retrySeconds,
      timeoutMs: config.webhooks.timeoutMs,
      pollMs: config.webhooks.pollMs,
      allowPrivate: config.externalUrlAllowPrivate,
    });
    services.events.onWritten(() => dispatcher.wake());
    // After a Redis outage, what this instance's subscribers missed is read back from the outbox.
    services.events.replayFrom((msAgo) => dispatchedSince(openDb.prisma, msAgo));
    handler = createRequestHandler({
      dispatcher,
      schema,
      services,
      ping: db.ping,
      db,
      log,
      rateLimits,
      trustedDocuments,
      readCache,
    });
    mark('ready');
    log.info({ url, database: db.kind, startup }, 'listening');
    const stopPurge = schedulePurge(db.prisma, storage, config.softDeleteRetentionDays, log);
    const stopRevalidation = scheduleRevalidation(db.prisma, storage, config.externalUrlAllowPrivate, log);
    const stopReclaim = scheduleReclaim(db.prisma, storage, log);
    const stopHashBackfill = scheduleHashBackfill(db.prisma, storage, log);
    dispatcher.start();
    const stopIdleRelease = releaseMemoryWhenIdle(server, {
      idleMs: config.memoryReleaseIdleSeconds * 1000,
      onRelease: (before, after) =>
        log.debug(
          { heapMb: { before: Math.round(before / 2 ** 20), after: Math.round(after / 2 ** 20) } },
          'memory released while idle',
        ),
    });
    return {
      url,
      server,
      db,
      services,
      log,
      generatedKey,
      readCache,
      flushViews: flushNow,
      dispatcher,
      fetch: (request, init) =>
        Promise.resolve(
          (
            handler as unknown as { fetch(r: Request | string, init?: RequestInit): Response | Promise<Response> }
          ).fetch(request, ...(init ? [init] : [])),
        ),
      async close({ graceMs = 0 } = {}) {
        const deadline = Date.now() + graceMs;
        stopPurge();
        stopRevalidation();
        stopReclaim();
        stopHashBackfill();
        stopIdleRelease();
        const drained = new Promise<void>((resolve) => server.close(() => resolve()));
        // Keep-alive connections become idle as their last request ends: close them as they do.
        server.closeIdleConnections?.();
        const idle = setInterval(() => server.closeIdleConnections?.(), 50);
        const cut = setTimeout(() => server.closeAllConnections?.(), graceMs);
        await drained;
        clearInterval(idle);
        clearTimeout(cut);
        clearInterval(viewTimer);
        clearInterval(compactTimer);
        // The views counted since the last flush, within the grace (at least a second): a database that does not
        // answer cannot hold the stop longer.
        await Promise.race([
          flushNow(),
          new Promise((resolve) => setTimeout(resolve, Math.max(1000, deadline - Date.now())).unref()),
        ]);
        await dispatcher.stop();
        await services.events.close();
        if (!(storage instanceof LocalStorage)) storage.destroy();
        await closeAll();
        await database.close({ deadlineMs: Math.max(0, deadline - Date.now()) });
      },
    };
  } catch (err) {
    server.close();
    await closeAll();
    if (!opts.db) await db?.close().catch(() => {});
    throw err;
  }
}
