// Every environment variable the service reads, parsed and validated in one place, and the API's fixed limits.
import path from 'node:path';

/**
 * The embedded database's page cache (EMBEDDED_BUFFERS_MB) unless set. Small, because PGlite zeroes all of it at every
 * start (about 4.5 ms of CPU per MB) and keeps it resident; 16 MB holds a small catalogue's hot pages, and a larger
 * catalogue's other pages come from the operating system's file cache (docs/deploy.md has the figures).
 */
export const EMBEDDED_BUFFERS_MB_DEFAULT = 16;
/** The most EMBEDDED_BUFFERS_MB may ask: the embedded database lives in a 32-bit WebAssembly memory. */
export const EMBEDDED_BUFFERS_MB_MAX = 1024;

/**
 * The API's fixed limits and defaults: part of the contract with clients, so not configurable. Every module, the
 * cost analysis and the REST adapter read them from here; none is written down anywhere else.
 */
export const LIMITS = {
  /** Rows of a page or a connection when the client does not say. */
  defaultPageSize: 20,
  /** The most rows of one page or connection (larger values are clamped, or refused where the field says so). */
  maxPageSize: 100,
  /** The most ids `nodes(ids:)` takes. */
  maxNodes: 100,
  /** Tags on one download, and characters in one tag. */
  maxTags: 20,
  maxTagLength: 50,
  /** Characters in a download's or a category's title, and in a download's tag line. */
  maxTitle: 100,
  maxTagLine: 100,
  /** Characters in a file's label and its file name. */
  maxFileLabel: 100,
  maxFilename: 200,
  /** Characters in a comment. */
  maxCommentMessage: 50_000,
  /** Hashes one lookup by hash takes, and the most files it answers. */
  maxHashes: 100,
  /** Characters in a search query, and words (terms) in it; longer or more answer invalid_input. */
  maxSearchQuery: 200,
  maxSearchTerms: 20,
  /** Entries of each facet of a search (categories, tags, prefixes): the most frequent ones. */
  searchFacetSize: 20,
  /**
   * The most results a search answers: the first this many of the exact matches in the search's order (by relevance:
   * the most downloaded this many, ranked), so that a common word costs a bounded amount of reading, ranking and
   * counting. When more match, the total is this bound and says it is not exact ("at least"), the facets count these
   * results, and no page reaches past them.
   */
  searchMaxResults: 1000,
  /**
   * The last word of a query (a prefix) is looked for as the lexemes of the search documents it starts when they are
   * at most this many (src/modules/downloads/search.ts); a shorter prefix that starts more is matched as a prefix.
   */
  searchPrefixLexemes: 32,
  /** The trigram similarity (0 to 1) a title needs to be offered by the typo fallback. */
  searchTypoSimilarity: 0.3,
  /**
   * The typo fallback offers titles at least this similar, and titles from searchTypoSimilarity on only when there is
   * none (a title that close makes the far ones noise: src/modules/downloads/search.ts).
   */
  searchTypoCloseSimilarity: 0.5,
  /** The typo fallback's corrections of one query word (title words one typo away), the most similar first. */
  searchTypoCorrections: 16,
  /**
   * The typo fallback reads the first this many words of a query (titles holding all of them but one are its
   * candidates: a tsquery of the order of this squared times searchTypoCorrections terms).
   */
  searchTypoWords: 8,
  /** A version's compatible_with: entries, and characters in one; characters in its changelog. */
  maxCompatibleWith: 100,
  maxCompatibleLength: 50,
  maxChangelog: 50_000,
  /** A version's dependencies, and characters in one version range. */
  maxDependencies: 100,
  maxVersionRange: 100,
  /** Hashes one update check takes (each answers at most one entry). */
  maxUpdateHashes: 500,
  /** Dependency resolution: levels followed from the root, versions answered, conflicts and cycles reported. */
  maxResolveDepth: 10,
  maxResolvedVersions: 100,
  maxResolveConflicts: 100,
  maxResolveCycles: 20,
  /** How long a comment's author may edit it without the edit being recorded. */
  commentEditGraceMs: 5 * 60 * 1000,
  /** Characters in the reason of a rejection (approve/reject) and of a report. */
  maxModerationReason: 1_000,
  /** Characters in a review's message and in the owner's reply. */
  maxReviewMessage: 10_000,
  /** Characters in the version string a review names. */
  maxReviewVersion: 50,
  /** A visitor's reads of one download count as one view per this window. */
  viewWindowMs: 10 * 60 * 1000,
  /** How often counted views are added to view_count (a kill -9 loses at most this much). */
  viewFlushMs: 30 * 1000,
  /** Downloads whose counted views one flush transaction adds (src/modules/downloads/views.ts). */
  viewFlushBatch: 500,
  /** A kept answer that shows counters (view and download counts, a key's last use) is given again for at most this
   * long after they changed (src/http/read-cache.ts). */
  readCacheCounterLagMs: 2_000,
  /** Version bumps waiting past which the read cache compacts them, and how often they are compacted anyway. */
  cacheBumpsCompactAt: 1_000,
  cacheBumpsCompactMs: 60 * 1000,
  /** Days one read of a download's daily statistics covers at most, and the days it covers by default. */
  maxStatsDays: 366,
  defaultStatsDays: 30,
  /** Visitor windows kept in memory per instance; past it the oldest are forgotten. */
  maxViewVisitors: 200_000,
  /** Characters in a webhook's URL. */
  maxWebhookUrl: 2000,
  /** Webhooks one owner (a user, or a super-user key) may have. */
  maxWebhooksPerOwner: 100,
  /** A delivery attempt is cut after this long (connect, answer and body together). */
  webhookTimeoutMs: 10_000,
  /** Bytes of a receiver's answer that are read; past it the attempt is cut and counted failed. */
  webhookMaxResponseBytes: 64 * 1024,
  /** Seconds before each retry of a failed delivery (then it is failed): ≈5 s, 30 s, 2 min, 10 min, 1 h, 6 h. */
  webhookRetrySeconds: [5, 30, 120, 600, 3600, 21600],
  /** A webhook whose deliveries have failed for this long, without a success, is deactivated. */
  webhookDeactivateAfterMs: 3 * 24 * 3600 * 1000,
  /** The outbox is polled this often when no write of this instance wakes the dispatcher (other instances' writes). */
  outboxPollMs: 500,
  /** Dispatched outbox rows, and finished deliveries with their attempts, are pruned after this long. */
  outboxRetentionMs: 7 * 24 * 3600 * 1000,
} as const;

