// GET /metrics in the Prometheus text format (prom-client), as a Yoga plugin:
// - REST requests by route pattern (the route table's path, never the raw path) and method, with status and latency;
// - GraphQL requests by operation name (at most MAX_OPERATION_NAMES distinct names, then "other"), likewise;
// - errors by the service's code, on both faces;
// - bytes received by uploads (and fetched from external URLs);
// - database connections in use and idle.
// Who may read it is METRICS: `key` (the default: a super-user key), `open` (no key: for a scraper on a private
// network) or `off` (no endpoint).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { Kind, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { ApiError, noPermission, statusOf, toErrorItem } from '../errors.js';
import { ingestedBytes } from '../files/ingest.js';
import type { Database } from '../db/client.js';
import type { MetricsAccess } from '../config.js';
import type { Route } from '../../rest-adapter/routes.js';
import type { EventDispatcher } from '../jobs/events.js';

const MAX_OPERATION_NAMES = 100;
const OPERATION_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const FIRST_OPERATION_NAME = /(?:^|[\s}])(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)/;
const DATA_ROUTE = { pattern: /^\/api\/mc-dm-files\/[^/]+\/data\/?$/, path: '/api/mc-dm-files/:file_id/data/' };
/** Paths outside /api/ and /graphql reported by name; any other is "other". */
const PAGES = new Set(['/', '/healthz', '/readyz', '/metrics', '/site.css']);

export interface MetricsOptions {
  access: MetricsAccess;
  routes: Route[];
  db: Pick<Database, 'connections' | 'sharedReadCounts'>;
  /** Operations executing and waiting for their turn (src/http/fair-share.ts). */
  operations: { readonly inFlight: number; readonly queued: number };
  /** /graphql executions by how they ran (src/graphql/compiled.ts). */
  executions?: { readonly compiled: number; readonly interpreted: number };
  /** /graphql queries answered directly, and handed back to the whole pipeline (src/http/known-queries.ts). */
  knownQueries?: { readonly direct: number; readonly handedBack: number };
  /** Reads answered from the read cache, and looked up there in vain (src/http/read-cache.ts). */
  readCache?: { readonly hit: number; readonly miss: number };
  /** The outbox dispatcher: webhook deliveries waiting, attempts and their failures, commit → first attempt. */
  webhooks?: Pick<EventDispatcher, 'stats' | 'queueDepth'>;
  /** Resolves the request's key (throws 401/403 ApiErrors); metrics then need a super-user key. */
  isSuperKey(request: Request): Promise<boolean>;
}

/** Route patterns as regular expressions, the way the REST adapter matches them. */
function routeMatchers(routes: Route[]): { pattern: RegExp; path: string }[] {
  const paths = [...new Set(routes.map((r) => r.path))];
  return [
    DATA_ROUTE,
    ...paths.map((p) => ({
      pattern: new RegExp(`^${p.replace(/\/+$/, '').replace(/:([a-z_]+)/g, '[^/]+')}/?$`),
      path: p,
    })),
  ];
}

/** The metrics plugin, and how a request answered outside Yoga's execution names its operation. */
export type MetricsPlugin = Plugin & {
  noteOperation(request: Request, document: DocumentNode, operationName: string | null | undefined): void;
};

