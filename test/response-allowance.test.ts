// RESPONSE_BYTES_PER_MINUTE: the bytes of answers one guest or user key may receive a minute. Each operation sets aside
// GRAPHQL_MAX_RESPONSE_BYTES of its key's allowance while it runs and is charged what its result grew to; once the
// allowance cannot cover another operation, the key's next one answers 429 rate_limited (kind response_bytes) with
// Retry-After, on both faces, before anything is read; other keys and super-user keys go on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';
import { loadConfig } from '../src/config.js';
import { ResponseAllowance } from '../src/http/response-allowance.js';
import { ApiError } from '../src/errors.js';

const MIB = 1024 * 1024;

describe('configuration', () => {
  it('defaults to 64 MiB a minute and reads RESPONSE_BYTES_PER_MINUTE (0 turns it off)', () => {
    expect(loadConfig({}).responseBytesPerMinute).toBe(64 * MIB);
    expect(loadConfig({ RESPONSE_BYTES_PER_MINUTE: '1000000' }).responseBytesPerMinute).toBe(1_000_000);
    expect(loadConfig({ RESPONSE_BYTES_PER_MINUTE: '0' }).responseBytesPerMinute).toBe(0);
    expect(() => loadConfig({ RESPONSE_BYTES_PER_MINUTE: 'lots' })).toThrow(/RESPONSE_BYTES_PER_MINUTE/);
  });
});

