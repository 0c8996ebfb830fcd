// Every environment variable the service reads, parsed and validated in one place.
import path from 'node:path';

export type StorageKind = 'local' | 's3';
export type CategoryDeletePolicy = 'reassign' | 'cascade';

export interface Config {
  port: number;
  host: string;
  baseUrl: string;
  dataDir: string;
  /** PostgreSQL server URL; undefined selects the embedded PGlite database under dataDir/db. */
  databaseUrl?: string;
  databasePoolSize: number;
  storage: StorageKind;
  /** S3-compatible storage settings, when storage is s3. */
  s3?: { bucket: string; region: string; endpoint?: string; accessKeyId?: string; secretAccessKey?: string; forcePathStyle: boolean };
  bootstrapKey?: string;
  categoryDeletePolicy: CategoryDeletePolicy;
  softDeleteRetentionDays: number;
  commentFloodSeconds: number;
  maxUploadBytes: number;
  maxBodyBytes: number;
  externalUrlAllowPrivate: boolean;
  logLevel: string;
  /** How long keys, users and permission tables are cached in-process (0 disables). */
  cacheSeconds: number;
  /** Redis server for subscription events across instances; undefined keeps them in-process. */
  redisUrl?: string;
  /** Put before every Redis channel name: deployments sharing a Redis server need different prefixes. */
  redisChannelPrefix: string;
}

export class ConfigError extends Error {}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new ConfigError(`${name} must be a whole number ≥ ${min}, got "${raw}"`);
  return Number(raw);
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

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const port = int(env, 'PORT', 3000);
  const dataDir = path.resolve(env.DATA_DIR || './data');
  const config: Config = {
    port,
    host: env.HOST || '127.0.0.1',
    baseUrl: (env.BASE_URL || `http://localhost:${port}`).replace(/\/+$/, ''),
    dataDir,
    databaseUrl: env.DATABASE_URL || undefined,
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', 10, 1),
    storage: oneOf(env, 'STORAGE', ['local', 's3'] as const, 'local'),
    bootstrapKey: env.DM_BOOTSTRAP_KEY || undefined,
    categoryDeletePolicy: oneOf(env, 'CATEGORY_DELETE_POLICY', ['reassign', 'cascade'] as const, 'reassign'),
    softDeleteRetentionDays: int(env, 'SOFT_DELETE_RETENTION_DAYS', 30),
    commentFloodSeconds: int(env, 'COMMENT_FLOOD_SECONDS', 10),
    maxUploadBytes: int(env, 'MAX_UPLOAD_BYTES', 2 * 1024 ** 3, 1),
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1),
    externalUrlAllowPrivate: flag(env, 'EXTERNAL_URL_ALLOW_PRIVATE'),
    logLevel: env.LOG_LEVEL || 'info',
    cacheSeconds: int(env, 'CACHE_SECONDS', 5),
    redisUrl: env.REDIS_URL || undefined,
    redisChannelPrefix: env.REDIS_CHANNEL_PREFIX ?? 'dcs:',
    ...overrides,
  };
  if (config.storage === 's3' && !config.s3) {
    if (!env.S3_BUCKET) throw new ConfigError('STORAGE=s3 needs S3_BUCKET (and S3_REGION, S3_ENDPOINT for non-AWS servers, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY).');
    config.s3 = {
      bucket: env.S3_BUCKET,
      region: env.S3_REGION || 'us-east-1',
      endpoint: env.S3_ENDPOINT || undefined,
      accessKeyId: env.S3_ACCESS_KEY_ID || undefined,
      secretAccessKey: env.S3_SECRET_ACCESS_KEY || undefined,
      forcePathStyle: env.S3_FORCE_PATH_STYLE ? flag(env, 'S3_FORCE_PATH_STYLE') : Boolean(env.S3_ENDPOINT),
    };
  }
  if (config.databaseUrl && !/^postgres(ql)?:\/\//.test(config.databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://');
  }
  if (config.redisUrl && !/^rediss?:\/\//.test(config.redisUrl)) throw new ConfigError('REDIS_URL must start with redis:// or rediss://');
  return config;
}