export type StorageKind = 'local' | 's3';

/** The languages PostgreSQL ships a text search configuration for (SEARCH_LANGUAGE); `simple` stems nothing. */
export const SEARCH_LANGUAGES = [
  'simple',
  'arabic',
  'armenian',
  'basque',
  'catalan',
  'danish',
  'dutch',
  'english',
  'finnish',
  'french',
  'german',
  'greek',
  'hindi',
  'hungarian',
  'indonesian',
  'irish',
  'italian',
  'lithuanian',
  'nepali',
  'norwegian',
  'portuguese',
  'romanian',
  'russian',
  'serbian',
  'spanish',
  'swedish',
  'tamil',
  'turkish',
  'yiddish',
] as const;
export type SearchLanguage = (typeof SEARCH_LANGUAGES)[number];
export type CategoryDeletePolicy = 'reassign' | 'cascade';

export interface Config {
  port: number;
  host: string;
  baseUrl: string;
  dataDir: string;
  /** PostgreSQL server URL; undefined selects the embedded PGlite database under dataDir/db. */
  databaseUrl?: string;
  databasePoolSize: number;
  /**
   * DATABASE_STATEMENTS_PER_KEY: plain statements (outside transactions) the operations of one key run at once on the
   * PostgreSQL pool while other keys could need the connections; its others wait their turn (src/db/pool.ts: a key
   * alone may go past it while that many connections stay free). 0: not limited.
   */
  databaseStatementsPerKey: number;
  /**
   * EMBEDDED_BUFFERS_MB: the embedded database's page cache (PostgreSQL's shared_buffers), in MB. Allocated and zeroed
   * at every start and resident for the life of the process (src/db/embedded-start.ts); unused with DATABASE_URL.
   */
  embeddedBuffersMb: number;
  storage: StorageKind;
  /** S3-compatible storage settings, when storage is s3. */
  s3?: {
    bucket: string;
    region: string;
    endpoint?: string;
    accessKeyId?: string;
    secretAccessKey?: string;
    forcePathStyle: boolean;
  };
  bootstrapKey?: string;
  categoryDeletePolicy: CategoryDeletePolicy;
  softDeleteRetentionDays: number;
  commentFloodSeconds: number;
  maxUploadBytes: number;
  maxBodyBytes: number;
  externalUrlAllowPrivate: boolean;
  logLevel: string;
  /** SEARCH_LANGUAGE: the PostgreSQL text search language search documents are stemmed in. */
  searchLanguage: SearchLanguage;
  /** How long keys, users and permission tables are cached in-process (0 disables). */
  cacheSeconds: number;
  /** Megabytes of read answers kept while the tables they read are unchanged (src/http/read-cache.ts); 0 turns it off. */
  readCacheMb: number;
  /**
   * READ_CACHE_ADMIT_WINDOW: an answer is kept from the second time it is asked while its key is among this many keys
   * asked once (src/http/read-cache.ts); 0 keeps every answer from the first time.
   */
  readCacheAdmitWindow: number;
  /** Requests a minute per guest or user key (0: no limit). */
  rateLimitPerMinute: number;
  /** Requests a minute per super-user key (0: no limit, the default). */
  rateLimitSuperPerMinute: number;
  /**
   * Webhook delivery: the retry schedule (WEBHOOK_RETRY_SECONDS), an attempt's deadline (WEBHOOK_TIMEOUT_SECONDS; an
   * instance that dies mid-attempt leaves its delivery to the others after twice this and 5 s) and the outbox poll.
   */
  webhooks: { retrySeconds: number[]; timeoutMs: number; pollMs: number };
  /** Redis, shared by the instances (rate-limit counts, subscription events); undefined keeps them in each process. */
  redisUrl?: string;
  /** Put before every Redis channel name: deployments sharing a Redis server need different prefixes. */
  redisChannelPrefix: string;
  /** Uploads (REST and GraphQL multipart) in progress at once; more answer 503 server_busy. */
  maxConcurrentUploads: number;
  /**
   * RESPONSE_BYTES_PER_MINUTE: bytes of answers one guest or user key may receive a minute on this instance (refilled
   * continuously); an operation sets aside GRAPHQL_MAX_RESPONSE_BYTES of it while it runs (src/http/response-allowance.ts). 0: no limit.
   */
  responseBytesPerMinute: number;
  /** Operations executing at once; past it they wait in a fair queue per client (src/http/fair-share.ts). 0: no limit. */
  maxConcurrentOperations: number;
  /** Non-file fields of one multipart request. */
  maxMultipartFields: number;
  /** REFUSED_BODY_DRAIN_BYTES: how much of a refused request's body is read and dropped so the sender reads the answer (src/input/drain.ts). */
  refusedBodyDrainBytes: number;
  /** Seconds without a request after which memory grown under load is given back (src/http/idle-memory.ts); 0: never. */
  memoryReleaseIdleSeconds: number;
  /** HEAP_GROWTH_PERCENT: how far V8's heap may grow past what is live before a full collection (src/http/heap-growth.ts); 0: V8's own. */
  heapGrowthPercent: number;
  /** Origins allowed by CORS: empty (CORS off), a list, or ['*'] (any origin, never with credentials). */
  corsOrigins: string[];
  /** HTTP server deadlines, in seconds (see docs/security.md). */
  http: {
    headersTimeout: number;
    bodyTimeout: number;
    requestTimeout: number;
    idleTimeout: number;
    keepAliveTimeout: number;
  };
  /** The whole fetch of an external URL (redirects and body), in seconds; between body bytes: externalUrlIdleSeconds. */
  externalUrlDeadlineSeconds: number;
  externalUrlIdleSeconds: number;
  /** Failed external-URL probes one API key may cause per minute; more answer 429 rate_limited. */
  failedProbesPerMinute: number;
  /**
   * CURSOR_SECRET: what cursors are sealed with (at least 32 characters), the same on every instance; unset, a secret
   * generated once and kept in the database (server_secrets) is used.
   */
  cursorSecret?: string;
  /** Open subscription streams per API key, and per instance; past either a new one answers 429 rate_limited. */
  subscriptionsPerKey: number;
  subscriptionsMax: number;
  /** Lets instances with different local storage directories share one database (STORAGE=local). */
  allowSplitStorage: boolean;
  /** METRICS: who may read GET /metrics. */
  metrics: MetricsAccess;
  /** Limits every GraphQL operation is checked against before it runs (see src/graphql/limits.ts). */
  graphql: GraphqlLimits & {
    /** JSON file of trusted documents `{ "<sha256>": "<document>" }`, loaded at start. */
    persistedDocumentsPath?: string;
    /** Refuse any document that is not one of the trusted documents. */
    trustedDocumentsOnly: boolean;
    /** APQ_MAX_DOCUMENTS: documents registered by automatic persisted queries kept per instance (LRU); 0 turns them off. */
    apqMaxDocuments: number;
  };
}