describe('ResponseAllowance', () => {
  const clock = () => {
    const c = { t: 0, now: () => c.t };
    return c;
  };
  const refused = async (p: Promise<unknown>) => {
    const err = (await p.then(
      () => undefined,
      (e) => e,
    )) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe('mc_dm_api_error.rate_limited');
    expect(err.params.kind).toBe('response_bytes');
    return err;
  };

  it('admits while the allowance covers an operation, then refuses with the seconds until it does again', async () => {
    const c = clock();
    const a = new ResponseAllowance(600, 100, c.now); // 10 bytes a second; an operation sets aside 100
    for (let i = 0; i < 5; i++) (await a.acquire('k', false))(100);
    // 100 left: one more
    (await a.acquire('k', false))(100);
    const err = await refused(a.acquire('k', false));
    expect(err.params.retry_after).toBe(10); // 100 bytes at 10 a second
    expect(err.extensions.http).toMatchObject({ status: 429, headers: { 'Retry-After': '10' } });
    // another key is not touched
    (await a.acquire('other', false))(100);
    // refilled with time
    c.t = 10_000;
    (await a.acquire('k', false))(0);
  });

  it('charges what an operation used, not what it set aside', async () => {
    const a = new ResponseAllowance(600, 100, clock().now);
    for (let i = 0; i < 51; i++) (await a.acquire('k', false))(10);
    await refused(a.acquire('k', false));
  });

  it("lets a key's operations wait for its own running ones, not past the allowance", async () => {
    const c = clock();
    const a = new ResponseAllowance(300, 100, c.now); // three at once
    const settles = await Promise.all([a.acquire('k', false), a.acquire('k', false), a.acquire('k', false)]);
    let fourth = false;
    const waiting = a.acquire('k', false).then((s) => {
      fourth = true;
      return s;
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(fourth).toBe(false); // waits: its key's operations hold the allowance
    settles[0]!(0); // used nothing: what it set aside comes back
    (await waiting)(0);
    expect(fourth).toBe(true);
    // One more starts (what is left covers it) and spends everything; the next waits while the key's operations
    // run, and is refused once none does: nothing would free any of the allowance soon.
    const w1 = await a.acquire('k', false);
    const w2 = a.acquire('k', false);
    w1(300);
    settles[1]!(0);
    let settled = false;
    void w2
      .catch(() => {})
      .finally(() => {
        settled = true;
      });
    await new Promise((r) => setTimeout(r, 5));
    expect(settled).toBe(false);
    settles[2]!(0);
    await refused(w2);
  });

  it('a waiting operation leaves when its deadline aborts', async () => {
    const a = new ResponseAllowance(100, 100, clock().now);
    const first = await a.acquire('k', false);
    const controller = new AbortController();
    const waiting = a.acquire('k', false, controller.signal);
    controller.abort(new Error('deadline'));
    await expect(waiting).rejects.toThrow('deadline');
    first(0);
    (await a.acquire('k', false))(0);
  });

  it('does not limit super-user keys, nor anyone when 0', async () => {
    const a = new ResponseAllowance(100, 100, clock().now);
    for (let i = 0; i < 10; i++) (await a.acquire('super', true))(1000);
    const off = new ResponseAllowance(0, 100, clock().now);
    for (let i = 0; i < 10; i++) (await off.acquire('k', false))(1000);
    expect(a.tracked + off.tracked).toBe(0);
  });
});

const TEXT = 30_000;

forEachDatabase((kind) => {
  // Each operation sets aside 100,000 bytes of a 250,000-byte allowance; three 30 KB descriptions are about 90 KB.
  const limits = (perMinute: number) => ({
    readCacheMb: 0,
    responseBytesPerMinute: perMinute,
    graphql: { ...loadConfig({}).graphql, maxResponseBytes: 100_000 },
  });
  let t: TestApp;
  let off: TestApp;
  let categoryId: number;
  let offCategoryId: number;
  const seed = async (app: TestApp) => {
    const owner = await app.user('owner');
    const { createCategory } = await app.gqlOk(
      'mutation { createCategory(input: { title: "Big texts" }) { category { categoryId } } }',
    );
    for (let i = 0; i < 3; i++) {
      await app.gqlOk(
        'mutation($input: CreateDownloadInput!) { createDownload(input: $input) { download { downloadId } } }',
        {
          input: {
            categoryId: createCategory.category.categoryId,
            title: `Big ${i}`,
            tagLine: 't',
            description: String(i).repeat(TEXT),
            versionString: '1.0',
          },
        },
        owner.key,
      );
    }
    return createCategory.category.categoryId as number;
  };
  beforeAll(async () => {
    t = await startTestApp(kind, limits(250_000));
    off = await startTestApp(kind, limits(0));
    categoryId = await seed(t);
    offCategoryId = await seed(off);
  });
  afterAll(async () => {
    await t?.close();
    await off?.close();
  });

  const query = (c = categoryId) => `{ downloads(perPage: 3, categoryId: ${c}) { nodes { description } } }`;
  const post = (app: TestApp, key: string) =>
    fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Forum-Api-Key': key },
      body: JSON.stringify({ query: query(app === off ? offCategoryId : categoryId) }),
    });
  const expect429 = async (res: Response) => {
    const body = (await res.json()) as { errors: any[] };
    expect(res.status, JSON.stringify(body).slice(0, 300)).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    return body.errors[0];
  };

  it('refuses a key whose answers spent its allowance, on /graphql and REST; other keys go on', async () => {
    const key = await t.key('GUEST');
    for (let i = 0; i < 2; i++) {
      const ok = await post(t, key);
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as any).data.downloads.nodes).toHaveLength(3);
    }
    // About 180 KB received: what is left (about 70 KB) cannot cover another operation's 100 KB.
    const gqlError = await expect429(await post(t, key));
    expect(gqlError.extensions).toMatchObject({
      code: 'mc_dm_api_error.rate_limited',
      params: { kind: 'response_bytes', limit: 250_000 },
    });
    const rest = await fetch(`${t.url}/api/mc-dm-downloads/?category_id=${categoryId}&per_page=1`, {
      headers: { 'Forum-Api-Key': key },
    });
    const restError = await expect429(rest);
    expect(restError).toMatchObject({ code: 'mc_dm_api_error.rate_limited', params: { kind: 'response_bytes' } });
    // another guest key, and the super-user key, are not touched
    expect((await post(t, await t.key('GUEST'))).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await t.gql(query())).status).toBe(200);
  });

  it('REST answers count against the same allowance', async () => {
    const key = await t.key('GUEST');
    for (let i = 0; i < 2; i++) {
      const r = await t.rest('GET', '/api/mc-dm-downloads/', {
        key,
        query: { category_id: categoryId, per_page: 3 },
      });
      expect(r.status).toBe(200);
    }
    await expect429(await post(t, key));
  });

  it('without the allowance (RESPONSE_BYTES_PER_MINUTE=0) the same key is served every time', async () => {
    const key = await off.key('GUEST');
    for (let i = 0; i < 5; i++) expect((await post(off, key)).status).toBe(200);
  });
});
