// Every environment variable has a defined answer: a default, a parsed value, or a message naming it.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

describe('configuration', () => {
  it('has the contract defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      baseUrl: 'http://localhost:3000',
      storage: 'local',
      categoryDeletePolicy: 'reassign',
      softDeleteRetentionDays: 30,
      commentFloodSeconds: 10,
      maxUploadBytes: 2 * 1024 ** 3,
      externalUrlAllowPrivate: false,
      cacheSeconds: 5,
      embeddedBuffersMb: 16,
    });
    expect(c.graphql).toEqual({
      maxCost: 10000,
      maxDepth: 15,
      maxAliases: 30,
      maxTokens: 10000,
      timeoutMs: 10000,
      maxResponseBytes: 16777216,
      persistedDocumentsPath: undefined,
      trustedDocumentsOnly: false,
      apqMaxDocuments: 1000,
    });
    expect(c.databaseUrl).toBeUndefined();
    expect(c.dataDir.endsWith('data')).toBe(true);
  });

  it('reads every setting', () => {
    const c = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      BASE_URL: 'https://dl.example.com/',
      DATA_DIR: '/srv/dm',
      DATABASE_URL: 'postgres://u@db/dm',
      CATEGORY_DELETE_POLICY: 'cascade',
      SOFT_DELETE_RETENTION_DAYS: '7',
      COMMENT_FLOOD_SECONDS: '0',
      MAX_UPLOAD_BYTES: '1000',
      MAX_BODY_BYTES: '2000',
      EXTERNAL_URL_ALLOW_PRIVATE: '1',
      CACHE_SECONDS: '0',
      EMBEDDED_BUFFERS_MB: '64',
      DM_BOOTSTRAP_KEY: 'dm_x',
      STORAGE: 's3',
      S3_BUCKET: 'b',
      S3_ENDPOINT: 'http://minio:9000',
      S3_ACCESS_KEY_ID: 'a',
      S3_SECRET_ACCESS_KEY: 's',
    });
    expect(c).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      baseUrl: 'https://dl.example.com',
      dataDir: '/srv/dm',
      databaseUrl: 'postgres://u@db/dm',
      categoryDeletePolicy: 'cascade',
      softDeleteRetentionDays: 7,
      commentFloodSeconds: 0,
      maxUploadBytes: 1000,
      maxBodyBytes: 2000,
      externalUrlAllowPrivate: true,
      cacheSeconds: 0,
      embeddedBuffersMb: 64,
      bootstrapKey: 'dm_x',
      storage: 's3',
      s3: {
        bucket: 'b',
        region: 'us-east-1',
        endpoint: 'http://minio:9000',
        accessKeyId: 'a',
        secretAccessKey: 's',
        forcePathStyle: true,
      },
    });
  });

  it('reads the GraphQL limits', () => {
    const c = loadConfig({
      GRAPHQL_MAX_COST: '500',
      GRAPHQL_MAX_DEPTH: '8',
      GRAPHQL_MAX_ALIASES: '0',
      GRAPHQL_MAX_TOKENS: '2000',
      GRAPHQL_TIMEOUT_MS: '2500',
      GRAPHQL_PERSISTED_DOCUMENTS: 'docs.json',
      GRAPHQL_TRUSTED_DOCUMENTS_ONLY: '1',
    });
    expect(c.graphql).toMatchObject({
      maxCost: 500,
      maxDepth: 8,
      maxAliases: 0,
      maxTokens: 2000,
      timeoutMs: 2500,
      trustedDocumentsOnly: true,
    });
    expect(c.graphql.persistedDocumentsPath!.endsWith('/docs.json')).toBe(true);
  });

  it("reads a webhook attempt's deadline in seconds (10 by default)", () => {
    expect(loadConfig({}).webhooks.timeoutMs).toBe(10_000);
    expect(loadConfig({ WEBHOOK_TIMEOUT_SECONDS: '2' }).webhooks.timeoutMs).toBe(2_000);
  });

  it('refuses malformed values with a message naming the variable', () => {
    for (const [env, name] of [
      [{ PORT: 'eighty' }, 'PORT'],
      [{ MAX_UPLOAD_BYTES: '0' }, 'MAX_UPLOAD_BYTES'],
      [{ STORAGE: 'ftp' }, 'STORAGE'],
      [{ CATEGORY_DELETE_POLICY: 'purge' }, 'CATEGORY_DELETE_POLICY'],
      [{ EXTERNAL_URL_ALLOW_PRIVATE: 'yes' }, 'EXTERNAL_URL_ALLOW_PRIVATE'],
      [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
      [{ STORAGE: 's3' }, 'S3_BUCKET'],
      [{ GRAPHQL_MAX_COST: '0' }, 'GRAPHQL_MAX_COST'],
      [{ GRAPHQL_MAX_DEPTH: 'deep' }, 'GRAPHQL_MAX_DEPTH'],
      [{ GRAPHQL_MAX_ALIASES: '-1' }, 'GRAPHQL_MAX_ALIASES'],
      [{ GRAPHQL_MAX_TOKENS: '1e4' }, 'GRAPHQL_MAX_TOKENS'],
      [{ GRAPHQL_TIMEOUT_MS: '0' }, 'GRAPHQL_TIMEOUT_MS'],
      [{ GRAPHQL_TRUSTED_DOCUMENTS_ONLY: '1' }, 'GRAPHQL_PERSISTED_DOCUMENTS'],
      [{ CURSOR_SECRET: 'too short' }, 'CURSOR_SECRET'],
      [{ SUBSCRIPTIONS_PER_KEY: '0' }, 'SUBSCRIPTIONS_PER_KEY'],
      [{ SUBSCRIPTIONS_MAX: 'many' }, 'SUBSCRIPTIONS_MAX'],
      [{ WEBHOOK_TIMEOUT_SECONDS: '0' }, 'WEBHOOK_TIMEOUT_SECONDS'],
      [{ EMBEDDED_BUFFERS_MB: '0' }, 'EMBEDDED_BUFFERS_MB'],
      [{ EMBEDDED_BUFFERS_MB: '1025' }, 'EMBEDDED_BUFFERS_MB'],
      [{ EMBEDDED_BUFFERS_MB: '16MB' }, 'EMBEDDED_BUFFERS_MB'],
    ] as [Record<string, string>, string][]) {
      expect(() => loadConfig(env), name).toThrow(ConfigError);
      expect(() => loadConfig(env), name).toThrow(name);
    }
  });

  it('reads the hardening settings: limits, deadlines, CORS, split storage', () => {
    expect(loadConfig({})).toMatchObject({
      maxConcurrentUploads: 16,
      maxConcurrentOperations: 8,
      maxMultipartFields: 100,
      memoryReleaseIdleSeconds: 10,
      heapGrowthPercent: 50,
      corsOrigins: [],
      allowSplitStorage: false,
      failedProbesPerMinute: 10,
      readCacheMb: 64,
      readCacheAdmitWindow: 1_000,
      externalUrlIdleSeconds: 10,
      externalUrlDeadlineSeconds: 300,
      http: { headersTimeout: 10, bodyTimeout: 30, requestTimeout: 3600, idleTimeout: 30, keepAliveTimeout: 5 },
    });
    expect(
      loadConfig({
        MAX_CONCURRENT_UPLOADS: '4',
        MAX_CONCURRENT_OPERATIONS: '0',
        MAX_MULTIPART_FIELDS: '20',
        MEMORY_RELEASE_IDLE_SECONDS: '0',
        HEAP_GROWTH_PERCENT: '0',
        READ_CACHE_MB: '0',
        READ_CACHE_ADMIT_WINDOW: '0',
        CORS_ORIGINS: 'https://a.example',
        ALLOW_SPLIT_STORAGE: '1',
        EXTERNAL_URL_FAILED_PROBES_PER_MINUTE: '3',
        EXTERNAL_URL_IDLE_SECONDS: '5',
        EXTERNAL_URL_DEADLINE_SECONDS: '60',
        HTTP_HEADERS_TIMEOUT_SECONDS: '5',
        HTTP_BODY_TIMEOUT_SECONDS: '6',
        HTTP_REQUEST_TIMEOUT_SECONDS: '7',
        HTTP_IDLE_TIMEOUT_SECONDS: '8',
        HTTP_KEEP_ALIVE_SECONDS: '9',
      }),
    ).toMatchObject({
      maxConcurrentUploads: 4,
      maxConcurrentOperations: 0,
      maxMultipartFields: 20,
      memoryReleaseIdleSeconds: 0,
      heapGrowthPercent: 0,
      corsOrigins: ['https://a.example'],
      allowSplitStorage: true,
      failedProbesPerMinute: 3,
      readCacheMb: 0,
      readCacheAdmitWindow: 0,
      externalUrlIdleSeconds: 5,
      externalUrlDeadlineSeconds: 60,
      http: { headersTimeout: 5, bodyTimeout: 6, requestTimeout: 7, idleTimeout: 8, keepAliveTimeout: 9 },
    });
    for (const [env, name] of [
      [{ MAX_CONCURRENT_UPLOADS: '0' }, 'MAX_CONCURRENT_UPLOADS'],
      [{ MAX_CONCURRENT_OPERATIONS: '-1' }, 'MAX_CONCURRENT_OPERATIONS'],
      [{ MEMORY_RELEASE_IDLE_SECONDS: 'soon' }, 'MEMORY_RELEASE_IDLE_SECONDS'],
      [{ HEAP_GROWTH_PERCENT: '1.5' }, 'HEAP_GROWTH_PERCENT'],
      [{ READ_CACHE_MB: '-1' }, 'READ_CACHE_MB'],
      [{ READ_CACHE_ADMIT_WINDOW: 'all' }, 'READ_CACHE_ADMIT_WINDOW'],
      [{ CORS_ORIGINS: 'example.com' }, 'CORS_ORIGINS'],
      [{ ALLOW_SPLIT_STORAGE: 'maybe' }, 'ALLOW_SPLIT_STORAGE'],
      [{ HTTP_IDLE_TIMEOUT_SECONDS: '0' }, 'HTTP_IDLE_TIMEOUT_SECONDS'],
      [{ HTTP_HEADERS_TIMEOUT_SECONDS: '100', HTTP_REQUEST_TIMEOUT_SECONDS: '10' }, 'HTTP_HEADERS_TIMEOUT_SECONDS'],
    ] as [Record<string, string>, string][]) {
      expect(() => loadConfig(env), name).toThrow(ConfigError);
      expect(() => loadConfig(env), name).toThrow(name);
    }
  });
});
