// Open subscription streams are bounded (contract §9): SUBSCRIPTIONS_PER_KEY per key and SUBSCRIPTIONS_MAX per
// instance; past either, the request answers 429 mc_dm_api_error.rate_limited as a plain JSON error before any
// stream opens. A stream the client closes (abort) gives its slot back; so does a subscription refused at subscribe
// time, or asked for as JSON, which never opened. Real server, Node fetch with AbortController.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

const RELEASED = 'subscription { versionReleased { versionId } }';

interface Opened {
  status: number;
  type: string | null;
  abort: AbortController;
  res: Response;
}

forEachDatabase((kind) => {
  describe('subscription slots', () => {
    let t: TestApp;
    let keys: string[];
    const open: Opened[] = [];

    /** Starts a subscription; resolves when the answer's headers arrive (a stream stays open until aborted). */
    async function subscribe(
      key: string,
      opts: { method?: 'GET' | 'POST'; accept?: string; query?: string } = {},
    ): Promise<Opened> {
      const url = new URL('/graphql', t.url);
      const query = opts.query ?? RELEASED;
      const headers: Record<string, string> = { accept: opts.accept ?? 'text/event-stream', 'Forum-Api-Key': key };
      let body: string | undefined;
      if (opts.method === 'GET') url.searchParams.set('query', query);
      else {
        body = JSON.stringify({ query });
        headers['content-type'] = 'application/json';
      }
      const abort = new AbortController();
      const res = await fetch(url, { method: opts.method ?? 'POST', headers, body, signal: abort.signal });
      const o = { status: res.status, type: res.headers.get('content-type'), abort, res };
      if (res.status === 200 && o.type?.includes('text/event-stream')) open.push(o);
      return o;
    }

    /** A refusal: the whole answer, which must end by itself (it is not a stream). */
    async function refusal(o: Opened) {
      if (o.status === 200) throw new Error(`a stream opened (${o.type}) instead of a refusal`);
      const text = await o.res.text();
      return { status: o.status, type: o.type, retryAfter: o.res.headers.get('retry-after'), body: JSON.parse(text) };
    }

    const close = (o: Opened) => {
      o.abort.abort();
      const i = open.indexOf(o);
      if (i >= 0) open.splice(i, 1);
    };

    /**
     * Opens a stream for `key` once the server has noticed earlier aborts (it frees slots as sockets close, which on a
     * loaded machine can take longer than the pause after each test): every stream a test expects to open as its
     * starting state opens this way, and only the refusals that follow are checked at once.
     */
    async function opensSoon(key: string): Promise<Opened> {
      const deadline = Date.now() + 3000;
      for (;;) {
        const o = await subscribe(key);
        if (o.status === 200) return o;
        await o.res.text();
        if (Date.now() > deadline) throw new Error(`still ${o.status} after 3 s`);
        await new Promise((r) => setTimeout(r, 25));
      }
    }

    beforeAll(async () => {
      t = await startTestApp(kind, { subscriptionsPerKey: 2, subscriptionsMax: 3 });
      keys = await Promise.all([1, 2, 3].map(() => t.key('GUEST', ['mc_dm_download:read'])));
    });
    afterEach(async () => {
      for (const o of open.splice(0)) o.abort.abort();
      // Every slot back before the next test: each key can open its two streams again.
      for (const key of keys.slice(0, 1)) {
        const a = await opensSoon(key);
        const b = await opensSoon(key);
        close(a);
        close(b);
      }
      for (const o of open.splice(0)) o.abort.abort();
      await new Promise((r) => setTimeout(r, 50));
    });
    afterAll(async () => {
      await t?.close();
    });

    it('the third stream of one key answers 429 rate_limited as plain JSON, while another key still opens', async () => {
      const [a, b] = keys as [string, string];
      for (let i = 0; i < 2; i++) {
        const o = await opensSoon(a);
        expect(o.status).toBe(200);
        expect(o.type).toContain('text/event-stream');
      }
      for (const method of ['POST', 'GET'] as const) {
        const third = await refusal(await subscribe(a, { method }));
        expect(third.status, method).toBe(429);
        expect(third.type, method).toContain('application/json');
        expect(third.retryAfter, method).toMatch(/^\d+$/);
        expect(third.body.errors[0].extensions, method).toMatchObject({
          code: 'mc_dm_api_error.rate_limited',
          params: { limit: 2 },
        });
        expect(third.body.errors[0].message).toMatch(/SUBSCRIPTIONS_PER_KEY/);
      }
      const other = await subscribe(b);
      expect(other.status).toBe(200);
      expect(other.type).toContain('text/event-stream');
    });

    it('closing a stream (client abort) frees its slot', async () => {
      const [a] = keys as [string];
      const first = await opensSoon(a);
      await opensSoon(a);
      expect((await refusal(await subscribe(a))).status).toBe(429);
      close(first);
      const again = await opensSoon(a);
      expect(again.type).toContain('text/event-stream');
      expect((await refusal(await subscribe(a))).status).toBe(429);
    });

    it('SUBSCRIPTIONS_MAX bounds the streams of every key together', async () => {
      const [a, b, c] = keys as [string, string, string];
      expect((await opensSoon(a)).status).toBe(200);
      expect((await opensSoon(a)).status).toBe(200);
      const fromB = await opensSoon(b);
      expect(fromB.status).toBe(200);
      // Three open: b holds one of its two, c none, yet both are refused.
      for (const key of [b, c]) {
        const r = await refusal(await subscribe(key));
        expect(r.status).toBe(429);
        expect(r.body.errors[0].extensions).toMatchObject({
          code: 'mc_dm_api_error.rate_limited',
          params: { limit: 3 },
        });
        expect(r.body.errors[0].message).toMatch(/SUBSCRIPTIONS_MAX/);
      }
      close(fromB);
      expect((await opensSoon(c)).status).toBe(200);
    });

    it('a subscription refused at subscribe time, or asked for as JSON, holds no slot', async () => {
      const [a] = keys as [string];
      for (let i = 0; i < 3; i++) {
        const notFound = await subscribe(a, { query: 'subscription { downloadChanged(downloadId: 99999) { title } }' });
        // a 200 stream carrying the error, then complete
        expect(notFound.status).toBe(200);
        expect(await notFound.res.text()).toContain('mc_dm_api_error.download_not_found');
        const asJson = await subscribe(a, { accept: 'application/json' });
        expect(asJson.status).toBe(400);
        await asJson.res.text();
      }
      expect((await opensSoon(a)).status).toBe(200);
      expect((await opensSoon(a)).status).toBe(200);
    });
  });
});
