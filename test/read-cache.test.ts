// The read cache (src/http/read-cache.ts): a read sent again is answered from memory while the tables it read are
// unchanged, and never otherwise. Checked on both faces and both databases, one test per rule: writes through the
// service, writes straight into the database, writes to tables an answer did not read (kept), counters (at most the
// lag late), other visitors, revoked keys, mutations and errors, a second instance on the same PostgreSQL database,
// and a random run of reads and writes in which every answer given is compared with one computed afresh.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReadCache, SHARE_WAIT_MS } from '../src/http/read-cache.js';
import {
  CATEGORY_TABLES,
  COUNTER_COLUMNS,
  DOWNLOAD_TABLES,
  StatementReader,
  type TableVersions,
} from '../src/db/cache-versions.js';
import { OPERATION, type Carrier } from '../src/db/operation-scope.js';
import { LIMITS } from '../src/config.js';
import { forEachDatabaseSideBySide, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';

/** Versions as the database would give them, from a plain object. */
const versions = (of: Record<string, number> = {}, pending = 0): TableVersions => ({
  of: new Map(Object.entries(of).map(([t, v]) => [t, String(v)])),
  all: Object.entries(of)
    .sort()
    .map(([t, v]) => `${t}=${v};`)
    .join(''),
  pending,
});

const reader = new StatementReader([
  'category',
  'comment',
  'download',
  'prefix',
  'a',
  'b',
  'api_key',
  'download_daily_stats',
  'unnest',
]);
const readsOf = (sql: string | undefined) => reader.readsOf(sql);

describe('StatementReader: the tables a statement read', () => {
  it('names every table the text names: quoted, qualified, in joins, comma lists and subqueries', () => {
    expect(readsOf('SELECT "public"."category"."id" FROM "public"."category" WHERE 1=1')).toEqual(['category']);
    expect(
      readsOf(
        'SELECT c.id, d.title FROM comment c JOIN "download" d ON d.id = c."downloadId" LEFT JOIN Prefix p ON 1=1',
      ),
    ).toEqual(['comment', 'download', 'prefix']);
    expect(readsOf('SELECT 1 FROM a x, b WHERE x.id IN (SELECT id FROM "comment")')).toEqual(['a', 'b', 'comment']);
    expect(readsOf("SELECT x FROM generate_series(1, 3) AS v(x) WHERE 'download' <> 'comment'")).toEqual([]);
    expect(readsOf('SELECT 1 FROM "Download"')).toEqual([]); // quoted: case kept, not the table download
  });

  it('adds "<table>#counts" when the statement names a counter column or selects *', () => {
    expect(readsOf('SELECT d."viewCount" FROM download d')).toEqual(['download', 'download#counts']);
    expect(readsOf('SELECT d.* FROM download d')).toEqual(['download', 'download#counts']);
    expect(readsOf('SELECT count(*) FROM download d')).toEqual(['download']);
    expect(readsOf('SELECT "day", "views" FROM "download_daily_stats"')).toEqual([
      'download_daily_stats',
      'download_daily_stats#counts',
    ]);
  });

  it("leaves out a write's target when it reads nothing back, and an unreadable statement depends on all", () => {
    expect(readsOf('UPDATE "api_key" SET "lastUsedAt" = $1 WHERE id = $2')).toEqual([]);
    expect(readsOf('UPDATE "public"."api_key" SET "lastUsedAt" = $1 WHERE id = $2')).toEqual([]);
    expect(readsOf('UPDATE "download" SET "title" = $1 WHERE id = $2 RETURNING "id", "title"')).toEqual(['download']);
    expect(readsOf('INSERT INTO "a" ("x") SELECT y FROM "b"')).toEqual(['b']);
    expect(readsOf('DELETE FROM a USING b WHERE a.id = b.id')).toEqual(['b', 'a']); // named again: read
    expect(readsOf(undefined)).toBe('all');
  });
});

describe('ReadCache', () => {
  const deferred = () => {
    let resolve!: (s: TableVersions) => void;
    const promise = new Promise<TableVersions>((r) => {
      resolve = r;
    });
    return { promise, resolve };
  };
  const options = { maxBytes: 1000, ttlMs: 10_000, counterLagMs: 40, readsOf };

  it('gives every caller versions read after it asked: callers during a statement share the next one', async () => {
    const sent: ReturnType<typeof deferred>[] = [];
    const cache = new ReadCache({
      ...options,
      versions: () => {
        const d = deferred();
        sent.push(d);
        return d.promise;
      },
    });
    const first = cache.versions();
    const second = cache.versions();
    const third = cache.versions();
    expect(sent).toHaveLength(1);
    sent[0]!.resolve(versions({ a: 1 }));
    expect((await first).all).toBe('a=1;');
    await new Promise((r) => setImmediate(r));
    expect(sent).toHaveLength(2); // the second and third asked while the first was in flight: they wait for a new one
    sent[1]!.resolve(versions({ a: 2 }));
    expect((await second).all).toBe('a=2;');
    expect((await third).all).toBe('a=2;');
  });

  /** Computes `key`'s answer as reading `sql` (the statements the database layer would report). */
  const compute = async (cache: ReadCache, key: string, value: string, sql: (string | undefined)[]) => {
    const r = await cache.lookup<string>(key);
    if (!('store' in r)) throw new Error(`${key} was kept`);
    for (const q of sql) cache.observe(q);
    r.store(value, value.length);
  };
  const kept = async (cache: ReadCache, key: string) => {
    const r = await cache.lookup<string>(key);
    if ('drop' in r) r.drop();
    return 'value' in r ? r.value : undefined;
  };

  describe('concurrent misses of one answer', () => {
    const sql = ['SELECT title FROM download WHERE id = $1'];

    it('a miss after the same versions waits for the answer being computed, and gets it', async () => {
      const now = versions({ download: 1 });
      const cache = new ReadCache({ ...options, versions: async () => now });
      const first = await cache.lookup<string>('a');
      if (!('store' in first)) throw new Error('kept');
      const second = cache.lookup<string>('a'); // waits: the same versions, the same answer being computed
      await new Promise((r) => setTimeout(r, 20));
      cache.observe(sql[0]);
      first.store('A', 1);
      expect(await second).toEqual({ value: 'A' });
      expect(cache.counts).toEqual({ hit: 1, miss: 1 });
    });

    it('a miss after other versions computes its own', async () => {
      let n = 0;
      const cache = new ReadCache({ ...options, versions: async () => versions({ download: ++n }) });
      const first = await cache.lookup<string>('a');
      const second = await cache.lookup<string>('a'); // versions read later: a write may lie between the two
      expect('store' in first && 'store' in second).toBe(true);
      expect(cache.counts).toEqual({ hit: 0, miss: 2 });
    });

    it('a dropped answer, an emptied cache or an answer past the wait: the waiting miss computes its own', async () => {
      const now = versions({ download: 1 });
      const cache = new ReadCache({ ...options, ttlMs: 60_000, versions: async () => now });
      // Dropped (an answer with errors, say).
      let first = await cache.lookup<string>('a');
      let second = cache.lookup<string>('a');
      if ('drop' in first) first.drop();
      let own = await second;
      expect('store' in own).toBe(true);
      if ('drop' in own) own.drop();
      // Emptied meanwhile (a key revoked, permissions edited): what was computed may have read what changed.
      first = await cache.lookup<string>('b');
      second = cache.lookup<string>('b');
      await new Promise((r) => setImmediate(r));
      cache.clear();
      own = await second;
      expect('store' in own).toBe(true);
      if ('drop' in own) own.drop();
      if ('store' in first) first.store('B', 1);
      expect(await kept(cache, 'b')).toBeUndefined(); // not kept either
      // Never ended (an execution abandoned): the wait ends after SHARE_WAIT_MS.
      await cache.lookup<string>('c');
      const started = Date.now();
      expect('store' in (await cache.lookup<string>('c'))).toBe(true);
      expect(Date.now() - started).toBeGreaterThanOrEqual(SHARE_WAIT_MS - 50);
    });
  });

  it("counts a statement that names its operation for that operation's answer only (a PostgreSQL server)", async () => {
    let now = versions({ download: 1, comment: 1, category: 1 });
    const cache = new ReadCache({ ...options, versions: async () => now });
    const op = () => ({ signal: new AbortController().signal });
    const a = op();
    const b = op();
    const slotA: Carrier = {};
    const slotB: Carrier = {};
    const unbound: Carrier = {};
    const ra = await cache.lookup<string>('a', undefined, slotA);
    const rb = await cache.lookup<string>('b', undefined, slotB);
    const ru = await cache.lookup<string>('u', undefined, unbound);
    if (!('store' in ra) || !('store' in rb) || !('store' in ru)) throw new Error('kept');
    slotA[OPERATION] = a; // as boundTo does when the operation starts running
    slotB[OPERATION] = b;
    cache.observe('SELECT title FROM download', a);
    cache.observe('SELECT message FROM comment', b);
    cache.observe('SELECT title FROM category'); // no operation named (the embedded database): every answer's
    ra.store('A', 1);
    rb.store('B', 1);
    ru.store('U', 1);
    // A comment (B's statement) keeps A; a download (A's) keeps B; the statement of no operation counts for both;
    // the answer whose operation is not known counts every statement.
    now = versions({ download: 1, comment: 2, category: 1 });
    expect(await kept(cache, 'a')).toBe('A');
    expect(await kept(cache, 'b')).toBeUndefined();
    expect(await kept(cache, 'u')).toBeUndefined();
    await compute(cache, 'b', 'B', ['SELECT message FROM comment']);
    now = versions({ download: 2, comment: 2, category: 1 });
    expect(await kept(cache, 'a')).toBeUndefined();
    expect(await kept(cache, 'b')).toBe('B');
    await compute(cache, 'a', 'A', ['SELECT title FROM download', 'SELECT title FROM category']);
    now = versions({ download: 2, comment: 2, category: 2 });
    expect(await kept(cache, 'a')).toBeUndefined();
  });

  it("forgets, once its operation starts, what others' statements read while it waited its turn", async () => {
    let now = versions({ download: 1, comment: 1, category: 1 });
    const cache = new ReadCache({ ...options, versions: async () => now });
    const slot: Carrier = {};
    const other: Carrier = {};
    const r = await cache.lookup<string>('a', undefined, slot);
    const o = await cache.lookup<string>('o', undefined, other);
    if (!('store' in r) || !('store' in o)) throw new Error('kept');
    // The embedded database: no statement names its operation. While 'a' waits for its fair-share turn, another
    // operation writes comments and reads a statement no one can read the tables of.
    cache.observe('UPDATE comment SET message = $1 WHERE id = $2 RETURNING id, message');
    cache.observe(undefined);
    cache.started(slot); // 'a' is admitted
    cache.observe('SELECT title FROM download WHERE id = $1');
    r.store('A', 1);
    o.store('O', 1);
    // A comment written: 'a' (which read downloads only) is kept; the other answer counted it all.
    now = versions({ download: 1, comment: 2, category: 1 });
    expect(await kept(cache, 'a')).toBe('A');
    expect(await kept(cache, 'o')).toBeUndefined();
    // A download written: 'a' goes.
    now = versions({ download: 2, comment: 2, category: 1 });
    expect(await kept(cache, 'a')).toBeUndefined();
  });

  it('gives an answer again while the tables it read keep their versions, within its time to live', async () => {
    let now = versions({ download: 1, comment: 1 });
    const cache = new ReadCache({ ...options, ttlMs: 50, versions: async () => now });
    await compute(cache, 'd', 'download 1', ['SELECT title FROM download WHERE id = $1']);
    expect(await kept(cache, 'd')).toBe('download 1');
    now = versions({ download: 1, comment: 2 }); // a comment: not read
    expect(await kept(cache, 'd')).toBe('download 1');
    now = versions({ download: 2, comment: 2 });
    expect(await kept(cache, 'd')).toBeUndefined();
    await compute(cache, 'd', 'download 2', ['SELECT title FROM download WHERE id = $1']);
    expect(await kept(cache, 'd')).toBe('download 2');
    await new Promise((r) => setTimeout(r, 60));
    expect(await kept(cache, 'd')).toBeUndefined();
    expect(cache.counts).toEqual({ hit: 3, miss: 4 });
  });

  it('admission: with a window, a key is kept from its second request; its first reads no versions', async () => {
    let calls = 0;
    const cache = new ReadCache({
      ...options,
      admitWindow: 2,
      versions: async () => {
        calls++;
        return versions({ download: 1 });
      },
    });
    const sql = ['SELECT title FROM download WHERE id = $1'];
    const first = await cache.lookup<string>('a');
    if (!('store' in first)) throw new Error('a was kept');
    first.store('A', 1); // not kept: its versions were never read
    expect([calls, cache.size.entries]).toEqual([0, 0]);
    await compute(cache, 'a', 'A', sql); // asked again within the window: read with versions, kept
    expect([calls, cache.size.entries]).toEqual([1, 1]);
    expect(await kept(cache, 'a')).toBe('A');
    expect(calls).toBe(2);
    // The window holds the last 2 keys asked once: b is forgotten when d arrives, so b starts over; d is kept.
    for (const k of ['b', 'c', 'd']) await compute(cache, k, k, sql);
    expect(cache.size.entries).toBe(1);
    await compute(cache, 'b', 'b', sql);
    await compute(cache, 'd', 'd', sql);
    expect(await kept(cache, 'b')).toBeUndefined(); // (that lookup was b's second within the window: admitted again)
    expect(await kept(cache, 'd')).toBe('d');
    // Emptying the cache forgets the keys asked once too.
    cache.clear();
    await compute(cache, 'd', 'd', sql);
    expect(cache.size.entries).toBe(0);
    expect(cache.counts).toEqual({ hit: 2, miss: 9 });
  });

  it('an answer whose statement could not be read depends on every table', async () => {
    let now = versions({ download: 1, comment: 1 });
    const cache = new ReadCache({ ...options, versions: async () => now });
    await compute(cache, 'x', 'x', ['SELECT 1 FROM download', undefined]);
    expect(await kept(cache, 'x')).toBe('x');
    now = versions({ download: 1, comment: 2 });
    expect(await kept(cache, 'x')).toBeUndefined();
  });

  it('counters: ignored by answers that did not read them, given at most counterLagMs late by those that did', async () => {
    let now = versions({ download: 1, 'download#counts': 1 });
    const cache = new ReadCache({ ...options, versions: async () => now });
    await compute(cache, 'title', 't', ['SELECT title FROM download']);
    await compute(cache, 'views', 'v', ['SELECT title, "viewCount" FROM download']);
    now = versions({ download: 1, 'download#counts': 2 });
    expect(await kept(cache, 'title')).toBe('t');
    expect(await kept(cache, 'views')).toBe('v'); // younger than counterLagMs
    await new Promise((r) => setTimeout(r, 50));
    expect(await kept(cache, 'title')).toBe('t');
    expect(await kept(cache, 'views')).toBeUndefined();
  });

  it('what an answer read includes every statement sent while it was computed; clear() keeps none of them', async () => {
    let now = versions({ download: 1, comment: 1 });
    const cache = new ReadCache({ ...options, versions: async () => now });
    const a = await cache.lookup<string>('a');
    const b = await cache.lookup<string>('b');
    cache.observe('SELECT 1 FROM download');
    cache.observe('SELECT 1 FROM comment');
    if ('store' in a) a.store('a', 1);
    cache.observe('SELECT 1 FROM prefix');
    if ('store' in b) b.store('b', 1);
    now = versions({ download: 1, comment: 2 });
    expect(await kept(cache, 'a')).toBeUndefined(); // it read comments, as far as the cache can tell
    const c = await cache.lookup<string>('c');
    cache.clear();
    if ('store' in c) c.store('c', 1);
    expect(await kept(cache, 'c')).toBeUndefined();
    const d = await cache.lookup<string>('d');
    if ('drop' in d) d.drop();
    expect(await kept(cache, 'd')).toBeUndefined();
  });

  it('asks for a compaction, one at a time, when many bumps wait', async () => {
    let compactions = 0;
    let finish = () => {};
    const cache = new ReadCache({
      ...options,
      versions: async () => versions({ a: 1 }, 5),
      compactAt: 5,
      compact: () => {
        compactions++;
        return new Promise<void>((r) => {
          finish = r;
        });
      },
    });
    await cache.versions();
    await cache.versions();
    expect(compactions).toBe(1);
    finish();
    await new Promise((r) => setImmediate(r));
    await cache.versions();
    expect(compactions).toBe(2);
  });

  it('keeps at most its size, least recently used out first, and no answer over an eighth of it', async () => {
    const cache = new ReadCache({ ...options, maxBytes: 800, versions: async () => versions() });
    const put = async (k: string, bytes: number) => {
      const r = await cache.lookup<string>(k);
      if ('store' in r) r.store(k, bytes);
    };
    for (const k of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) await put(k, 100);
    expect(cache.size).toEqual({ entries: 8, bytes: 800 });
    await cache.lookup('a'); // used: now the most recent
    await put('i', 100);
    expect('value' in (await cache.lookup('a'))).toBe(true);
    expect('value' in (await cache.lookup('b'))).toBe(false);
    await put('big', 101);
    expect('value' in (await cache.lookup('big'))).toBe(false);
    expect(cache.size.bytes).toBeLessThanOrEqual(800);
    cache.clear();
    expect(cache.size).toEqual({ entries: 0, bytes: 0 });
  });

  it('is off with no size or no time to live', () => {
    const none = async () => versions();
    expect(new ReadCache({ ...options, maxBytes: 0, ttlMs: 5000, versions: none }).enabled).toBe(false);
    expect(new ReadCache({ ...options, maxBytes: 1, ttlMs: 0, versions: none }).enabled).toBe(false);
  });
});

forEachDatabaseSideBySide((kind) => {
  describe('answers kept while the tables they read are unchanged', () => {
    let t: TestApp;
    let category: number;
    let owner: { userId: number; key: string };
    let guestKey: string;
    let published: number;
    let draft: number;
    beforeAll(async () => {
      t = await startTestApp(kind, { cacheSeconds: 300, commentFloodSeconds: 0, readCacheAdmitWindow: 0 });
      category = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Cached' } })).body.category
        .category_id;
      owner = await t.user('keeper');
      guestKey = await t.key('GUEST', ['mc_dm_category:read', 'mc_dm_download:read']);
      published = (
        await t.rest('POST', '/api/mc-dm-downloads/', {
          key: owner.key,
          form: { category_id: category, title: 'Published' },
        })
      ).body.download.download_id;
      draft = (
        await t.rest('POST', '/api/mc-dm-downloads/', {
          key: owner.key,
          form: { category_id: category, title: 'Draft' },
        })
      ).body.download.download_id;
      await t.prisma.download.update({ where: { id: draft }, data: { state: 'draft' } });
      await t.rest('POST', '/api/mc-dm-comments/', {
        key: owner.key,
        form: { download_id: published, message: 'First' },
      });
    });
    afterAll(async () => {
      await t?.close();
    });

    const counts = () => ({ ...t.app.readCache.counts });
    const text = async (path: string, key: string = SUPER_KEY, headers: Record<string, string> = {}) => {
      const res = await fetch(new URL(path, t.url), { headers: { 'Forum-Api-Key': key, ...headers } });
      return { status: res.status, body: await res.text() };
    };
    const gqlText = async (query: string, variables: Record<string, unknown> = {}, key: string = SUPER_KEY) => {
      const res = await fetch(new URL('/graphql', t.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'Forum-Api-Key': key },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, body: await res.text() };
    };
    const DOWNLOAD =
      'query($id: Int!) { download(downloadId: $id) { downloadId title tagLine downloadState canEdit } }';

    it('answers a read sent again from the cache, byte for byte, through REST and GraphQL', async () => {
      for (const read of [
        () => text(`/api/mc-dm-downloads/${published}/?with=full`),
        () => gqlText(DOWNLOAD, { id: published }),
      ]) {
        const first = await read();
        const before = counts();
        const second = await read();
        expect(second).toEqual(first);
        expect(first.status).toBe(200);
        expect(counts().hit).toBe(before.hit + 1);
      }
    });

    it('gives a kept GraphQL answer as the fresh one, headers included, whatever the client accepts', async () => {
      // Kept as the bytes sent: non-ASCII text must come back as the same UTF-8, the length header must match, and a
      // client taking the answer as an event stream (serialized by Yoga from the result, not from the bytes) too.
      const title = 'Caché — ünïcode 🚀';
      await t.gqlOk(
        'mutation($id: Int!, $t: String!) { updateDownload(input: { downloadId: $id, title: $t }) { download { downloadId } } }',
        { id: published, t: title },
      );
      for (const accept of ['application/json', 'application/graphql-response+json', 'text/event-stream']) {
        const send = async () => {
          const res = await fetch(new URL('/graphql', t.url), {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept, 'Forum-Api-Key': SUPER_KEY },
            body: JSON.stringify({ query: DOWNLOAD, variables: { id: published } }),
          });
          const headers = Object.fromEntries(
            ['content-type', 'content-length'].map((h) => [h, res.headers.get(h)] as const),
          );
          return { status: res.status, headers, body: await res.text() };
        };
        t.app.readCache.clear();
        const fresh = await send();
        const before = counts();
        const kept = await send();
        expect(counts().hit, accept).toBe(before.hit + 1);
        expect(kept, accept).toEqual(fresh);
        expect(fresh.status).toBe(200);
        expect(fresh.body).toContain(title);
        expect(fresh.headers['content-type']).toContain(accept);
      }
    });

    it('shows a write made through the service at once, on both faces', async () => {
      await text(`/api/mc-dm-downloads/${published}/`);
      await gqlText(DOWNLOAD, { id: published });
      expect(
        (
          await t.rest('PUT', `/api/mc-dm-downloads/${published}/`, {
            key: owner.key,
            form: { tag_line: 'changed once' },
          })
        ).status,
      ).toBe(200);
      expect(JSON.parse((await text(`/api/mc-dm-downloads/${published}/`)).body).download.tag_line).toBe(
        'changed once',
      );
      expect(JSON.parse((await gqlText(DOWNLOAD, { id: published })).body).data.download.tagLine).toBe('changed once');
      await t.gqlOk(
        'mutation($id: Int!) { updateDownload(input: { downloadId: $id, tagLine: "changed twice" }) { download { downloadId } } }',
        { id: published },
      );
      expect(JSON.parse((await text(`/api/mc-dm-downloads/${published}/`)).body).download.tag_line).toBe(
        'changed twice',
      );
      expect(JSON.parse((await gqlText(DOWNLOAD, { id: published })).body).data.download.tagLine).toBe('changed twice');
    });

    it('shows a write made straight into the database at once (SQL, not through the service)', async () => {
      await text(`/api/mc-dm-comments/?download_id=${published}`);
      await t.prisma.$executeRawUnsafe(
        'UPDATE comment SET message = $1 WHERE "downloadId" = $2',
        'Edited in SQL',
        published,
      );
      expect(JSON.parse((await text(`/api/mc-dm-comments/?download_id=${published}`)).body).comments[0].message).toBe(
        'Edited in SQL',
      );
      await t.prisma.$executeRawUnsafe('UPDATE download SET title = $1 WHERE id = $2', 'Renamed in SQL', published);
      expect(JSON.parse((await gqlText(DOWNLOAD, { id: published })).body).data.download.title).toBe('Renamed in SQL');
    });

    /** Waits for this instance's outbox dispatcher to finish its rounds (the embedded database reports its statements too). */
    const dispatched = async () => {
      const d = t.app.dispatcher as unknown as { running: Promise<void> | null };
      for (let i = 0; i < 100 && d.running; i++) await d.running;
    };
    const CATEGORIES = '{ categories { nodes { categoryId title } } }';

    it('keeps an answer through writes to tables it did not read: a comment elsewhere, a key used, an outbox row, counts', async () => {
      const elsewhere = (
        await t.rest('POST', '/api/mc-dm-downloads/', {
          key: owner.key,
          form: { category_id: category, title: 'Else' },
        })
      ).body.download.download_id;
      await dispatched();
      const reads = [
        () => text(`/api/mc-dm-downloads/${published}/`),
        () => gqlText(DOWNLOAD, { id: published }),
        () => text('/api/mc-dm-categories/'),
        () => gqlText(CATEGORIES),
      ];
      const first = [];
      for (const read of reads) first.push(await read());
      const before = counts();
      // A comment on another download (with its outbox row, written, then marked dispatched), a key's last use.
      expect(
        (
          await t.rest('POST', '/api/mc-dm-comments/', {
            key: owner.key,
            form: { download_id: elsewhere, message: 'x' },
          })
        ).status,
      ).toBe(200);
      await dispatched();
      await t.prisma.$executeRawUnsafe('UPDATE api_key SET "lastUsedAt" = now()');
      for (let i = 0; i < reads.length; i++) expect(await reads[i]!()).toEqual(first[i]);
      expect(counts().hit).toBe(before.hit + reads.length);
      // Views and downloads counted: the categories answers do not show them and stay, however long after.
      await t.prisma.$executeRawUnsafe(
        'UPDATE download SET "viewCount" = "viewCount" + 1, "downloadCount" = "downloadCount" + 1 WHERE id = $1',
        published,
      );
      await new Promise((r) => setTimeout(r, LIMITS.readCacheCounterLagMs + 100));
      const hits = counts().hit;
      expect(await reads[2]!()).toEqual(first[2]);
      expect(await reads[3]!()).toEqual(first[3]);
      expect(counts().hit).toBe(hits + 2);
    });

    it(`shows counters at most ${LIMITS.readCacheCounterLagMs} ms late in the answers that show them`, async () => {
      const shown = async () => {
        const r = await t.rest('GET', `/api/mc-dm-downloads/${published}/`, { query: { with: 'full' } });
        const g = await t.gqlOk('query($id: Int!) { download(downloadId: $id) { downloadCount viewCount } }', {
          id: published,
        });
        return [r.body.download.download_count, g.download.downloadCount];
      };
      const [rest] = await shown();
      const computed = Date.now();
      await t.prisma.$executeRawUnsafe(
        'UPDATE download SET "downloadCount" = "downloadCount" + 1 WHERE id = $1',
        published,
      );
      const soon = await shown();
      // Within the lag: the kept answer (old count) or, if the lag has passed already on a slow machine, the new one.
      if (Date.now() - computed < LIMITS.readCacheCounterLagMs) expect([rest, rest + 1]).toContain(soon[0]);
      await new Promise((r) => setTimeout(r, LIMITS.readCacheCounterLagMs + 100));
      expect(await shown()).toEqual([rest + 1, rest + 1]);
    });

    it('versions: an edit bumps the table, a counters-only update its counters, a write of no row nothing', async () => {
      const v = async () => {
        const { of } = await t.app.db.cacheVersions();
        return { d: Number(of.get('download') ?? 0), c: Number(of.get('download#counts') ?? 0) };
      };
      const start = await v();
      await t.prisma.$executeRawUnsafe('UPDATE download SET "viewCount" = "viewCount" + 1 WHERE id = $1', published);
      expect(await v()).toEqual({ d: start.d, c: start.c + 1 });
      await t.prisma.$executeRawUnsafe('UPDATE download SET "tagLine" = "tagLine" WHERE id = $1', published);
      await t.prisma.$executeRawUnsafe('UPDATE download SET "tagLine" = $1 WHERE id = 0', 'nobody');
      expect(await v()).toEqual({ d: start.d, c: start.c + 1 }); // the same row again, and no row: nothing
      await t.prisma.$executeRawUnsafe(
        'UPDATE download SET "tagLine" = $1, "viewCount" = "viewCount" + 1 WHERE id = $2',
        'edited with a count',
        published,
      );
      expect(await v()).toEqual({ d: start.d + 1, c: start.c + 1 });
    });

    it('keeps the versions through a compaction of the waiting bumps', async () => {
      const before = await t.app.db.cacheVersions();
      await t.app.db.compactCacheVersions();
      const after = await t.app.db.cacheVersions();
      expect(after.all).toBe(before.all);
      expect(after.pending).toBe(0);
      await text('/api/mc-dm-categories/');
      const hits = counts().hit;
      await t.app.db.compactCacheVersions();
      await text('/api/mc-dm-categories/');
      expect(counts().hit).toBe(hits + 1);
    });

    it('every table of the schema has the version triggers, with its counter columns; there are no views', async () => {
      const tables = await t.prisma.$queryRawUnsafe<{ t: string; n: number; args: string | null }[]>(`
        SELECT c.relname::text AS t, count(g.tgname)::int AS n,
          max(CASE WHEN g.tgname = 'cache_bump_upd' THEN encode(g.tgargs, 'escape') END) AS args
        FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
        LEFT JOIN pg_trigger g ON g.tgrelid = c.oid AND g.tgname LIKE 'cache_bump%'
        WHERE s.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
          AND c.relname NOT IN ('_prisma_migrations', 'cache_versions', 'cache_bumps', 'cache_download_versions')
        GROUP BY c.relname ORDER BY 1`);
      expect(tables.length).toBeGreaterThan(30);
      for (const row of tables) {
        expect(row.n, row.t).toBe(4);
        const counters = COUNTER_COLUMNS[row.t];
        // Each argument ends with a zero byte (shown as \000); an empty one ('': no such column) is kept.
        const args = row.args ? row.args.split('\\000').slice(0, -1) : [];
        // Tables that belong to downloads, or say which categories they touched, name the download's column (or the
        // version's; '' for none) and the category's ('' for none) first.
        const download = DOWNLOAD_TABLES[row.t];
        const category = CATEGORY_TABLES[row.t];
        expect(args, row.t).toEqual([
          ...(download || category ? [download?.column ?? '', download?.via ?? '', category?.column ?? ''] : []),
          ...(counters && counters[0] !== '*' ? counters : []),
        ]);
      }
      expect(tables.filter((r) => DOWNLOAD_TABLES[r.t]).length).toBe(Object.keys(DOWNLOAD_TABLES).length);
      expect(tables.filter((r) => CATEGORY_TABLES[r.t]).length).toBe(Object.keys(CATEGORY_TABLES).length);
      const functions = await t.prisma.$queryRawUnsafe<{ f: string }[]>(`
        SELECT p.proname::text AS f FROM pg_proc p JOIN pg_namespace s ON s.oid = p.pronamespace
        WHERE s.nspname = 'public' AND p.provolatile <> 'i' AND p.prorettype <> 'trigger'::regtype
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e') ORDER BY 1`);
      // The SQL of an answer is read for table names only: a function that may read a table must not be called by a
      // read. These are not: migrations' helpers, the totals and version triggers' helpers (cache_downloads_of reads
      // the version table, for triggers only), the search document's and the tag ids' (written by triggers and by the
      // start's rewrite, src/modules/downloads/search.ts; the first reads no table). One is called by a read: the typo
      // fallback's query of title words (dcs_search_typo_query reads search_word), which the search statement names
      // beside the call, so that the answer depends on that table as when the statement read it itself.
      expect(functions.map((r) => r.f)).toEqual([
        'cache_downloads_of',
        'cache_track',
        'cache_track_scoped',
        'comment_total_add',
        'dcs_download_search_vector',
        'dcs_download_tag_ids',
        'dcs_download_tag_text',
        'dcs_search_typo_query',
        'download_total_add',
        'file_total_add',
      ]);
    });

    it('keeps answers per visitor: what the owner sees is never given to a guest or another user', async () => {
      // The draft: its owner may see it, nobody else but a super-user key.
      const path = `/api/mc-dm-downloads/${draft}/`;
      const status = async (key: string, headers: Record<string, string> = {}) =>
        (await text(path, key, headers)).status;
      const other = await t.user('other');
      // Each key's first use is recorded (a write, which would make the next read a miss anyway): done first.
      for (const key of [owner.key, guestKey, other.key]) await text('/api/mc-dm-categories/', key);
      const hits = counts().hit;
      expect(await status(owner.key)).toBe(200);
      expect(await status(owner.key)).toBe(200);
      expect(counts().hit).toBe(hits + 1);
      expect(await status(guestKey)).not.toBe(200);
      expect(await status(other.key)).not.toBe(200);
      // A super-user key acting as one user, then another, then the guest (Forum-Api-User).
      const viewer = async (user: number) => {
        const res = await fetch(new URL('/graphql', t.url), {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'Forum-Api-Key': SUPER_KEY, 'Forum-Api-User': String(user) },
          body: JSON.stringify({ query: '{ viewer { userId username } }' }),
        });
        return ((await res.json()) as { data: { viewer: unknown } }).data.viewer;
      };
      for (let i = 0; i < 2; i++) {
        expect(await viewer(owner.userId)).toEqual({ userId: owner.userId, username: 'keeper' });
        expect(await viewer(other.userId)).toEqual({ userId: other.userId, username: 'other' });
        expect(await viewer(0)).toEqual({ userId: 0, username: 'Guest' });
      }
      const canEdit = async (key: string) =>
        JSON.parse((await gqlText(DOWNLOAD, { id: published }, key)).body).data.download.canEdit;
      expect(await canEdit(owner.key)).toBe(true);
      expect(await canEdit(other.key)).toBe(false);
    });

    it('refuses a revoked key even when an answer for it is kept', async () => {
      const made = await t.gqlOk(
        'mutation { createApiKey(input: { type: GUEST, scopes: ["mc_dm_category:read"] }) { key apiKey { apiKeyId } } }',
      );
      const key = made.createApiKey.key;
      expect((await text('/api/mc-dm-categories/', key)).status).toBe(200);
      expect((await text('/api/mc-dm-categories/', key)).status).toBe(200);
      await t.gqlOk('mutation($id: Int!) { revokeApiKey(input: { apiKeyId: $id }) { apiKey { isActive } } }', {
        id: made.createApiKey.apiKey.apiKeyId,
      });
      const refused = await text('/api/mc-dm-categories/', key);
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.body).errors[0].code).toBe('api_key_inactive');
    });

    it("refuses a read the key's scopes do not allow, kept or not", async () => {
      const narrow = await t.key('GUEST', ['mc_dm_category:read']);
      expect((await text(`/api/mc-dm-downloads/${published}/`, SUPER_KEY)).status).toBe(200);
      expect((await text(`/api/mc-dm-downloads/${published}/`, narrow)).status).toBe(403);
      expect(JSON.parse((await gqlText(DOWNLOAD, { id: published }, narrow)).body).errors[0].extensions.code).toBe(
        'api_scope_missing',
      );
    });

    it('never keeps mutations or answers with errors', async () => {
      const before = counts();
      for (let i = 0; i < 2; i++) {
        expect((await text('/api/mc-dm-downloads/999999/')).status).toBe(404);
        expect(JSON.parse((await gqlText(DOWNLOAD, { id: 999999 })).body).errors[0].extensions.code).toBe(
          'mc_dm_api_error.download_not_found',
        );
      }
      expect(counts().hit).toBe(before.hit);
      const comment =
        'mutation($d: Int!) { createComment(input: { downloadId: $d, message: "again" }) { comment { commentId } } }';
      const a = JSON.parse((await gqlText(comment, { d: published }, owner.key)).body).data.createComment.comment
        .commentId;
      const b = JSON.parse((await gqlText(comment, { d: published }, owner.key)).body).data.createComment.comment
        .commentId;
      expect(b).not.toBe(a);
      expect(counts().hit).toBe(before.hit);
    });

    it('is emptied by a change announced on the cache change feed', async () => {
      await text('/api/mc-dm-categories/');
      expect(t.app.readCache.size.entries).toBeGreaterThan(0);
      t.app.services.permissions.invalidate();
      expect(t.app.readCache.size.entries).toBe(0);
    });

    it('gives, in a random run of reads and writes, only answers equal to fresh ones', async () => {
      const other = await t.user('random');
      const keys = [SUPER_KEY, owner.key, other.key, guestKey];
      let seed = 7;
      const rand = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed % n;
      };
      const reads = [
        (key: string) => text(`/api/mc-dm-downloads/?category_id=${category}&with=full`, key),
        (key: string) => text(`/api/mc-dm-downloads/${published}/?with=full`, key),
        (key: string) => text(`/api/mc-dm-comments/?download_id=${published}`, key),
        (key: string) => text('/api/mc-dm-categories/', key),
        (key: string) => gqlText(DOWNLOAD, { id: draft }, key),
        (key: string) =>
          gqlText(
            '{ downloads(perPage: 5) { nodes { downloadId title downloadState } pagination { total } } }',
            {},
            key,
          ),
      ];
      let n = 0;
      const writes = [
        () => t.rest('PUT', `/api/mc-dm-downloads/${published}/`, { key: owner.key, form: { tag_line: `tag ${n++}` } }),
        () =>
          t.rest('POST', '/api/mc-dm-comments/', {
            key: other.key,
            form: { download_id: published, message: `m ${n++}` },
          }),
        () => t.prisma.download.update({ where: { id: draft }, data: { state: rand(2) ? 'draft' : 'visible' } }),
        () =>
          t.gqlOk(
            `mutation($c: Int!, $v: PermissionValue!) { setCategoryPermission(input: { categoryId: $c, group: "registered", permission: "view", value: $v }) { ok } }`,
            { c: category, v: rand(2) ? 'DENY' : 'INHERIT' },
          ),
        () => t.rest('POST', '/api/mc-dm-categories/', { form: { title: `C ${n++}` } }),
      ];
      const before = counts();
      for (let step = 0; step < 60; step++) {
        if (rand(3) === 0) await writes[rand(writes.length)]!();
        const read = reads[rand(reads.length)]!;
        const key = keys[rand(keys.length)]!;
        const given = await read(key);
        t.app.readCache.clear();
        expect(given, `step ${step}`).toEqual(await read(key));
        await read(key); // kept again, for the next step
      }
      expect(counts().hit - before.hit).toBeGreaterThan(30);
    });

    it('as deployed (READ_CACHE_ADMIT_WINDOW), keeps an answer from its second request, on both faces', async () => {
      const app = await startTestApp(kind, { cacheSeconds: 300 });
      try {
        app.app.services.views = undefined;
        const reads: [string, () => Promise<unknown>][] = [
          ['REST', async () => (await app.rest('GET', `/api/mc-dm-categories/`)).body],
          ['GraphQL', () => app.gqlOk('{ categories { nodes { categoryId title } } }')],
        ];
        for (const [face, read] of reads) {
          const before = { ...app.app.readCache.counts };
          const entries = app.app.readCache.size.entries;
          const first = await read();
          expect(app.app.readCache.size.entries, `${face}: nothing kept after one request`).toBe(entries);
          expect(await read()).toEqual(first);
          expect(app.app.readCache.size.entries, `${face}: kept after the second`).toBe(entries + 1);
          expect(await read()).toEqual(first);
          expect(app.app.readCache.counts, face).toEqual({ hit: before.hit + 1, miss: before.miss + 2 });
        }
      } finally {
        await app.close();
      }
    });

    it('is off with READ_CACHE_MB=0', async () => {
      const off = await startTestApp(kind, { readCacheMb: 0 });
      try {
        for (let i = 0; i < 3; i++) expect((await off.rest('GET', '/api/mc-dm-categories/')).status).toBe(200);
        await off.gqlOk('{ categories { nodes { categoryId } } }');
        await off.gqlOk('{ categories { nodes { categoryId } } }');
        expect(off.app.readCache.counts).toEqual({ hit: 0, miss: 0 });
      } finally {
        await off.close();
      }
    });

    it.skipIf(kind !== 'postgres')(
      'gives another instance on the same database a write at once, on both faces, with no wait',
      async () => {
        const second = await startTestApp(
          'postgres',
          { cacheSeconds: 300, dataDir: t.config.dataDir, readCacheAdmitWindow: 0 },
          { url: t.app.db.url! },
        );
        try {
          const read = async () => {
            const rest = JSON.parse(
              await fetch(new URL(`/api/mc-dm-downloads/${published}/`, second.url), {
                headers: { 'Forum-Api-Key': SUPER_KEY },
              }).then((r) => r.text()),
            ).download.tag_line;
            const gql = (
              (await fetch(new URL('/graphql', second.url), {
                method: 'POST',
                headers: { 'content-type': 'application/json', 'Forum-Api-Key': SUPER_KEY },
                body: JSON.stringify({ query: DOWNLOAD, variables: { id: published } }),
              }).then((r) => r.json())) as { data: { download: { tagLine: string } } }
            ).data.download.tagLine;
            return [rest, gql];
          };
          const hits = second.app.readCache.counts.hit;
          for (let i = 0; i < 5; i++) {
            await read();
            await read(); // kept on the second instance
            // Half the rounds through the service, half in SQL (what another program would do).
            if (i % 2)
              await t.prisma.$executeRawUnsafe(
                'UPDATE download SET "tagLine" = $1 WHERE id = $2',
                `instance ${i}`,
                published,
              );
            else
              await t.rest('PUT', `/api/mc-dm-downloads/${published}/`, {
                key: owner.key,
                form: { tag_line: `instance ${i}` },
              });
            const written = Date.now();
            expect(await read()).toEqual([`instance ${i}`, `instance ${i}`]);
            expect(Date.now() - written).toBeLessThan(1000);
          }
          expect(second.app.readCache.counts.hit - hits).toBeGreaterThanOrEqual(10);
        } finally {
          await second.close();
        }
      },
    );
  });
});
