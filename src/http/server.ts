// The HTTP edge: one Yoga instance serves /graphql (with GraphiQL), /api/* (the REST adapter plugin),
// /healthz and /readyz.
import type http from 'node:http';
import { createYoga } from 'graphql-yoga';
import { GraphQLError, type GraphQLSchema } from 'graphql';
import type { Logger } from '../log.js';
import type { Context, Services } from '../graphql/context.js';
import { createContext } from '../graphql/context.js';
import { visitorFromHeaders } from '../auth/visitor.js';
import { hashKey } from '../auth/keys.js';
import { ClientGone, databaseConflict, databaseUnavailable, isClientGone } from '../errors.js';
import { restAdapter } from '../../rest-adapter/plugin.js';
import { routes } from '../../rest-adapter/routes.js';
import {
  bodyLimitPlugin,
  contractCodesPlugin,
  healthPlugin,
  requestLogPlugin,
  unsupportedMediaTypePlugin,
} from './plugins.js';
import { graphqlUploadPlugin, uploadReceiver } from './uploads.js';
import { fileDataPlugin } from '../modules/files/index.js';
import type { RateLimits } from './rate-limit.js';
import { httpPolicyPlugin } from './security-headers.js';
import { notFoundPlugin, pagesPlugin, renderGraphiQLPage } from './pages.js';
import { wholeNumbersPlugin } from '../graphql/whole-numbers.js';
import { useDeferStream } from '@graphql-yoga/plugin-defer-stream';
import { metricsPlugin } from './metrics.js';
import type { EventDispatcher } from '../jobs/events.js';
import type { Database } from '../db/client.js';
import { OPERATION_SLOT, type Carrier } from '../db/operation-scope.js';
import type { OperationSignal } from '../db/operation-signal.js';
import { textInputPlugin } from '../input/text.js';
import { UploadSlots } from './upload-slots.js';
import { uploadPrecheck } from './upload-precheck.js';
import { requireScopes } from '../auth/scopes.js';
import { operationLimitsPlugin } from '../graphql/limits.js';
import { countResponseBytes } from '../graphql/response-size.js';
import { CompiledOperations, compiledExecutionPlugin } from '../graphql/compiled.js';
import { FairShare, admitOperation, fairSharePlugin } from './fair-share.js';
import { ResponseAllowance } from './response-allowance.js';
import { graphqlStatusPlugin } from './statuses.js';
import { trustedDocumentsPlugins, type TrustedDocuments } from '../graphql/trusted-documents.js';
import { subscriptionTransportPlugin } from './subscriptions.js';
import { SubscriptionSlots, subscriptionSlotsPlugin } from './subscription-slots.js';
import { GraphqlAnswers, readCachePlugin, type ReadCache } from './read-cache.js';
import { KnownQueries } from './known-queries.js';
import { CacheScopes } from './cache-scope.js';

const SERVER_ERROR = 'An unexpected error occurred. It has been logged.';

const DEFAULT_QUERY = `# Paste your API key in the bar above, then run this query (the ▶ button or Ctrl-Enter).
# The Docs pane (book icon) lists every query and mutation the key's scopes allow.
query Start {
  viewer { userId username isSuperKey scopes }
  categories(perPage: 10) {
    nodes { categoryId parentCategoryId title downloadCount }
    pagination { page perPage total lastPage }
  }
}
`;

export interface HttpOptions {
  schema: GraphQLSchema;
  services: Services;
  ping(): Promise<void>;
  /** The database's connection counts, for /metrics. */
  db: Pick<Database, 'connections' | 'kind' | 'sharedReadCounts'>;
  log: Logger;
  rateLimits: RateLimits;
  /** Persisted documents by SHA-256 (src/graphql/trusted-documents.ts). */
  trustedDocuments?: TrustedDocuments;
  /** Answers to reads, given again while the tables they read are unchanged (src/http/read-cache.ts). */
  readCache: ReadCache;
  /** The outbox dispatcher, for /metrics (queue depth, delivery latency, failures). */
  dispatcher?: EventDispatcher;
}

