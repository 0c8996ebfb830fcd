// Requests per API key per minute, on every face (/graphql, the REST routes, the file data route). Counted by
// rate-limiter-flexible: in this process, or in Redis when REDIS_URL is set so that every instance shares one count.
// Over the limit: 429 `mc_dm_api_error.rate_limited` with Retry-After; every limited answer carries the IETF
// RateLimit headers (RateLimit-Policy, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset).
import type { Plugin } from 'graphql-yoga';
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { ApiError } from '../errors.js';
import type { Visitor } from '../permissions/access.js';
import type { Logger } from '../log.js';

export interface RateLimitSettings {
  /** Requests a minute for guest and user keys; 0 turns the limit off. */
  perMinute: number;
  /** Requests a minute for super-user keys; 0 turns the limit off. */
  superPerMinute: number;
  redisUrl?: string;
}

const WINDOW_SECONDS = 60;

export class RateLimits {
  private readonly ordinary: RateLimiterAbstract | null;
  private readonly superKeys: RateLimiterAbstract | null;
  private readonly redis: Redis | null;
  private readonly headersFor = new WeakMap<Request, Record<string, string>>();

  constructor(s: RateLimitSettings, log: Logger) {
    // ioredis is loaded only when REDIS_URL is set: a start without Redis does not pay for it.
    this.redis =
      s.redisUrl && (s.perMinute || s.superPerMinute)
        ? new (createRequire(import.meta.url)('ioredis') as typeof import('ioredis')).Redis(s.redisUrl, {
            enableOfflineQueue: false,
            maxRetriesPerRequest: 1,
            lazyConnect: false,
          })
        : null;
    this.redis?.on('error', (err) =>
      log.warn({ err }, 'rate limit store (Redis) unavailable: counting in this process until it is back'),
    );
    const make = (points: number, prefix: string): RateLimiterAbstract | null => {
      if (!points) return null;
      const memory = new RateLimiterMemory({ points, duration: WINDOW_SECONDS, keyPrefix: prefix });
      // While Redis is unreachable the count falls back to this process's memory instead of refusing requests.
      return this.redis
        ? new RateLimiterRedis({
            storeClient: this.redis,
            points,
            duration: WINDOW_SECONDS,
            keyPrefix: `dcs_rl_${prefix}`,
            insuranceLimiter: memory,
          })
        : memory;
    };
    this.ordinary = make(s.perMinute, 'key');
    this.superKeys = make(s.superPerMinute, 'super');
  }

  /**
   * Counts one request of `visitor`'s key; throws 429 rate_limited when the key is over its limit. Counts are kept by
   * the key's hash, not its row id, so deployments (or test databases) sharing one Redis never share a count.
   */
  async consume(request: Request, visitor: Pick<Visitor, 'isSuper'>, keyHash: string): Promise<void> {
    const limiter = visitor.isSuper ? this.superKeys : this.ordinary;
    if (!limiter) return;
    const limit = limiter.points;
    const headers = (res: RateLimiterRes) => ({
      'RateLimit-Policy': `${limit};w=${WINDOW_SECONDS}`,
      'RateLimit-Limit': String(limit),
      'RateLimit-Remaining': String(Math.max(0, res.remainingPoints)),
      'RateLimit-Reset': String(Math.ceil(res.msBeforeNext / 1000)),
    });
    try {
      const res = await limiter.consume(keyHash.slice(0, 32));
      this.headersFor.set(request, headers(res));
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      const wait = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      throw new ApiError(
        'mc_dm_api_error.rate_limited',
        `This API key has made more than ${limit} requests in a minute: wait ${wait} second(s).`,
        { retry_after: wait, limit },
        { ...headers(err), 'Retry-After': String(wait) },
      );
    }
  }

  /** Adds the RateLimit headers to every answer of a counted request. */
  plugin(): Plugin {
    return {
      onResponse: ({ request, response }) => {
        const h = this.headersFor.get(request);
        if (!h) return;
        for (const [k, v] of Object.entries(h)) if (!response.headers.has(k)) response.headers.set(k, v);
      },
    };
  }

  async close(): Promise<void> {
    if (this.redis) await this.redis.quit().catch(() => this.redis!.disconnect());
  }
}