export function metricsPlugin(opts: MetricsOptions): MetricsPlugin {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'dcs_' });
  const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
  const restRequests = new Counter({
    name: 'dcs_rest_requests_total',
    help: 'REST requests by route pattern, method and status.',
    labelNames: ['route', 'method', 'status'],
    registers: [registry],
  });
  const restSeconds = new Histogram({
    name: 'dcs_rest_request_duration_seconds',
    help: 'REST latency until the response starts, by route pattern and method.',
    labelNames: ['route', 'method'],
    buckets,
    registers: [registry],
  });
  const gqlRequests = new Counter({
    name: 'dcs_graphql_requests_total',
    help: 'GraphQL requests on /graphql by operation name and status.',
    labelNames: ['operation', 'status'],
    registers: [registry],
  });
  const gqlSeconds = new Histogram({
    name: 'dcs_graphql_request_duration_seconds',
    help: 'GraphQL latency until the response starts, by operation name.',
    labelNames: ['operation'],
    buckets,
    registers: [registry],
  });
  const otherRequests = new Counter({
    name: 'dcs_http_other_requests_total',
    help: 'Other requests (pages, health, metrics) by path and status.',
    labelNames: ['path', 'status'],
    registers: [registry],
  });
  const errors = new Counter({
    name: 'dcs_errors_total',
    help: "Errors answered, by face and the service's error code.",
    labelNames: ['face', 'code'],
    registers: [registry],
  });
  // Counters kept elsewhere in the process, read at each scrape: one series per key.
  const countsOf = (name: string, help: string, label: string, read: () => Record<string, number>) =>
    new Counter({
      name,
      help,
      labelNames: [label],
      registers: [registry],
      collect() {
        this.reset();
        for (const [value, count] of Object.entries(read())) this.inc({ [label]: value }, count);
      },
    });
  countsOf(
    'dcs_upload_bytes_total',
    'Bytes received by file ingestion in this process: client uploads (both faces) and fetched external URLs.',
    'source',
    () => ingestedBytes,
  );
  new Gauge({
    name: 'dcs_db_connections',
    help: 'Database connections: in_use, idle, and requests waiting for one (the embedded database is one connection, in use).',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const c = opts.db.connections();
      this.set({ state: 'in_use' }, c.total - c.idle);
      this.set({ state: 'idle' }, c.idle);
      this.set({ state: 'waiting' }, c.waiting);
    },
  });

  new Gauge({
    name: 'dcs_operations',
    help: 'Operations (REST routes and /graphql executions) running, and waiting for a slot past MAX_CONCURRENT_OPERATIONS.',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      this.set({ state: 'running' }, opts.operations.inFlight);
      this.set({ state: 'queued' }, opts.operations.queued);
    },
  });

  countsOf(
    'dcs_graphql_executions_total',
    '/graphql executions by how they ran: compiled (graphql-jit) or interpreted.',
    'mode',
    () => ({ compiled: opts.executions?.compiled ?? 0, interpreted: opts.executions?.interpreted ?? 0 }),
  );
  countsOf(
    'dcs_graphql_known_queries_total',
    '/graphql requests for a query run before: answered directly (without the whole GraphQL pipeline), or handed back to it (an answer with errors, or a refusal).',
    'path',
    () => ({ direct: opts.knownQueries?.direct ?? 0, handed_back: opts.knownQueries?.handedBack ?? 0 }),
  );
  countsOf(
    'dcs_shared_reads_total',
    'Reads by key that may share a statement with those asked for at the same moment (a download by id): the reads, and the statements sent for them.',
    'counted',
    () => {
      const c = opts.db.sharedReadCounts();
      return { read: c.reads, statement: c.statements };
    },
  );
  countsOf(
    'dcs_read_cache_total',
    'Reads (GET routes and /graphql queries) looked up in the read cache: answered from it (hit) or run (miss).',
    'result',
    () => ({ hit: opts.readCache?.hit ?? 0, miss: opts.readCache?.miss ?? 0 }),
  );

  const webhooks = opts.webhooks;
  let lastQueueDepth = 0;
  if (webhooks) {
    new Gauge({
      name: 'dcs_webhook_queue_depth',
      help: 'Webhook deliveries waiting for an attempt (pending: new, or waiting for a retry), on every instance.',
      registers: [registry],
      async collect() {
        // /metrics answers while the database does not (an outage, a long lock): the last depth read, after 0.5 s.
        const read = webhooks.queueDepth().then(
          (n) => (lastQueueDepth = n),
          () => lastQueueDepth,
        );
        const late = new Promise<number>((resolve) => setTimeout(() => resolve(lastQueueDepth), 500).unref());
        this.set(await Promise.race([read, late]));
      },
    });
    countsOf(
      'dcs_webhook_attempts_total',
      'Webhook delivery attempts by this instance, by outcome.',
      'outcome',
      () => ({
        ok: webhooks.stats.attempts - webhooks.stats.failures,
        failed: webhooks.stats.failures,
      }),
    );
    const latency = new Histogram({
      name: 'dcs_webhook_first_attempt_seconds',
      help: "From an event's commit to the first attempt to deliver it to a webhook (this instance's attempts).",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
      registers: [registry],
    });
    webhooks.stats.onFirstAttempt = (seconds) => latency.observe(seconds);
  }

  const matchers = routeMatchers(opts.routes);
  const started = new WeakMap<Request, number>();
  const operations = new WeakMap<Request, string>();
  /** The parameters a request gave, for the label of one refused before execution (read only then). */
  const given = new WeakMap<Request, { query?: unknown; operationName?: string | null }>();
  const seenNames = new Set<string>();
  const operationLabel = (name: string | null | undefined): string => {
    if (!name) return 'anonymous';
    if (!OPERATION_NAME.test(name)) return 'other';
    if (!seenNames.has(name)) {
      if (seenNames.size >= MAX_OPERATION_NAMES) return 'other';
      seenNames.add(name);
    }
    return name;
  };
  /** The name the parameters give, else the first one their document declares (undefined: no parameters were read). */
  const declaredLabel = (params: { query?: unknown; operationName?: string | null } | undefined) => {
    if (!params) return undefined;
    const declared =
      typeof params.query === 'string'
        ? FIRST_OPERATION_NAME.exec(params.query.replace(/#[^\n]*/g, ''))?.[1]
        : undefined;
    return operationLabel(params.operationName ?? declared);
  };
  // The matchers under each resource (the path segment after /api/), in their order: a request tries only its own.
  const segment = (path: string) => path.split('/', 3)[2] ?? '';
  const byResource = new Map<string, { pattern: RegExp; path: string }[]>();
  for (const m of matchers) byResource.set(segment(m.path), [...(byResource.get(segment(m.path)) ?? []), m]);
  const routeOf = (pathname: string) =>
    byResource.get(segment(pathname))?.find((m) => m.pattern.test(pathname))?.path ?? 'unmatched';
  /** The path of each request, from the URL Yoga parsed (read again from request.url for a request it never saw). */
  const paths = new WeakMap<Request, string>();
  const pathOf = (request: Request) => paths.get(request) ?? new URL(request.url).pathname;

  async function serve(request: Request, R: typeof Response): Promise<Response> {
    const text = (status: number, body: string, headers: Record<string, string> = {}) =>
      new R(body, { status, headers: { 'content-type': 'text/plain; charset=utf-8', ...headers } });
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return text(405, `${request.method} is not allowed here; use GET.\n`, { allow: 'GET, HEAD' });
    if (opts.access === 'key') {
      try {
        if (!(await opts.isSuperKey(request)))
          throw noPermission('read the metrics (they need a super-user key, or METRICS=open)');
      } catch (err) {
        const item = toErrorItem(err);
        return new R(JSON.stringify({ errors: [item] }), {
          status: err instanceof ApiError ? statusOf(item.code) : 500,
          headers: { 'content-type': 'application/json; charset=utf-8' },
        });
      }
    }
    return text(200, await registry.metrics(), { 'content-type': registry.contentType, 'cache-control': 'no-store' });
  }

  const noteOperation = (request: Request, document: DocumentNode, operationName: string | null | undefined) => {
    const op = document.definitions.find(
      (d): d is OperationDefinitionNode =>
        d.kind === Kind.OPERATION_DEFINITION && (!operationName || d.name?.value === operationName),
    );
    operations.set(request, operationLabel(op?.name?.value));
  };
  return {
    noteOperation,
    // Not async: a hook that returns no promise costs Yoga's pipeline less, and only /metrics is answered here.
    onRequest({ request, url, endResponse, fetchAPI }) {
      started.set(request, performance.now());
      paths.set(request, url.pathname);
      if (url.pathname === '/metrics' && opts.access !== 'off')
        return serve(request, fetchAPI.Response).then(endResponse);
    },
    onParams({ params, request }) {
      // Kept as they are: the label is taken from the parsed document at execution (onExecute); only a request refused
      // before it (no key, over a limit) is labelled from these, once its answer is counted (declaredLabel).
      given.set(request, params);
    },
    onExecute({ args }) {
      const request = (args.contextValue as { request?: Request } | undefined)?.request;
      if (request) noteOperation(request, args.document as DocumentNode, args.operationName);
    },
    onResultProcess({ result, request }) {
      if (pathOf(request) !== '/graphql') return;
      for (const r of Array.isArray(result) ? result : [result]) {
        for (const e of (r as { errors?: readonly { extensions?: Record<string, unknown> }[] } | undefined)?.errors ??
          []) {
          errors.inc({ face: 'graphql', code: String(e.extensions?.code ?? 'server_error') });
        }
      }
    },
    async onResponse({ request, response }) {
      const t0 = started.get(request);
      const seconds = t0 === undefined ? 0 : (performance.now() - t0) / 1000;
      const pathname = pathOf(request);
      const operation = operations.get(request) ?? declaredLabel(given.get(request)) ?? 'unparsed';
      // Taken out now rather than when the request is collected: the young-generation collector keeps a long-lived
      // WeakMap's values alive through its next run even once their key is garbage (src/graphql/context.ts).
      started.delete(request);
      paths.delete(request);
      operations.delete(request);
      given.delete(request);
      const status = String(response.status);
      if (pathname === '/api' || pathname.startsWith('/api/')) {
        const route =
          pathname === '/api/docs' ||
          pathname === '/api/docs/' ||
          pathname.startsWith('/api/docs/') ||
          pathname === '/api/openapi.json'
            ? null
            : routeOf(pathname);
        if (route === null) {
          otherRequests.inc({ path: pathname.startsWith('/api/docs') ? '/api/docs' : pathname, status });
          return;
        }
        restRequests.inc({ route, method: request.method, status });
        restSeconds.observe({ route, method: request.method }, seconds);
        if (response.status >= 400 && (response.headers.get('content-type') ?? '').startsWith('application/json')) {
          try {
            const body = (await response.clone().json()) as { errors?: { code?: string }[] };
            for (const e of body.errors ?? []) errors.inc({ face: 'rest', code: String(e.code ?? 'server_error') });
          } catch {
            /* not an error envelope */
          }
        }
      } else if (pathname === '/graphql' && !(response.headers.get('content-type') ?? '').startsWith('text/html')) {
        // A request refused before its parameters were read (a malformed body) has no operation: "unparsed".
        gqlRequests.inc({ operation, status });
        gqlSeconds.observe({ operation }, seconds);
      } else {
        otherRequests.inc({
          path: PAGES.has(pathname) ? pathname : pathname === '/graphql' ? '/graphql (GraphiQL)' : 'other',
          status,
        });
      }
    },
  };
}
