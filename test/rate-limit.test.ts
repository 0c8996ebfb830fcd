// Requests per key per minute: 429 mc_dm_api_error.rate_limited with Retry-After and the IETF RateLimit headers,
// on GraphQL, REST and the file data route alike; super-user keys unlimited unless configured; one count shared
// by every instance through Redis when REDIS_URL is set (skipped with a message when Redis does not answer).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';
import { REDIS_URL, redisAnswers } from './helpers/redis.js';

const redisUp = await redisAnswers();

forEachDatabase((kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind, { rateLimitPerMinute: 5 });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('counts every face against one budget per key, and refuses the sixth request of the minute', async () => {
    const key = await t.key('GUEST', ['mc_dm_category:read']);
    const first = await t.rest('GET', '/api/mc-dm-categories/', { key });
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-policy')).toBe('5;w=60');
    expect(first.headers.get('ratelimit-limit')).toBe('5');
    expect(first.headers.get('ratelimit-remaining')).toBe('4');
    expect(Number(first.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
    expect((await t.gql('{ viewer { userId } }', {}, key)).status).toBe(200);
    expect((await t.rest('GET', '/api/mc-dm-categories/', { key })).status).toBe(200);
    expect((await t.gql('{ viewer { userId } }', {}, key)).status).toBe(200);
    const fifth = await t.rest('GET', '/api/mc-dm-categories/', { key });
    expect(fifth.headers.get('ratelimit-remaining')).toBe('0');

    const rest = await t.rest('GET', '/api/mc-dm-categories/', { key });
    expect(rest.status).toBe(429);
    expect(rest.body.errors[0]).toMatchObject({ code: 'mc_dm_api_error.rate_limited', params: { limit: 5 } });
    expect(Number(rest.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(rest.headers.get('ratelimit-remaining')).toBe('0');
    const gql = await t.gql('{ viewer { userId } }', {}, key);
    expect(gql.codes).toEqual(['mc_dm_api_error.rate_limited']);
    expect(gql.status).toBe(429);
    const data = await fetch(`${t.url}/api/mc-dm-files/1/data/`, { headers: { 'Forum-Api-Key': key } });
    expect(data.status).toBe(429);
    expect(data.headers.get('retry-after')).not.toBeNull();

    // Another key has its own budget; super-user keys are not limited by default.
    expect(
      (await t.rest('GET', '/api/mc-dm-categories/', { key: await t.key('GUEST', ['mc_dm_category:read']) })).status,
    ).toBe(200);
    for (let i = 0; i < 8; i++) expect((await t.rest('GET', '/api/mc-dm-categories/')).status).toBe(200);
  });

  it('a limit for super-user keys applies when configured', async () => {
    const limited = await startTestApp(kind, { rateLimitPerMinute: 0, rateLimitSuperPerMinute: 2 });
    try {
      expect((await limited.rest('GET', '/api/mc-dm-categories/')).status).toBe(200);
      expect((await limited.rest('GET', '/api/mc-dm-categories/')).status).toBe(200);
      expect((await limited.rest('GET', '/api/mc-dm-categories/')).status).toBe(429);
      const guest = await limited.rest('GET', '/api/mc-dm-categories/', { key: 'dm_not_a_key' });
      expect(guest.status).toBe(401); // unknown keys are refused before they are counted
    } finally {
      await limited.close();
    }
  });
});

describe.skipIf(!redisUp || !process.env.TEST_DATABASE_URL)('rate limits shared through Redis', () => {
  it('two instances on one database count one budget per key', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-rl-'));
    const settings = { rateLimitPerMinute: 4, redisUrl: REDIS_URL, dataDir };
    const a = await startTestApp('postgres', settings);
    const b = await startTestApp('postgres', settings, { url: a.app.db.url! });
    try {
      const key = await a.key('GUEST', ['mc_dm_category:read']);
      const statuses = [];
      for (const t of [a, b, a, b, a, b])
        statuses.push((await t.rest('GET', '/api/mc-dm-categories/', { key })).status);
      // createApiKey used the super key; the guest key's four requests are spread over both instances.
      expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    } finally {
      await b.close();
      await a.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