/** The request handler of the service (the server that listens is made by app.ts, before the database is touched). */
export function createRequestHandler({
  schema,
  services,
  ping,
  db,
  log,
  rateLimits,
  trustedDocuments = new Map(),
  readCache,
  dispatcher,
}: HttpOptions): http.RequestListener {
  const contextFor = async (request: Request) => {
    const visitor = await visitorFromHeaders(services, request.headers, services.groups, services.auth);
    await rateLimits.consume(request, visitor, hashKey(request.headers.get('forum-api-key') ?? ''));
    return createContext(services, visitor);
  };

  // A client that went away is not a defect: one info line, no stack. Everything else unexpected is logged at error.
  const clientGone = (err: unknown) => {
    if (!isClientGone(err)) return false;
    log.info({ reason: 'client went away' }, 'request abandoned: the client went away before the answer');
    return true;
  };
  const onUnexpectedError = (err: unknown) => {
    if (!clientGone(err)) log.error({ err }, 'unexpected error');
  };
  // A database outage is logged once a second at most (every request fails the same way meanwhile), at warn: it is
  // not a defect of the service, and it answers 503 service_unavailable.
  let outageLogged = 0;
  const outage = (err: unknown) => {
    if (Date.now() - outageLogged < 1000) return;
    outageLogged = Date.now();
    log.warn(
      { reason: err instanceof Error ? err.message : String(err) },
      'database unreachable: answered service_unavailable',
    );
  };
  const { config } = services;
  const slots = new UploadSlots(config.maxConcurrentUploads);
  const streams = new SubscriptionSlots(config.subscriptionsPerKey, config.subscriptionsMax);
  // The embedded database runs operations on the event loop itself: one at a time, a turn each (fair-share.ts).
  const shares = new FairShare(config.maxConcurrentOperations, { serial: db.kind === 'pglite' });
  // The bytes of answers each key may receive a minute (RESPONSE_BYTES_PER_MINUTE), checked before the fair share.
  const allowance = new ResponseAllowance(config.responseBytesPerMinute, config.graphql.maxResponseBytes);
  const compiled = new CompiledOperations(undefined, (reason, operationName) =>
    log.warn(
      { reason: reason instanceof Error ? reason.message : reason, operationName },
      'a /graphql operation runs interpreted: graphql-jit cannot compile it',
    ),
  );
  // Leaf resolvers count the bytes of each result into its operation's budget (GRAPHQL_MAX_RESPONSE_BYTES), on both
  // faces and both executors; done once per schema, in place.
  countResponseBytes(schema);
  // An operation admitted to run: what its answers being computed were seen to read so far was others' (read-cache.ts).
  const admitted = (ctx: unknown) => readCache.started((ctx as { [OPERATION_SLOT]?: Carrier })[OPERATION_SLOT]);
  const admit = async (ctx: unknown, signal: OperationSignal) => {
    const done = await admitOperation(shares, allowance, ctx, signal);
    admitted(ctx);
    return done;
  };
  const restScopes = new CacheScopes(schema);
  const answers = new GraphqlAnswers(readCache);
  const metrics = metricsPlugin({
    access: config.metrics,
    routes,
    db,
    operations: shares,
    executions: compiled.runs,
    knownQueries: {
      get direct() {
        return known.counts.direct;
      },
      get handedBack() {
        return known.counts.handedBack;
      },
    },
    readCache: readCache.counts,
    webhooks: dispatcher,
    isSuperKey: async (request) =>
      (await visitorFromHeaders(services, request.headers, services.groups, services.auth)).isSuper,
  });
  // Queries run before, answered without Yoga's pipeline (src/http/known-queries.ts).
  const known = new KnownQueries({
    schema,
    compiled,
    answers,
    limits: config.graphql,
    maxBodyBytes: config.maxBodyBytes,
    trustedDocuments,
    trustedOnly: config.graphql.trustedDocumentsOnly,
    contextFor,
    admit,
    noteOperation: metrics.noteOperation,
  });
  const yoga = createYoga({
    cors: false, // httpPolicyPlugin answers CORS (CORS_ORIGINS)
    schema,
    // Multipart bodies are streamed by graphqlUploadPlugin (MAX_UPLOAD_BYTES enforced while streaming); other
    // bodies are limited to MAX_BODY_BYTES by bodyLimitPlugin, since Yoga's own limit would cover uploads too.
    multipart: false,
    maxRequestBodySize: false,
    graphqlEndpoint: '/graphql',
    // A persisted document may be named by `documentId` (GraphQL-over-HTTP's persisted documents) as well.
    extraParamNames: ['documentId'],
    landingPage: false,
    // GraphiQL with its assets bundled and served as files by pagesPlugin: it works on machines without internet
    // access, asks for the key, and keeps it for the browser tab only (public/graphiql-start.js).
    renderGraphiQL: renderGraphiQLPage,
    logging: {
      debug: (...a) => log.debug({ yoga: a }),
      info: (...a) => log.info({ yoga: a }),
      warn: (...a) => log.warn({ yoga: a }),
      error: (...a) => log.error({ yoga: a }),
    },
    graphiql: {
      title: 'Downloads Catalogue Service',
      // The key comes from the bar above GraphiQL; a Forum-Api-Key set here overrides it.
      headers: '{}',
      defaultQuery: DEFAULT_QUERY,
      shouldPersistHeaders: false,
    },
    context: ({ request }) => known.contextFor(request),
    maskedErrors: {
      maskError(error) {
        if (error instanceof GraphQLError) {
          const original = error.originalError;
          if (!original || original instanceof GraphQLError) {
            return error; // contract errors, and bad input (coded by contractCodesPlugin)
          }
          const busy = databaseConflict(original);
          if (busy) {
            log.warn({ err: original, path: error.path }, 'a write gave way to a concurrent one: answered server_busy');
            return new GraphQLError(busy.message, {
              nodes: error.nodes,
              path: error.path,
              extensions: busy.extensions,
            });
          }
          const down = databaseUnavailable(original);
          if (down) {
            outage(original);
            return new GraphQLError(down.message, {
              nodes: error.nodes,
              path: error.path,
              extensions: down.extensions,
            });
          }
          if (clientGone(original)) return new ClientGone();
          log.error({ err: original, path: error.path }, 'unexpected error');
          return new GraphQLError(SERVER_ERROR, {
            nodes: error.nodes,
            path: error.path,
            extensions: { code: 'server_error' },
          });
        }
        const down = databaseUnavailable(error);
        if (down) {
          outage(error);
          return new GraphQLError(down.message, { extensions: down.extensions });
        }
        if (clientGone(error)) return new ClientGone();
        log.error({ err: error }, 'unexpected error');
        return new GraphQLError(SERVER_ERROR, { extensions: { code: 'server_error', http: { status: 500 } } });
      },
    },
    plugins: [
      requestLogPlugin(log),
      rateLimits.plugin(),
      httpPolicyPlugin(config.corsOrigins),
      healthPlugin(ping, log),
      pagesPlugin({ schema, routes }),
      ...trustedDocumentsPlugins(
        trustedDocuments,
        services.config.graphql.trustedDocumentsOnly,
        services.config.graphql.apqMaxDocuments,
      ),
      useDeferStream(), // @defer / @stream (the directives are in the schema): parts as multipart/mixed or SSE
      compiledExecutionPlugin(compiled), // first of the execution wrappers: it replaces the executor itself
      fairSharePlugin(shares, allowance, admitted), // before operationLimitsPlugin: its deadline covers the wait for a slot
      known.executionPlugin(), // after fairSharePlugin, before operationLimitsPlugin
      operationLimitsPlugin(services.config.graphql),
      wholeNumbersPlugin(), // ids below 1, negative numbers: refused before execution, as the REST face does
      readCachePlugin(answers), // after the limits: a query refused for its cost is refused, kept or not
      contractCodesPlugin(),
      graphqlStatusPlugin(),
      subscriptionTransportPlugin(),
      subscriptionSlotsPlugin(streams), // after operationLimitsPlugin: a subscription over the limits takes no slot
      textInputPlugin(),
      // After contractCodesPlugin (errors are counted by their final code), before the plugins that answer routes.
      metrics,
      known.requestPlugin(), // after the metrics' start of the request: it may answer it
      graphqlUploadPlugin({
        maxFieldBytes: config.maxBodyBytes,
        contextFor,
        slots,
        receive: uploadReceiver(services.storage, config.maxUploadBytes),
        drainBytes: config.refusedBodyDrainBytes,
      }),
      bodyLimitPlugin(services.config.maxBodyBytes),
      unsupportedMediaTypePlugin(), // after every parser: a body none of them takes
      fileDataPlugin(contextFor, onUnexpectedError),
      restAdapter({
        schema,
        routes,
        contextFor,
        maxBodyBytes: config.maxBodyBytes,
        maxFields: config.maxMultipartFields,
        drainBytes: config.refusedBodyDrainBytes,
        requireScopes: (ctx, scopes) =>
          requireScopes((ctx as { visitor: { scopes: ReadonlySet<string> } }).visitor, scopes),
        beforeUpload: uploadPrecheck,
        acquireUploadSlot: () => slots.acquire(),
        admit,
        limits: config.graphql,
        readCache: readCache.enabled
          ? {
              lookup: (ctx, key, operation) =>
                readCache.lookupFor<Uint8Array>(
                  key,
                  (ctx as Context).visitor,
                  restScopes.scopeOf(operation.document, undefined, operation.variables),
                  (ctx as Context)[OPERATION_SLOT],
                ),
            }
          : undefined,
        receiveUpload: uploadReceiver(services.storage, services.config.maxUploadBytes),
        onUnexpectedError,
      }),
      notFoundPlugin(), // last: whatever no other plugin served
    ],
  });

  return yoga as unknown as http.RequestListener;
}
