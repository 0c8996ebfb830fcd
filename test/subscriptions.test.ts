// Subscriptions over SSE, end to end with a real client (graphql-sse, distinct connections mode) and with plain
// fetch reading text/event-stream: every event type, who receives what at delivery time, refusals at subscribe
// time, revoked keys, streams closed by the client, and (PostgreSQL + Redis) events crossing two instances.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createClient } from 'graphql-sse';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabase, freshPostgres, migratedDatabase, startTestApp, SUPER_KEY, TestApp } from './helpers/app.js';
import { loadConfig, ConfigError } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { hashKey } from '../src/auth/keys.js';
import { startApp } from '../src/app.js';
import { createLogger } from '../src/log.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** The results a subscription delivers, read as they arrive. */
class Stream {
  readonly results: any[] = [];
  completed = false;
  failure: unknown;
  private read = 0;
  constructor(private readonly iterator: AsyncIterableIterator<any>) {
    void (async () => {
      try {
        for await (const r of { [Symbol.asyncIterator]: () => iterator }) this.results.push({ ...r, at: Date.now() });
      } catch (err) {
        this.failure = err;
      }
      this.completed = true;
    })();
  }

  /** The next result, or a failure after `ms`. */
  async next(ms = 2000): Promise<any> {
    await until('the next event', () => this.results.length > this.read || this.completed, ms);
    if (this.results.length <= this.read)
      throw new Error(`the stream ended instead: ${String(this.failure ?? 'complete')}`);
    return this.results[this.read++];
  }

  /** Nothing more arrived (yet): the check that follows a later event that proves delivery went on. */
  get pending(): number {
    return this.results.length - this.read;
  }

  close() {
    return this.iterator.return?.();
  }
}

/** Listeners each kind of stream holds: its topics, plus the revocation topic of its key. */
const LISTENERS = { commentPosted: 3, versionReleased: 2, downloadChanged: 2 } as const;

/** Streams a test opened; closed after each test, so one failing test leaves nothing open for the next. */
const opened: Stream[] = [];
async function closeAll(t: TestApp | undefined, baseline = 0) {
  await Promise.all(opened.splice(0).map((s) => s.close()));
  if (t) await until('every listener to go', () => t.app.services.events.listenerCount === baseline);
}

/**
 * How long "nothing arrives" is watched for. An event is checked and delivered within a few milliseconds here
 * (each subscriber on its own): a withheld one would have arrived long before.
 */
const QUIET_MS = 300;

/** Opens a subscription with graphql-sse and waits until the server listens for its events. */
async function subscribe(
  t: TestApp,
  query: string,
  key: string,
  variables: Record<string, unknown> = {},
): Promise<Stream> {
  const field = Object.keys(LISTENERS).find((f) => query.includes(f)) as keyof typeof LISTENERS;
  const events = t.app.services.events;
  const before = events.listenerCount;
  const client = createClient({
    url: `${t.url}/graphql`,
    headers: { 'Forum-Api-Key': key },
    singleConnection: false,
    retryAttempts: 0,
  });
  const stream = new Stream(client.iterate({ query, variables }));
  opened.push(stream);
  await until(`${field} to listen`, () => events.listenerCount >= before + LISTENERS[field] || stream.completed);
  return stream;
}

