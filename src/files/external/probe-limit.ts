// Failed external-URL probes are rate-limited per API key: each one costs the remote side a request and this
// service a connection, so a key may fail at most EXTERNAL_URL_FAILED_PROBES_PER_MINUTE times a minute. Past that,
// createFile with an external URL (link-only excepted) answers 429 rate_limited with Retry-After until the window
// turns. One in-memory counter per running service (instances behind a balancer each count their own).
import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { Config } from '../../config.js';
import { ApiError } from '../../errors.js';

const limiters = new WeakMap<Config, RateLimiterMemory>();

function limiterFor(config: Config): RateLimiterMemory {
  let l = limiters.get(config);
  if (!l) {
    l = new RateLimiterMemory({ points: config.failedProbesPerMinute, duration: 60 });
    limiters.set(config, l);
  }
  return l;
}

/** Refuses with 429 when the key has used up its failed probes for the current minute. */
export async function checkProbeAllowance(config: Config, apiKeyId: number): Promise<void> {
  const state = await limiterFor(config).get(String(apiKeyId));
  if (state && state.consumedPoints >= config.failedProbesPerMinute) {
    const wait = Math.max(1, Math.ceil(state.msBeforeNext / 1000));
    throw new ApiError(
      'mc_dm_api_error.rate_limited',
      `Too many external URLs of this key failed in the last minute: wait ${wait} second(s) before trying another.`,
      { retry_after: wait },
      { 'Retry-After': String(wait) },
    );
  }
}

/** Counts one failed probe against the key. */
export async function recordFailedProbe(config: Config, apiKeyId: number): Promise<void> {
  await limiterFor(config).penalty(String(apiKeyId), 1);
}