export interface GraphqlLimits {
  maxCost: number;
  maxDepth: number;
  maxAliases: number;
  maxTokens: number;
  /** Execution deadline in milliseconds. */
  timeoutMs: number;
  /** The most bytes one operation's result may grow to (counted as its values resolve); past it the operation stops. Unset: no limit. */
  maxResponseBytes?: number;
}

export class ConfigError extends Error {}

/** Who may read GET /metrics: a super-user key (`key`), anyone (`open`), or nobody (`off`: no endpoint). */
export type MetricsAccess = 'key' | 'open' | 'off';

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min)
    throw new ConfigError(`${name} must be a whole number ≥ ${min}, got "${raw}"`);
  return Number(raw);
}

function list(env: NodeJS.ProcessEnv, name: string): string[] {
  return (env[name] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** CORS_ORIGINS: `*`, or a comma list of origins (scheme://host[:port], no path). */
function origins(env: NodeJS.ProcessEnv): string[] {
  const values = list(env, 'CORS_ORIGINS');
  if (values.includes('*')) {
    if (values.length > 1) throw new ConfigError('CORS_ORIGINS is either * or a list of origins, not both');
    return ['*'];
  }
  return values.map((v) => {
    let u: URL;
    try {
      u = new URL(v);
    } catch {
      throw new ConfigError(`CORS_ORIGINS must list origins like https://app.example.com, got "${v}"`);
    }
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== v.replace(/\/$/, '')) {
      throw new ConfigError(`CORS_ORIGINS must list origins like https://app.example.com (no path), got "${v}"`);
    }
    return u.origin;
  });
}

/** WEBHOOK_RETRY_SECONDS: the delays before each retry of a failed delivery, comma-separated seconds. */
function retrySchedule(env: NodeJS.ProcessEnv): number[] {
  const raw = env.WEBHOOK_RETRY_SECONDS;
  if (raw === undefined || raw.trim() === '') return [...LIMITS.webhookRetrySeconds];
  return raw.split(',').map((v) => {
    const n = Number(v.trim());
    if (!/^\d+$/.test(v.trim()) || n > 86_400 * 7)
      throw new ConfigError(`WEBHOOK_RETRY_SECONDS must list whole seconds (up to a week), got "${raw}"`);
    return n;
  });
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!values.includes(raw as T)) throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
}

function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = (env[name] ?? '').toLowerCase();
  if (raw === '' || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new ConfigError(`${name} must be 1 or 0, got "${env[name]}"`);
}

/** The embedded database's page cache in MB: at least 1, at most EMBEDDED_BUFFERS_MB_MAX (PGlite's memory is 32-bit). */
function embeddedBuffersMb(env: NodeJS.ProcessEnv): number {
  const mb = int(env, 'EMBEDDED_BUFFERS_MB', EMBEDDED_BUFFERS_MB_DEFAULT, 1);
  if (mb > EMBEDDED_BUFFERS_MB_MAX)
    throw new ConfigError(
      `EMBEDDED_BUFFERS_MB must be at most ${EMBEDDED_BUFFERS_MB_MAX} (the embedded database runs in a 32-bit WebAssembly memory), got "${env.EMBEDDED_BUFFERS_MB}"`,
    );
  return mb;
}

/** METRICS: key (default), open or off; 1 and 0 are read as open and off. */
function metricsAccess(env: NodeJS.ProcessEnv): MetricsAccess {
  const raw = (env.METRICS ?? '').trim().toLowerCase();
  const value = raw === '1' ? 'open' : raw === '0' ? 'off' : raw;
  return oneOf({ METRICS: value }, 'METRICS', ['key', 'open', 'off'] as const, 'key');
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const port = int(env, 'PORT', 3000);
  if (port > 65535) throw new ConfigError(`PORT must be a port number from 0 to 65535, got "${env.PORT}"`);
  const dataDir = path.resolve(env.DATA_DIR || './data');
  const config: Config = {
    port,
    host: env.HOST || '127.0.0.1',
    baseUrl: (env.BASE_URL || `http://localhost:${port}`).replace(/\/+$/, ''),
    dataDir,
    databaseUrl: env.DATABASE_URL || undefined,
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', 10, 1),
    databaseStatementsPerKey: int(env, 'DATABASE_STATEMENTS_PER_KEY', 3),
    embeddedBuffersMb: embeddedBuffersMb(env),
    storage: oneOf(env, 'STORAGE', ['local', 's3'] as const, 'local'),
    bootstrapKey: env.DM_BOOTSTRAP_KEY || undefined,
    categoryDeletePolicy: oneOf(env, 'CATEGORY_DELETE_POLICY', ['reassign', 'cascade'] as const, 'reassign'),
    softDeleteRetentionDays: int(env, 'SOFT_DELETE_RETENTION_DAYS', 30),
    commentFloodSeconds: int(env, 'COMMENT_FLOOD_SECONDS', 10),
    maxUploadBytes: int(env, 'MAX_UPLOAD_BYTES', 2 * 1024 ** 3, 1),
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1),
    externalUrlAllowPrivate: flag(env, 'EXTERNAL_URL_ALLOW_PRIVATE'),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    searchLanguage: oneOf(env, 'SEARCH_LANGUAGE', SEARCH_LANGUAGES, 'english'),
    cacheSeconds: int(env, 'CACHE_SECONDS', 5),
    readCacheMb: int(env, 'READ_CACHE_MB', 64),
    readCacheAdmitWindow: int(env, 'READ_CACHE_ADMIT_WINDOW', 1_000),
    rateLimitPerMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 600),
    rateLimitSuperPerMinute: int(env, 'RATE_LIMIT_SUPER_PER_MINUTE', 0),
    webhooks: {
      retrySeconds: retrySchedule(env),
      timeoutMs: int(env, 'WEBHOOK_TIMEOUT_SECONDS', LIMITS.webhookTimeoutMs / 1000, 1) * 1000,
      pollMs: LIMITS.outboxPollMs,
    },
    redisUrl: env.REDIS_URL || undefined,
    redisChannelPrefix: env.REDIS_CHANNEL_PREFIX ?? 'dcs:',
    maxConcurrentUploads: int(env, 'MAX_CONCURRENT_UPLOADS', 16, 1),
    maxConcurrentOperations: int(env, 'MAX_CONCURRENT_OPERATIONS', 8),
    responseBytesPerMinute: int(env, 'RESPONSE_BYTES_PER_MINUTE', 64 * 1024 * 1024),
    maxMultipartFields: int(env, 'MAX_MULTIPART_FIELDS', 100, 1),
    refusedBodyDrainBytes: int(env, 'REFUSED_BODY_DRAIN_BYTES', 16 * 1024 * 1024, 0),
    memoryReleaseIdleSeconds: int(env, 'MEMORY_RELEASE_IDLE_SECONDS', 10),
    heapGrowthPercent: int(env, 'HEAP_GROWTH_PERCENT', 50),
    corsOrigins: origins(env),
    http: {
      headersTimeout: int(env, 'HTTP_HEADERS_TIMEOUT_SECONDS', 10, 1),
      bodyTimeout: int(env, 'HTTP_BODY_TIMEOUT_SECONDS', 30, 1),
      requestTimeout: int(env, 'HTTP_REQUEST_TIMEOUT_SECONDS', 3600, 1),
      idleTimeout: int(env, 'HTTP_IDLE_TIMEOUT_SECONDS', 30, 1),
      keepAliveTimeout: int(env, 'HTTP_KEEP_ALIVE_SECONDS', 5, 1),
    },
    externalUrlDeadlineSeconds: int(env, 'EXTERNAL_URL_DEADLINE_SECONDS', 300, 1),
    externalUrlIdleSeconds: int(env, 'EXTERNAL_URL_IDLE_SECONDS', 10, 1),
    failedProbesPerMinute: int(env, 'EXTERNAL_URL_FAILED_PROBES_PER_MINUTE', 10, 1),
    allowSplitStorage: flag(env, 'ALLOW_SPLIT_STORAGE'),
    cursorSecret: env.CURSOR_SECRET || undefined,
    subscriptionsPerKey: int(env, 'SUBSCRIPTIONS_PER_KEY', 20, 1),
    subscriptionsMax: int(env, 'SUBSCRIPTIONS_MAX', 10000, 1),
    metrics: metricsAccess(env),
    graphql: {
      maxCost: int(env, 'GRAPHQL_MAX_COST', 10000, 1),
      maxDepth: int(env, 'GRAPHQL_MAX_DEPTH', 15, 1),
      maxAliases: int(env, 'GRAPHQL_MAX_ALIASES', 30, 0),
      maxTokens: int(env, 'GRAPHQL_MAX_TOKENS', 10000, 1),
      timeoutMs: int(env, 'GRAPHQL_TIMEOUT_MS', 10000, 1),
      maxResponseBytes: int(env, 'GRAPHQL_MAX_RESPONSE_BYTES', 16 * 1024 * 1024, 1024),
      persistedDocumentsPath: env.GRAPHQL_PERSISTED_DOCUMENTS
        ? path.resolve(env.GRAPHQL_PERSISTED_DOCUMENTS)
        : undefined,
      trustedDocumentsOnly: flag(env, 'GRAPHQL_TRUSTED_DOCUMENTS_ONLY'),
      apqMaxDocuments: int(env, 'APQ_MAX_DOCUMENTS', 1000),
    },
    ...overrides,
  };
  if (config.storage === 's3' && !config.s3) {
    if (!env.S3_BUCKET)
      throw new ConfigError(
        'STORAGE=s3 needs S3_BUCKET (and S3_REGION, S3_ENDPOINT for non-AWS servers, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY).',
      );
    config.s3 = {
      bucket: env.S3_BUCKET,
      region: env.S3_REGION || 'us-east-1',
      endpoint: env.S3_ENDPOINT || undefined,
      accessKeyId: env.S3_ACCESS_KEY_ID || undefined,
      secretAccessKey: env.S3_SECRET_ACCESS_KEY || undefined,
      forcePathStyle: env.S3_FORCE_PATH_STYLE ? flag(env, 'S3_FORCE_PATH_STYLE') : Boolean(env.S3_ENDPOINT),
    };
  }
  if (config.redisUrl && !/^rediss?:\/\//.test(config.redisUrl)) {
    throw new ConfigError('REDIS_URL must start with redis:// or rediss://');
  }
  if (config.http.headersTimeout > config.http.requestTimeout) {
    throw new ConfigError('HTTP_HEADERS_TIMEOUT_SECONDS must not exceed HTTP_REQUEST_TIMEOUT_SECONDS');
  }
  if (config.graphql.trustedDocumentsOnly && !config.graphql.persistedDocumentsPath) {
    throw new ConfigError(
      'GRAPHQL_TRUSTED_DOCUMENTS_ONLY=1 needs GRAPHQL_PERSISTED_DOCUMENTS (the file of trusted documents); without it /graphql would refuse every request.',
    );
  }
  if (config.databaseUrl && !/^postgres(ql)?:\/\//.test(config.databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://');
  }
  if (config.redisUrl && !/^rediss?:\/\//.test(config.redisUrl))
    throw new ConfigError('REDIS_URL must start with redis:// or rediss://');
  if (config.cursorSecret !== undefined && config.cursorSecret.length < 32) {
    throw new ConfigError(
      'CURSOR_SECRET must be at least 32 characters (for example the output of `openssl rand -hex 32`), the same on every instance.',
    );
  }
  return config;
}
