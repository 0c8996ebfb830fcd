// Keys and visitors (contract §2) on both faces.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '../src/auth/keys.js';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';

forEachDatabase((kind) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(kind);
  });
  afterAll(async () => {
    await t?.close();
  });

  const VIEWER = `{ viewer { userId username isGuest isSuperKey isAdmin scopes } }`;
  const both = async (key: string | null, headers: Record<string, string> = {}) => ({
    rest: await t.rest('GET', '/api/mc-dm-categories/', { key, headers }),
    gql: await t.gql(VIEWER, {}, key, headers),
  });
  const expectBoth = async (key: string | null, headers: Record<string, string>, status: number, code: string) => {
    const { rest, gql } = await both(key, headers);
    expect(rest.status).toBe(status);
    expect(rest.body.errors[0].code).toBe(code);
    expect(gql.status).toBe(status);
    expect(gql.codes).toEqual([code]);
  };

  it('no key: 401 no_api_key_in_request', async () => {
    await expectBoth(null, {}, 401, 'no_api_key_in_request');
  });

  it('unknown key: 401 api_key_not_found', async () => {
    await expectBoth('dm_not_a_real_key', {}, 401, 'api_key_not_found');
  });

  it('revoked and expired keys: 401 api_key_inactive', async () => {
    const key = await t.key('GUEST', ['mc_dm_category:read']);
    expect((await t.rest('GET', '/api/mc-dm-categories/', { key })).status).toBe(200);
    const row = await t.prisma.apiKey.findUniqueOrThrow({ where: { keyHash: hashKey(key) } });
    const revoked = await t.gqlOk(
      `mutation($i: RevokeApiKeyInput!) { revokeApiKey(input: $i) { apiKey { apiKeyId isActive } } }`,
      { i: { apiKeyId: row.id } },
    );
    expect(revoked.revokeApiKey.apiKey).toEqual({ apiKeyId: row.id, isActive: false });
    await expectBoth(key, {}, 401, 'api_key_inactive');

    const key2 = await t.key('GUEST', ['mc_dm_category:read']);
    await t.prisma.apiKey.update({
      where: { keyHash: hashKey(key2) },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    await expectBoth(key2, {}, 401, 'api_key_inactive');
  });

  it('keys are stored only as hashes', async () => {
    const key = await t.key('SUPER', ['all']);
    const rows = await t.prisma.apiKey.findMany();
    expect(rows.some((r) => r.keyHash === hashKey(key))).toBe(true);
    expect(JSON.stringify(rows)).not.toContain(key);
    expect(key).toMatch(/^dm_[A-Za-z0-9_-]{43}$/); // 32 random bytes
  });

  it('a guest key acts as the guest visitor', async () => {
    const key = await t.key('GUEST', ['all']);
    const { viewer } = await t.gqlOk(VIEWER, {}, key);
    expect(viewer).toMatchObject({ userId: 0, isGuest: true, isSuperKey: false, isAdmin: false });
    const denied = await t.rest('POST', '/api/mc-dm-categories/', { key, form: { title: 'x' } });
    expect(denied.status).toBe(403);
  });

  it('a user key acts as its user, and may not send Forum-Api-User', async () => {
    const u = await t.user(`alice_${kind}`, { scopes: ['mc_dm_category:read'] });
    const { viewer } = await t.gqlOk(VIEWER, {}, u.key);
    expect(viewer).toEqual({
      userId: u.userId,
      username: u.username,
      isGuest: false,
      isSuperKey: false,
      isAdmin: false,
      scopes: ['mc_dm_category:read'],
    });
    await expectBoth(u.key, { 'Forum-Api-User': String(u.userId) }, 403, 'api_user_header_not_allowed');
  });

  it('a super-user key acts as the user named by Forum-Api-User, or as the guest without it', async () => {
    const u = await t.user(`bob_${kind}`);
    const as = await t.gqlOk(VIEWER, {}, SUPER_KEY);
    expect(as.viewer).toMatchObject({ userId: 0, isGuest: true, isSuperKey: true });
    const r = await t.gql(VIEWER, {}, SUPER_KEY, { 'Forum-Api-User': String(u.userId) });
    expect(r.data.viewer).toMatchObject({ userId: u.userId, username: u.username, isSuperKey: true });
    await expectBoth(SUPER_KEY, { 'Forum-Api-User': '987654' }, 400, 'invalid_api_user');
    await expectBoth(SUPER_KEY, { 'Forum-Api-User': 'bob' }, 400, 'invalid_api_user');
  });

  it('scopes apply to every key, super-user keys included', async () => {
    const key = await t.key('SUPER', ['mc_dm_download:read']);
    const r = await t.rest('GET', '/api/mc-dm-categories/', { key });
    expect(r.status).toBe(403);
    expect(r.body.errors[0]).toMatchObject({ code: 'api_scope_missing', params: { scope: 'mc_dm_category:read' } });
    // viewer needs no scope
    const { viewer } = await t.gqlOk(VIEWER, {}, key);
    expect(viewer.scopes).toEqual(['mc_dm_download:read']);
  });

  it('/graphql answers 413 request_too_large above MAX_BODY_BYTES, and invalid_input for malformed queries', async () => {
    const big = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'Forum-Api-Key': SUPER_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ viewer { userId } }', variables: { pad: 'x'.repeat(t.config.maxBodyBytes) } }),
    });
    expect(big.status).toBe(413);
    expect(((await big.json()) as any).errors[0].extensions.code).toBe('request_too_large');
    // without Content-Length (chunked), the body is counted as it is read
    const payload = new TextEncoder().encode(
      JSON.stringify({ query: '{ viewer { userId } }', variables: { pad: 'x'.repeat(t.config.maxBodyBytes) } }),
    );
    const chunked = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'Forum-Api-Key': SUPER_KEY, 'content-type': 'application/json' },
      body: new ReadableStream({
        start(c) {
          c.enqueue(payload);
          c.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(((await chunked.json()) as any).errors[0].extensions.code).toBe('request_too_large');
    const bad = await t.gql('{ viewer { userId } ');
    expect(bad.codes).toEqual(['invalid_input']);
  });

  describe('health and GraphiQL need no key', () => {
    it('/healthz and /readyz', async () => {
      expect((await t.rest('GET', '/healthz', { key: null })).body).toEqual({ status: 'ok' });
      const ready = await t.rest('GET', '/readyz', { key: null });
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({ status: 'ready' });
    });

    it('GraphiQL is served to browsers at /graphql with a Forum-Api-Key header template', async () => {
      const r = await fetch(`${t.url}/graphql`, { headers: { accept: 'text/html' } });
      expect(r.status).toBe(200);
      const html = await r.text();
      expect(html).toContain('Downloads Catalogue Service');
      expect(html).toContain('Forum-Api-Key');
      expect(html).not.toContain('unpkg.com'); // assets are bundled: works offline
    });
  });
});