/** A raw SSE exchange: status, content type and the parsed events of a stream that ends by itself. */
async function sse(t: TestApp, query: string, key: string | null, method: 'GET' | 'POST' = 'POST') {
  const url = new URL('/graphql', t.url);
  const headers: Record<string, string> = { accept: 'text/event-stream', ...(key ? { 'Forum-Api-Key': key } : {}) };
  let body: string | undefined;
  if (method === 'GET') url.searchParams.set('query', query);
  else {
    body = JSON.stringify({ query });
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  const json = res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined;
  const events = text
    .split('\n\n')
    .filter((b) => b.startsWith('event:'))
    .map((b) => {
      const [, event] = /^event: (\w+)/.exec(b)!;
      const data = /\ndata: ?(.*)$/s.exec(b)?.[1] ?? '';
      return { event, data: data ? JSON.parse(data) : null };
    });
  return { status: res.status, type: res.headers.get('content-type'), events, json };
}

forEachDatabase((kind) => {
  let t: TestApp;
  let author: { userId: number; key: string };
  let reader: { userId: number; key: string };
  let poster: { userId: number; key: string };
  let mod: { userId: number; key: string };
  let guest: string;
  let cat: number;
  let dl: number;
  let baseline: number;

  const category = async (title: string, knobs: Record<string, number> = {}) => {
    const id = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title } })).body.category
      .category_id as number;
    if (Object.keys(knobs).length) await t.rest('PUT', `/api/mc-dm-categories/${id}/`, { form: knobs });
    return id;
  };
  const download = async (title: string, categoryId = cat, key = author.key) => {
    const r = await t.rest('POST', '/api/mc-dm-downloads/', { key, form: { category_id: categoryId, title } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.download as { download_id: number; current_version_id: number; download_state: string };
  };
  const post = async (downloadId: number, message: string, key = author.key) => {
    const r = await t.rest('POST', '/api/mc-dm-comments/', { key, form: { download_id: downloadId, message } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.comment as { comment_id: number; comment_state: string };
  };
  const permission = (categoryId: number, group: string, perm: string, value: 'ALLOW' | 'DENY' | 'INHERIT') =>
    t.gqlOk(
      `mutation { setCategoryPermission(input: { categoryId: ${categoryId}, group: "${group}", permission: "${perm}", value: ${value} }) { ok } }`,
    );
  const newVersion = async (downloadId: number, versionString: string) =>
    (
      await t.gqlOk(
        `mutation($i: CreateVersionInput!) { createVersion(input: $i) { version { versionId } } }`,
        { i: { downloadId, versionString } },
        author.key,
      )
    ).createVersion.version.versionId as number;
  const listeners = () => t.app.services.events.listenerCount;

  beforeAll(async () => {
    t = await startTestApp(kind, { commentFloodSeconds: 0 });
    author = await t.user('author');
    reader = await t.user('reader');
    poster = await t.user('poster');
    mod = await t.user('moderator', { isModerator: true });
    guest = await t.key('GUEST');
    cat = await category('Live');
    dl = (await download('Watched')).download_id;
    baseline = listeners();
  });
  afterEach(() => closeAll(t, baseline));
  afterAll(async () => {
    await t?.close();
  });

  const COMMENT =
    'subscription($d: Int!) { commentPosted(downloadId: $d) { commentId downloadId message username commentState } }';
  const VERSION =
    'subscription($d: Int, $c: Int) { versionReleased(downloadId: $d, categoryId: $c) { versionId downloadId versionString } }';
  const CHANGED =
    'subscription($d: Int!) { downloadChanged(downloadId: $d) { downloadId title downloadState currentVersionId } }';

  describe('commentPosted', () => {
    it('delivers a posted comment over SSE to a graphql-sse client within a second', async () => {
      const s = await subscribe(t, COMMENT, reader.key, { d: dl });
      const sent = Date.now();
      const c = await post(dl, 'Live [b]now[/b]');
      const r = await s.next(1000);
      expect(r.errors).toBeUndefined();
      expect(r.data.commentPosted).toEqual({
        commentId: c.comment_id,
        downloadId: dl,
        message: 'Live [b]now[/b]',
        username: 'author',
        commentState: 'VISIBLE',
      });
      expect(r.at - sent).toBeLessThan(1000);
      await s.close();
      await until('listeners to go', () => listeners() === baseline);
    });

    it('answers GET /graphql?query=subscription… with Accept: text/event-stream, and frees the listeners when the client aborts', async () => {
      const url = new URL('/graphql', t.url);
      url.searchParams.set('query', `subscription { commentPosted(downloadId: ${dl}) { commentId message } }`);
      const abort = new AbortController();
      const res = await fetch(url, {
        headers: { accept: 'text/event-stream', 'Forum-Api-Key': guest },
        signal: abort.signal,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      await until('the stream to listen', () => listeners() === baseline + LISTENERS.commentPosted);
      const c = await post(dl, 'over GET');
      const reader_ = res.body!.getReader();
      let text = '';
      while (!text.includes('event: next')) text += new TextDecoder().decode((await reader_.read()).value);
      await until('the whole event', async () => {
        if (text.includes('\n\n', text.indexOf('event: next'))) return true;
        text += new TextDecoder().decode((await reader_.read()).value);
        return false;
      });
      const data = JSON.parse(/event: next\ndata: (.*)\n/.exec(text)![1]!);
      expect(data).toEqual({ data: { commentPosted: { commentId: c.comment_id, message: 'over GET' } } });
      abort.abort();
      await until('listeners to go after the abort', () => listeners() === baseline);
    });

    it('delivers a comment awaiting approval to its author and moderators only', async () => {
      const strict = await category('Strict', { require_comment_approval: 1 });
      const d = (await download('Moderated talk', strict)).download_id;
      const asPoster = await subscribe(t, COMMENT, poster.key, { d });
      const asMod = await subscribe(t, COMMENT, mod.key, { d });
      const asOwner = await subscribe(t, COMMENT, author.key, { d }); // owns the download, but is no moderator
      const asGuest = await subscribe(t, COMMENT, guest, { d });
      const pending = await post(d, 'please approve', poster.key);
      expect(pending.comment_state).toBe('moderated');
      const visible = await post(d, 'approved from the start', mod.key);
      expect((await asPoster.next()).data.commentPosted).toMatchObject({
        commentId: pending.comment_id,
        commentState: 'MODERATED',
      });
      expect((await asMod.next()).data.commentPosted).toMatchObject({
        commentId: pending.comment_id,
        commentState: 'MODERATED',
      });
      expect((await asMod.next()).data.commentPosted.commentId).toBe(visible.comment_id);
      expect((await asPoster.next()).data.commentPosted.commentId).toBe(visible.comment_id);
      // Those who may not see the pending comment get the next one first: the pending one never reached them.
      expect((await asOwner.next()).data.commentPosted.commentId).toBe(visible.comment_id);
      expect((await asGuest.next()).data.commentPosted.commentId).toBe(visible.comment_id);
      for (const s of [asPoster, asMod, asOwner, asGuest]) {
        expect(s.pending).toBe(0);
        await s.close();
      }
      await until('listeners to go', () => listeners() === baseline);
    });
  });

  describe('delivery-time permissions', () => {
    it('a guest whose category is hidden after subscribing receives nothing until it is shown again', async () => {
      const open = await category('Open');
      const d = (await download('Soon hidden', open)).download_id;
      const guestComments = await subscribe(t, COMMENT, guest, { d });
      const guestChanges = await subscribe(t, CHANGED, guest, { d });
      const readerComments = await subscribe(t, COMMENT, reader.key, { d });
      await permission(open, 'guest', 'view', 'DENY');
      const hidden = await post(d, 'not for guests');
      await t.gqlOk(
        `mutation { updateDownload(input: { downloadId: ${d}, title: "Hidden title" }) { download { title } } }`,
        {},
        author.key,
      );
      expect((await readerComments.next()).data.commentPosted.commentId).toBe(hidden.comment_id);
      await sleep(QUIET_MS);
      expect(guestComments.pending + guestChanges.pending).toBe(0);
      // Each event is read when it is delivered: showing the category again must not release the withheld ones.
      await permission(open, 'guest', 'view', 'INHERIT');
      const shown = await post(d, 'for everyone');
      await t.gqlOk(
        `mutation { updateDownload(input: { downloadId: ${d}, title: "Shown title" }) { download { title } } }`,
        {},
        author.key,
      );
      expect((await guestComments.next()).data.commentPosted).toMatchObject({
        commentId: shown.comment_id,
        message: 'for everyone',
      });
      expect((await guestChanges.next()).data.downloadChanged.title).toBe('Shown title');
      expect(guestComments.pending + guestChanges.pending).toBe(0);
      for (const s of [guestComments, guestChanges, readerComments]) await s.close();
      await until('listeners to go', () => listeners() === baseline);
    });
  });

  describe('versionReleased', () => {
    it("delivers releases by download, by category, or all the visitor may see, a new download's first version included", async () => {
      const other = await category('Elsewhere');
      const strict = await category('Approval needed', { require_approval: 1 });
      const byDownload = await subscribe(t, VERSION, reader.key, { d: dl });
      const byCategory = await subscribe(t, VERSION, reader.key, { c: cat });
      const byBoth = await subscribe(t, VERSION, reader.key, { d: dl, c: cat });
      const mismatched = await subscribe(t, VERSION, reader.key, { d: dl, c: other });
      const allGuest = await subscribe(t, VERSION, guest);
      const allMod = await subscribe(t, VERSION, mod.key);
      const v2 = await newVersion(dl, '2.0');
      const fresh = await download('Brand new', other);
      const moderated = await download('Awaiting approval', strict, poster.key);
      expect(moderated.download_state).toBe('moderated');
      const v3 = await newVersion(dl, '3.0');

      const seen = async (s: Stream, n: number) => {
        const out: number[] = [];
        for (let i = 0; i < n; i++) out.push((await s.next()).data.versionReleased.versionId);
        return out;
      };
      expect(await seen(byDownload, 2)).toEqual([v2, v3]);
      expect(await seen(byCategory, 2)).toEqual([v2, v3]);
      expect(await seen(byBoth, 2)).toEqual([v2, v3]);
      expect(await seen(allGuest, 3)).toEqual([v2, fresh.current_version_id, v3]);
      expect(await seen(allMod, 4)).toEqual([v2, fresh.current_version_id, moderated.current_version_id, v3]);
      const first = byDownload.results[0].data.versionReleased;
      expect(first).toEqual({ versionId: v2, downloadId: dl, versionString: '2.0' });
      await sleep(QUIET_MS);
      expect(mismatched.pending).toBe(0); // that download is not in that category
      for (const s of [byDownload, byCategory, byBoth, mismatched, allGuest, allMod]) {
        expect(s.pending).toBe(0);
        await s.close();
      }
      await until('listeners to go', () => listeners() === baseline);
    });
  });

  describe('downloadChanged', () => {
    it('delivers updates, versions, soft delete and restore to those who may view the download, and ends after a hard delete', async () => {
      const d = await download('Changing');
      const id = d.download_id;
      const asReader = await subscribe(t, CHANGED, reader.key, { d: id });
      const asMod = await subscribe(t, CHANGED, mod.key, { d: id });
      // A delivered event carries the download as it is when delivered, so each step waits for its delivery.
      const next = async (s: Stream) => {
        const e = (await s.next()).data.downloadChanged;
        return `${e.title}/${e.downloadState}/${e.currentVersionId === d.current_version_id ? 'v1' : 'v2'}`;
      };
      const update = (title: string) =>
        t.gqlOk(
          `mutation { updateDownload(input: { downloadId: ${id}, title: "${title}" }) { download { title } } }`,
          {},
          author.key,
        );
      await update('Changed');
      expect(await next(asMod)).toBe('Changed/VISIBLE/v1');
      expect(await next(asReader)).toBe('Changed/VISIBLE/v1');
      await update('Changed'); // changes nothing: no event
      await sleep(QUIET_MS);
      expect(asMod.pending + asReader.pending).toBe(0);

      expect((await t.rest('DELETE', `/api/mc-dm-downloads/${id}/`, { key: author.key })).status).toBe(200);
      expect(await next(asMod)).toBe('Changed/DELETED/v1');
      await sleep(QUIET_MS);
      expect(asReader.pending).toBe(0); // the reader may not view a deleted download

      await t.gqlOk(
        `mutation { restoreDownload(input: { downloadId: ${id} }) { download { downloadState } } }`,
        {},
        mod.key,
      );
      expect(await next(asMod)).toBe('Changed/VISIBLE/v1');
      expect(await next(asReader)).toBe('Changed/VISIBLE/v1');
      await newVersion(id, '1.1');
      expect(await next(asMod)).toBe('Changed/VISIBLE/v2');
      expect(await next(asReader)).toBe('Changed/VISIBLE/v2');

      expect((await t.rest('DELETE', `/api/mc-dm-downloads/${id}/`, { query: { hard: 1 } })).status).toBe(200);
      for (const s of [asReader, asMod]) {
        const end = await s.next();
        expect(end.data).toBeNull();
        expect(end.errors[0].extensions).toMatchObject({
          code: 'mc_dm_api_error.download_not_found',
          params: { download_id: id },
        });
        await until('the stream to complete', () => s.completed);
        expect(s.failure).toBeUndefined();
      }
      await until('listeners to go', () => listeners() === baseline);
    });

    it('a REST write publishes too (the adapter runs the same mutations)', async () => {
      const s = await subscribe(t, CHANGED, guest, { d: dl });
      expect(
        (await t.rest('PUT', `/api/mc-dm-downloads/${dl}/`, { key: author.key, form: { tag_line: 'From REST' } }))
          .status,
      ).toBe(200);
      expect((await s.next()).data.downloadChanged.downloadId).toBe(dl);
      await s.close();
      await until('listeners to go', () => listeners() === baseline);
    });
  });

  describe('keys', () => {
    it('revoking the key ends its streams with api_key_inactive, and nothing is delivered after', async () => {
      const { createApiKey } = await t.gqlOk(
        `mutation { createApiKey(input: { type: USER, userId: ${reader.userId}, scopes: ["all"] }) { key apiKey { apiKeyId } } }`,
      );
      const s = await subscribe(t, COMMENT, createApiKey.key, { d: dl });
      const other = await subscribe(t, COMMENT, reader.key, { d: dl }); // another key of the same user goes on
      await t.gqlOk(
        `mutation { revokeApiKey(input: { apiKeyId: ${createApiKey.apiKey.apiKeyId} }) { apiKey { isActive } } }`,
      );
      const end = await s.next();
      expect(end.data).toBeNull();
      expect(end.errors[0].extensions.code).toBe('api_key_inactive');
      await until('the stream to complete', () => s.completed);
      const c = await post(dl, 'after the revocation');
      expect((await other.next()).data.commentPosted.commentId).toBe(c.comment_id);
      expect(s.results).toHaveLength(1);
      await other.close();
      await until('listeners to go', () => listeners() === baseline);
    });

    it('a key found inactive when an event arrives ends the stream with that error, the event undelivered', async () => {
      // As when the revocation was written by an instance whose broadcast never arrived: only the database knows.
      const { createApiKey } = await t.gqlOk(
        `mutation { createApiKey(input: { type: USER, userId: ${reader.userId}, scopes: ["all"] }) { key apiKey { apiKeyId } } }`,
      );
      const s = await subscribe(t, COMMENT, createApiKey.key, { d: dl });
      await t.prisma.apiKey.update({ where: { id: createApiKey.apiKey.apiKeyId }, data: { isActive: false } });
      t.app.services.auth.keys.delete(hashKey(createApiKey.key)); // this instance's cache, as CACHE_SECONDS would
      await post(dl, 'not for a revoked key');
      const end = await s.next();
      expect(end.data).toBeNull();
      expect(end.errors[0].extensions.code).toBe('api_key_inactive');
      await until('the stream to complete', () => s.completed);
      expect(s.results).toHaveLength(1);
    });
  });

  describe('refusals at subscribe time', () => {
    it('answers the contract code, with its status, and opens nothing', async () => {
      const hidden = await category('Hidden from guests');
      const hiddenDl = (await download('Secret', hidden)).download_id;
      await permission(hidden, 'guest', 'view', 'DENY');
      const quiet = await category('No comments for guests');
      const quietDl = (await download('Quiet', quiet)).download_id;
      await permission(quiet, 'guest', 'viewComments', 'DENY');
      const categoryOnly = await t.key('USER', ['mc_dm_category:read'], reader.userId);

      const cases: [string, string | null, number, string, Record<string, unknown>][] = [
        [
          `commentPosted(downloadId: ${dl}) { commentId }`,
          categoryOnly,
          403,
          'api_scope_missing',
          { scope: 'mc_dm_download:read' },
        ],
        [`versionReleased { versionId }`, categoryOnly, 403, 'api_scope_missing', { scope: 'mc_dm_download:read' }],
        [
          `downloadChanged(downloadId: ${dl}) { title }`,
          categoryOnly,
          403,
          'api_scope_missing',
          { scope: 'mc_dm_download:read' },
        ],
        [
          'commentPosted(downloadId: 99999) { commentId }',
          guest,
          404,
          'mc_dm_api_error.download_not_found',
          { download_id: 99999 },
        ],
        [
          'downloadChanged(downloadId: 99999) { title }',
          guest,
          404,
          'mc_dm_api_error.download_not_found',
          { download_id: 99999 },
        ],
        [
          'versionReleased(downloadId: 99999) { versionId }',
          guest,
          404,
          'mc_dm_api_error.download_not_found',
          { download_id: 99999 },
        ],
        [
          'versionReleased(categoryId: 99999) { versionId }',
          guest,
          404,
          'mc_dm_api_error.category_not_found',
          { category_id: 99999 },
        ],
        [`commentPosted(downloadId: ${hiddenDl}) { commentId }`, guest, 403, 'do_not_have_permission', {}],
        [`downloadChanged(downloadId: ${hiddenDl}) { title }`, guest, 403, 'do_not_have_permission', {}],
        [`versionReleased(categoryId: ${hidden}) { versionId }`, guest, 403, 'do_not_have_permission', {}],
        [`commentPosted(downloadId: ${quietDl}) { commentId }`, guest, 403, 'do_not_have_permission', {}],
        [`commentPosted(downloadId: ${dl}) { commentId }`, null, 401, 'no_api_key_in_request', {}],
        [`commentPosted(downloadId: ${dl}) { commentId }`, 'dm_no_such_key', 401, 'api_key_not_found', {}],
      ];
      for (const [field, key, status, code, params] of cases) {
        for (const method of ['POST', 'GET'] as const) {
          const r = await sse(t, `subscription { ${field} }`, key, method);
          if (status === 401 || code === 'api_scope_missing') {
            // Refused before it runs (who asks, with which rights): a JSON answer with the code's status.
            expect(r.status, `${method} ${field}`).toBe(status);
            expect(r.type).toContain('json');
            expect(r.json.errors[0].extensions, field).toMatchObject({ code, params });
          } else {
            // Refused by its resolver: a 200 stream carrying the error result, then complete.
            expect(r.status, `${method} ${field}`).toBe(200);
            expect(r.type).toContain('text/event-stream');
            expect(
              r.events.map((e) => e.event),
              field,
            ).toEqual(['next', 'complete']);
            expect(r.events[0]!.data.errors[0].extensions, field).toMatchObject({ code, params });
            expect(r.events[0]!.data.errors[0].message).toMatch(/\w+ \w+/);
          }
        }
      }
      // Comments hidden, the download itself is not: its changes can still be watched.
      const ok = await subscribe(t, CHANGED, guest, { d: quietDl });
      expect(ok.completed).toBe(false);
      await ok.close();

      for (const bad of [
        'commentPosted(downloadId: "one") { commentId }',
        'commentPosted { commentId }',
        'downloadChanged(downloadId: 1) { nope }',
      ]) {
        const r = await sse(t, `subscription { ${bad} }`, guest);
        expect(r.status, bad).toBe(400);
        expect(r.json.errors[0].extensions.code, bad).toBe('invalid_input');
      }
      await until('listeners to go', () => listeners() === baseline);
    });

    it('a subscription asked for as JSON answers invalid_input naming the header to send', async () => {
      for (const accept of ['application/json', 'application/graphql-response+json']) {
        const res = await fetch(`${t.url}/graphql`, {
          method: 'POST',
          headers: { accept, 'content-type': 'application/json', 'Forum-Api-Key': guest },
          body: JSON.stringify({ query: `subscription { downloadChanged(downloadId: ${dl}) { title } }` }),
        });
        expect(res.status).toBe(400);
        expect(res.headers.get('content-type')).toContain(accept);
        const body = (await res.json()) as any;
        expect(body.errors[0].extensions).toMatchObject({ code: 'invalid_input', params: { field: 'accept' } });
        expect(body.errors[0].message).toContain('Accept: text/event-stream');
      }
      expect(listeners()).toBe(baseline);
    });

    it('a graphql-sse client receives a refusal by the resolver as an error with its code, at once, and does not retry', async () => {
      // an unknown download, and one the visitor may not view
      const hidden = await category('Hidden from graphql-sse');
      const hiddenDl = (await download('Not for guests', hidden)).download_id;
      await permission(hidden, 'guest', 'view', 'DENY');
      for (const [downloadId, refusal] of [
        [99999, { code: 'mc_dm_api_error.download_not_found', params: { download_id: 99999 } }],
        [hiddenDl, { code: 'do_not_have_permission' }],
      ] as const) {
        let attempts = 0;
        const client = createClient({
          url: `${t.url}/graphql`,
          headers: { 'Forum-Api-Key': guest },
          singleConnection: false,
          retryAttempts: 5,
          fetchFn: (input: RequestInfo | URL, init?: RequestInit) => {
            attempts += 1;
            return fetch(input, init);
          },
        });
        const started = Date.now();
        // the sink sees the error result, then the end of the operation: nothing else, and within a second
        const seen: string[] = [];
        const received = await new Promise<{ errors?: any[]; error?: unknown }>((resolve) => {
          let result: { errors?: any[] } | undefined;
          client.subscribe(
            { query: `subscription { downloadChanged(downloadId: ${downloadId}) { title } }` },
            {
              next: (value) => {
                seen.push('next');
                result = value as { errors?: any[] };
              },
              error: (error) => {
                seen.push('error');
                resolve({ error });
              },
              complete: () => {
                seen.push('complete');
                resolve(result ?? {});
              },
            },
          );
        });
        expect(received.error, refusal.code).toBeUndefined();
        expect(seen, refusal.code).toEqual(['next', 'complete']);
        expect(received.errors?.[0].extensions).toMatchObject(refusal);
        expect(Date.now() - started, refusal.code).toBeLessThan(1000);
        await new Promise((r) => setTimeout(r, 300));
        expect(attempts, refusal.code).toBe(1);
        client.dispose();
      }
      expect(listeners()).toBe(baseline);
    });

    it('a graphql-sse client refused before the stream (no key) gets the status and the JSON error', async () => {
      // graphql-sse retries every non-2xx answer as a network failure (retryAttempts, 5 by default); what it reports
      // once it gives up is the response, whose body names the code.
      const client = createClient({ url: `${t.url}/graphql`, singleConnection: false, retryAttempts: 0 });
      const failure = await new Promise<unknown>((resolve) => {
        client.subscribe(
          { query: `subscription { downloadChanged(downloadId: ${dl}) { title } }` },
          { next: () => {}, error: resolve, complete: () => resolve(undefined) },
        );
      });
      const res = (failure as { response?: Response }).response;
      expect(res?.status).toBe(401);
      expect(res?.headers.get('content-type')).toContain('json');
      expect(((await res!.json()) as any).errors[0].extensions.code).toBe('no_api_key_in_request');
    });
  });

  describe('closing', () => {
    it('streams closed by their clients leave no listener behind', async () => {
      const streams = [
        await subscribe(t, COMMENT, reader.key, { d: dl }),
        await subscribe(t, VERSION, guest),
        await subscribe(t, CHANGED, mod.key, { d: dl }),
      ];
      expect(listeners()).toBe(
        baseline + LISTENERS.commentPosted + LISTENERS.versionReleased + LISTENERS.downloadChanged,
      );
      for (const s of streams) await s.close();
      await until('listeners to go', () => listeners() === baseline);
      // And the instance still delivers afterwards.
      const s = await subscribe(t, COMMENT, reader.key, { d: dl });
      const c = await post(dl, 'still live');
      expect((await s.next()).data.commentPosted.commentId).toBe(c.comment_id);
      await s.close();
      await until('listeners to go', () => listeners() === baseline);
    });
  });
});

describe('configuration', () => {
  it('reads REDIS_URL and REDIS_CHANNEL_PREFIX, and refuses a URL of another kind', () => {
    expect(loadConfig({})).toMatchObject({ redisUrl: undefined, redisChannelPrefix: 'dcs:' });
    expect(loadConfig({ REDIS_URL: 'redis://cache:6379/2', REDIS_CHANNEL_PREFIX: 'shop1:' })).toMatchObject({
      redisUrl: 'redis://cache:6379/2',
      redisChannelPrefix: 'shop1:',
    });
    expect(() => loadConfig({ REDIS_URL: 'http://cache' })).toThrow(ConfigError);
    expect(() => loadConfig({ REDIS_URL: 'http://cache' })).toThrow('REDIS_URL');
  });
});

describe('Redis unreachable', () => {
  it('the service starts, writes answer, the loss is logged, and it closes promptly', async () => {
    const logs: { msg: string }[] = [];
    const log = pino(
      { level: 'info' },
      {
        write: (line: string) => {
          logs.push(JSON.parse(line));
        },
      },
    );
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-subs-'));
    const config = loadConfig(
      {},
      {
        port: 0,
        host: '127.0.0.1',
        dataDir,
        logLevel: 'silent',
        bootstrapKey: SUPER_KEY,
        redisUrl: 'redis://127.0.0.1:1',
      },
    );
    const t = new TestApp(
      await startApp(config, { db: await openDatabase((await migratedDatabase('pglite')).target), log }),
      config,
      async () => fs.rmSync(dataDir, { recursive: true, force: true }),
    );
    try {
      const user = await t.user('offline');
      const catId = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Offline' } })).body.category
        .category_id;
      const r = await t.rest('POST', '/api/mc-dm-downloads/', {
        key: user.key,
        form: { category_id: catId, title: 'Published nowhere' },
      });
      expect(r.status).toBe(200);
      const s = await subscribe(t, 'subscription($d: Int!) { downloadChanged(downloadId: $d) { title } }', user.key, {
        d: r.body.download.download_id,
      });
      expect(s.completed).toBe(false);
      await until('the loss to be logged', () =>
        logs.some((l) => l.msg === 'events: Redis connection lost; reconnecting'),
      );
    } finally {
      const started = Date.now();
      await closeAll(t);
      await t.close();
      expect(Date.now() - started).toBeLessThan(2000);
    }
  });
});

// ---- Two instances, one PostgreSQL database, events through Redis ----

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function answers(): Promise<string | null> {
  if (!process.env.TEST_DATABASE_URL) return 'TEST_DATABASE_URL is not set';
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (err) {
    return `PostgreSQL does not answer (${(err as Error).message})`;
  } finally {
    await client.end().catch(() => {});
  }
  const redis = new Redis(REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 1000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    return `Redis does not answer at ${REDIS_URL} (${(err as Error).message})`;
  } finally {
    redis.disconnect();
  }
  return null;
}

const unavailable = await answers();
if (unavailable) console.warn(`subscriptions across instances skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('two instances sharing PostgreSQL and Redis', () => {
  let a: TestApp;
  let b: TestApp;
  let redis: Redis;
  let drop: () => Promise<void>;
  const prefix = `dcs-test-${crypto.randomBytes(4).toString('hex')}:`;

  /** What B logs (warnings and up, plus the Redis recovery line), as parsed JSON lines. */
  const logsOfB: { level: number; msg: string }[] = [];
  const captured = pino(
    { level: 'info' },
    {
      write: (line: string) => {
        logsOfB.push(JSON.parse(line));
      },
    },
  );

  // Instances on one database share one local storage directory (a split one is refused at start).
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dcs-subs-'));
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  async function instance(url: string, log = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent')): Promise<TestApp> {
    const config = loadConfig(
      {},
      {
        port: 0,
        host: '127.0.0.1',
        dataDir,
        logLevel: 'silent',
        bootstrapKey: SUPER_KEY,
        commentFloodSeconds: 0,
        redisUrl: REDIS_URL,
        redisChannelPrefix: prefix,
      },
    );
    const app = await startApp(config, { db: await openDatabase({ url }), log });
    return new TestApp(app, config, async () => {});
  }
  /** Redis has the subscription of `channel` (B's listener is in place before A publishes). */
  const subscribed = (channel: string) =>
    until(`Redis to know ${channel}`, async () => {
      const [, n] = (await redis.pubsub('NUMSUB', prefix + channel)) as [string, number];
      return Number(n) >= 1;
    });

  beforeAll(async () => {
    const fresh = await freshPostgres();
    drop = fresh.drop;
    a = await instance(fresh.url);
    b = await instance(fresh.url, captured);
    redis = new Redis(REDIS_URL);
  });
  afterEach(() => closeAll(undefined));
  afterAll(async () => {
    await a?.close();
    await b?.close();
    redis?.disconnect();
    await drop?.();
  });

  it('a comment posted on A reaches a subscriber on B within a second; a key revoked on A ends its stream on B', async () => {
    expect(a.app.services.events.transport).toBe('redis');
    const user = await a.user('crosser');
    const catId = (await a.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Shared' } })).body.category
      .category_id;
    const d = (
      await a.rest('POST', '/api/mc-dm-downloads/', {
        key: user.key,
        form: { category_id: catId, title: 'Everywhere' },
      })
    ).body.download.download_id;
    const { createApiKey } = await a.gqlOk(
      `mutation { createApiKey(input: { type: GUEST, scopes: ["all"] }) { key apiKey { apiKeyId } } }`,
    );

    const onB = await subscribe(
      b,
      'subscription($d: Int!) { commentPosted(downloadId: $d) { commentId message } }',
      createApiKey.key,
      { d },
    );
    await subscribed(`commentPosted:${d}`);
    const sent = Date.now();
    const c = (
      await a.rest('POST', '/api/mc-dm-comments/', { key: user.key, form: { download_id: d, message: 'from A' } })
    ).body.comment;
    const got = await onB.next(1000);
    const ms = got.at - sent;
    console.info(`comment posted on A delivered on B in ${ms} ms`);
    expect(ms).toBeLessThan(1000);
    expect(got.data.commentPosted).toEqual({ commentId: c.comment_id, message: 'from A' });

    await a.gqlOk(
      `mutation { revokeApiKey(input: { apiKeyId: ${createApiKey.apiKey.apiKeyId} }) { apiKey { isActive } } }`,
    );
    expect((await onB.next()).errors[0].extensions.code).toBe('api_key_inactive');
    await until('the stream on B to complete', () => onB.completed);
    await until('B to free its listeners', () => b.app.services.events.listenerCount === 0);
  });

  it('after the Redis connections drop, the instances reconnect and events flow again', async () => {
    const user = await a.user('reconnecting');
    const catId = (await a.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Flaky' } })).body.category
      .category_id;
    const d = (
      await a.rest('POST', '/api/mc-dm-downloads/', {
        key: user.key,
        form: { category_id: catId, title: 'Still there' },
      })
    ).body.download.download_id;
    const onB = await subscribe(b, 'subscription($d: Int!) { commentPosted(downloadId: $d) { commentId } }', user.key, {
      d,
    });
    await subscribed(`commentPosted:${d}`);

    const ours = ((await redis.client('LIST')) as string)
      .split('\n')
      .filter((l) => l.includes(` name=${prefix}events-`));
    expect(ours.length).toBe(4); // publish + subscribe, on each instance
    for (const line of ours) await redis.client('KILL', 'ID', /(?:^|\s)id=(\d+)/.exec(line)![1]!);
    await sleep(100);
    await subscribed(`commentPosted:${d}`); // ioredis subscribed again by itself
    const events = logsOfB.filter((l) => l.msg.startsWith('events: Redis'));
    expect(events.map((l) => l.msg)).toEqual(
      expect.arrayContaining(['events: Redis connection lost; reconnecting', 'events: Redis connection restored']),
    );

    const c = (
      await a.rest('POST', '/api/mc-dm-comments/', {
        key: user.key,
        form: { download_id: d, message: 'after the outage' },
      })
    ).body.comment;
    expect((await onB.next(2000)).data.commentPosted.commentId).toBe(c.comment_id);
    await onB.close();
  });
});
