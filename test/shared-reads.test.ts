// Reads by key that arrive together share one statement (src/db/shared-reads.ts): each read gets the row of its own
// key, as its own statement would have given it, and the statement belongs to every operation that joined it. First
// the rules on a driver that records what it is sent, then the download reads of both faces on both databases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_KEYS, sharedReads, type Send } from '../src/db/shared-reads.js';
import { OperationAbort } from '../src/db/operation-signal.js';
import type { Operation } from '../src/db/operation-scope.js';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

interface Sent {
  sql: string;
  params: unknown[];
  operation?: Operation;
}

/** A driver whose statements answer a row `{ k, v }` for each key in $1 below 1000 (none for the others). */
function recorder(fail?: Error) {
  const sent: Sent[] = [];
  const send: Send = async <R>(sql: string, params: unknown[], operation?: Operation) => {
    sent.push({ sql, params, operation });
    await new Promise((r) => setTimeout(r, 5));
    if (fail) throw fail;
    return (params[0] as number[])
      .filter((k) => k < 1000)
      .map((k) => ({ k, v: `${sql}:${k}:${params.slice(1)}` })) as R[];
  };
  return { sent, reads: sharedReads(send) };
}

const op = (client?: string): Operation & { signal: OperationAbort } => ({ signal: new OperationAbort(), client });

describe('shared reads', () => {
  it('reads asked for in one turn share one statement; each gets its own row, a missing key nothing', async () => {
    const { sent, reads } = recorder();
    const rows = await Promise.all([1, 2, 2, 3, 5000].map((k) => reads.read<{ k: number; v: string }>('S', k, [])));
    expect(rows.map((r) => r?.v)).toEqual(['S:1:', 'S:2:', 'S:2:', 'S:3:', undefined]);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.params).toEqual([[1, 2, 3, 5000]]); // a key asked twice is sent once
  });

  it('another text, other parameters or a later turn is another statement', async () => {
    const { sent, reads } = recorder();
    const rows = await Promise.all([
      reads.read<{ k: number; v: string }>('S', 1, ['a']),
      reads.read<{ k: number; v: string }>('S', 1, ['b']),
      reads.read<{ k: number; v: string }>('T', 1, ['a']),
      reads.read<{ k: number; v: string }>('S', 2, ['a']),
    ]);
    expect(rows.map((r) => r?.v)).toEqual(['S:1:a', 'S:1:b', 'T:1:a', 'S:2:a']);
    expect(sent.map((s) => [s.sql, s.params])).toEqual([
      ['S', [[1, 2], 'a']],
      ['S', [[1], 'b']],
      ['T', [[1], 'a']],
    ]);
    await reads.read('S', 3, ['a']);
    expect(sent).toHaveLength(4);
  });

  it(`a statement carries at most ${MAX_KEYS} keys`, async () => {
    const { sent, reads } = recorder();
    const keys = Array.from({ length: MAX_KEYS * 2 + 1 }, (_, i) => i + 1);
    const rows = await Promise.all(keys.map((k) => reads.read<{ k: number }>('S', k, [])));
    expect(rows.map((r) => r?.k)).toEqual(keys);
    expect(sent.map((s) => (s.params[0] as number[]).length)).toEqual([MAX_KEYS, MAX_KEYS, 1]);
  });

  it('a failed statement fails every read that joined it, with its error', async () => {
    const { reads } = recorder(new Error('server gone'));
    const outcomes = await Promise.allSettled([1, 2].map((k) => reads.read('S', k, [])));
    expect(outcomes.map((o) => (o.status === 'rejected' ? (o.reason as Error).message : 'ok'))).toEqual([
      'server gone',
      'server gone',
    ]);
  });

  it('is bound to the one operation that joined it, to none when a read came without one', async () => {
    const { sent, reads } = recorder();
    const a = op('key:1');
    await reads.read('S', 1, [], a);
    expect(sent[0]!.operation).toBe(a);
    await Promise.all([reads.read('S', 1, [], op()), reads.read('S', 2, [])]);
    expect(sent[1]!.operation).toBeUndefined();
  });

  it('with several operations, is cancelled only when every one of them has ended, and counts for no key', async () => {
    const { sent, reads } = recorder();
    const [a, b, c] = [op('key:1'), op('key:2'), op('key:2')];
    const done = Promise.all([reads.read('S', 1, [], a), reads.read('S', 2, [], b), reads.read('S', 3, [], c)]);
    // b ends between its read and the statement: it counts as ended when the statement is sent.
    b.signal.abort(new Error('b gone'));
    await new Promise((r) => setImmediate(r));
    const shared = sent[0]!.operation!;
    expect(shared.client).toBeUndefined();
    expect(shared.signal.aborted).toBe(false);
    a.signal.abort(new Error('a gone'));
    expect(shared.signal.aborted).toBe(false);
    c.signal.abort(new Error('c gone'));
    expect(shared.signal.aborted).toBe(true);
    expect((shared.signal.reason as Error).message).toBe('c gone');
    await done;
  });

  it('takes its listeners off the operations once the statement has ended', async () => {
    const { reads } = recorder();
    let listening = 0;
    const counted = (): Operation => {
      const signal = new OperationAbort();
      const add = signal.addEventListener.bind(signal);
      const remove = signal.removeEventListener.bind(signal);
      signal.addEventListener = (type, l) => {
        listening++;
        add(type, l);
      };
      signal.removeEventListener = (type, l) => {
        listening--;
        remove(type, l);
      };
      return { signal };
    };
    const done = Promise.all([reads.read('S', 1, [], counted()), reads.read('S', 2, [], counted())]);
    await new Promise((r) => setImmediate(r));
    expect(listening).toBe(2);
    await done;
    expect(listening).toBe(0);
  });

  it('a read whose operation has already ended is sent alone, bound to it (the pool refuses it)', async () => {
    const { sent, reads } = recorder();
    const over = op('key:1');
    over.signal.abort(new Error('over'));
    await Promise.all([reads.read('S', 1, [], over), reads.read('S', 2, [], op())]);
    expect(sent.map((s) => [s.params[0], s.operation === over])).toEqual([
      [[1], true],
      [[2], false],
    ]);
  });
});

forEachDatabase((kind) => {
  describe('download reads that arrive together', () => {
    let t: TestApp;
    const ids: number[] = [];
    let hidden: number;
    let viewer: { key: string };
    let owner: { key: string };

    beforeAll(async () => {
      t = await startTestApp(kind, { readCacheMb: 0, commentFloodSeconds: 0, externalUrlAllowPrivate: true });
      const category = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Shared' } })).body.category
        .category_id;
      owner = await t.user('owner');
      for (let i = 0; i < 6; i++) {
        const r = await t.rest('POST', '/api/mc-dm-downloads/', {
          key: owner.key,
          form: { category_id: category, title: `Shared ${i}`, tags: `t${i},common` },
        });
        ids.push(r.body.download.download_id);
      }
      // A download its owner hid (soft-deleted): a plain user may not view it.
      hidden = ids[5]!;
      expect((await t.rest('DELETE', `/api/mc-dm-downloads/${hidden}/`)).status).toBe(200);
      viewer = await t.user('viewer');
    });
    afterAll(async () => {
      await t?.close();
    });

    const restGet = (id: number, key?: string) =>
      t.rest('GET', `/api/mc-dm-downloads/${id}/`, { query: { with: 'full' }, ...(key ? { key } : {}) });
    const gqlGet = (id: number, key?: string) =>
      t.gql(
        'query($id: Int!) { download(downloadId: $id) { downloadId title tags category { title } currentVersion { versionId } } }',
        { id },
        key,
      );

    /**
     * The reads one after another, then all at once: the answers at once must be the answers alone. Returns them, and
     * the shared reads and statements of the reads at once.
     */
    const aloneThenTogether = async (reads: (() => Promise<Parameters<typeof strip>[0]>)[]) => {
      const alone: unknown[] = [];
      for (const read of reads) alone.push(strip(await read()));
      const before = { ...t.app.db.sharedReadCounts() };
      const together = (await Promise.all(reads.map((read) => read()))).map(strip);
      const after = t.app.db.sharedReadCounts();
      expect(together).toEqual(alone);
      return {
        together,
        shared: { reads: after.reads - before.reads, statements: after.statements - before.statements },
      };
    };

    it('each read answers what it answers alone, through fewer statements than reads', async () => {
      const reads = [
        ...ids.map((id) => () => restGet(id)),
        ...ids.map((id) => () => gqlGet(id)),
        () => restGet(ids[0]!, viewer.key),
        () => restGet(hidden, viewer.key),
        () => gqlGet(hidden, viewer.key),
        () => restGet(999_999),
        () => gqlGet(999_999),
      ];
      const { together } = await aloneThenTogether(reads);
      // The answers themselves: each its own download, the hidden one refused to the viewer, the missing one 404.
      const rest = together.slice(0, 6) as { status: number; body: { download: { download_id: number } } }[];
      expect(rest.map((r) => r.body.download.download_id)).toEqual(ids);
      const last = together.slice(12) as { status: number; codes?: string[] }[];
      expect(last.map((r) => [r.status, r.codes?.[0]])).toEqual([
        [200, undefined],
        [403, undefined],
        [200, 'do_not_have_permission'],
        [404, undefined],
        [200, 'mc_dm_api_error.download_not_found'],
      ]);
    });

    it('the same reads at once share statements, one after another they do not', async () => {
      // Six at once: within the fair share of one key (8 operations at a time), so none waits for a slot.
      const reads = ids.map((id) => () => restGet(id));
      const shared = () => ({ ...t.app.db.sharedReadCounts() });
      let before = shared();
      for (const read of reads) expect((await read()).status).toBe(200);
      let after = shared();
      expect([after.reads - before.reads, after.statements - before.statements]).toEqual([6, 6]);
      before = shared();
      for (const answer of await Promise.all(reads.map((read) => read()))) expect(answer.status).toBe(200);
      after = shared();
      expect(after.reads - before.reads).toBe(6);
      // One statement on a server (two if a key's last use is stamped meanwhile); on the embedded database, whose
      // statements finish one at a time, the requests reach their read in two or three groups.
      expect(after.statements - before.statements).toBeLessThanOrEqual(kind === 'postgres' ? 2 : 4);
      // And /metrics says so.
      const metrics = await t.rest('GET', '/metrics');
      expect(String(metrics.body)).toContain(`dcs_shared_reads_total{counted="read"} ${after.reads}`);
      expect(String(metrics.body)).toContain(`dcs_shared_reads_total{counted="statement"} ${after.statements}`);
    });

    it("comment pages of several downloads at once: each its own download's, through shared statements", async () => {
      for (const [i, id] of ids.slice(0, 4).entries())
        for (let n = 0; n <= i; n++)
          expect(
            (
              await t.rest('POST', '/api/mc-dm-comments/', {
                key: owner.key,
                form: { download_id: id, message: `C${i}.${n}` },
              })
            ).status,
          ).toBe(200);
      const reads = [
        ...ids.slice(0, 5).map((id) => () => t.rest('GET', '/api/mc-dm-comments/', { query: { download_id: id } })),
        () => t.rest('GET', '/api/mc-dm-comments/', { query: { download_id: ids[2]!, per_page: 1 } }),
        () =>
          t.gql('query($d: Int!) { comments(downloadId: $d) { nodes { message } pageInfo { totalCount } } }', {
            d: ids[3]!,
          }),
        () => t.rest('GET', '/api/mc-dm-comments/', { query: { download_id: hidden }, key: viewer.key }),
        () => t.rest('GET', '/api/mc-dm-comments/', { query: { download_id: 999_999 } }),
      ];
      const { together, shared } = await aloneThenTogether(reads);
      const messages = (together.slice(0, 5) as { body: { comments: { message: string }[] } }[]).map((r) =>
        r.body.comments.map((c) => c.message).sort(),
      );
      expect(messages).toEqual([
        ['C0.0'],
        ['C1.0', 'C1.1'],
        ['C2.0', 'C2.1', 'C2.2'],
        ['C3.0', 'C3.1', 'C3.2', 'C3.3'],
        [],
      ]);
      expect((together[5] as { body: { comments: unknown[] } }).body.comments).toHaveLength(1);
      expect((together.slice(7) as { status: number }[]).map((r) => r.status)).toEqual([403, 404]);
      // The seven pages read (of two shapes: 20 a page and 1 a page, the GraphQL one's of the first), and the two refused.
      expect(shared.reads).toBeGreaterThanOrEqual(7);
      expect(shared.statements).toBeLessThan(shared.reads);
    });

    it('categories, comments and files by id at once: each answers what it answers alone', async () => {
      const category = (await restGet(ids[0]!)).body.download.category_id as number;
      const comments = (
        await t.rest('GET', '/api/mc-dm-comments/', { query: { download_id: ids[3]! } })
      ).body.comments.map((c: { comment_id: number }) => c.comment_id) as number[];
      expect(comments.length).toBeGreaterThan(1); // the comments the test before posted
      const files: number[] = [];
      for (const id of ids.slice(0, 3)) {
        const version = (await restGet(id)).body.download.current_version_id;
        const made = await t.rest('POST', '/api/mc-dm-files/', {
          key: owner.key,
          form: { version_id: version, external_url: `http://127.0.0.1:9/${id}.zip`, link_only: 1 },
        });
        expect(made.status).toBe(200);
        files.push(made.body.file.file_id);
      }
      const reads = [
        () => t.rest('GET', `/api/mc-dm-categories/${category}/`),
        () => t.rest('GET', `/api/mc-dm-categories/${category}/`, { key: viewer.key }),
        () => t.rest('GET', '/api/mc-dm-categories/999999/'),
        ...comments.map((c) => () => t.rest('GET', `/api/mc-dm-comments/${c}/`)),
        () => t.rest('GET', '/api/mc-dm-comments/999999/'),
        ...files.map((f) => () => t.rest('GET', `/api/mc-dm-files/${f}/`)),
        ...files.map((f) => () => t.rest('GET', `/api/mc-dm-files/${f}/`, { key: owner.key })),
        () => t.rest('GET', '/api/mc-dm-files/999999/'),
      ];
      const { together, shared } = await aloneThenTogether(reads);
      expect((together as { status: number }[]).map((r) => r.status)).toEqual([
        200,
        200,
        404,
        ...comments.map(() => 200),
        404,
        ...files.map(() => 200),
        ...files.map(() => 200),
        404,
      ]);
      expect(shared.statements).toBeLessThan(shared.reads);
    });

    it('reads asked together after a write all see it', async () => {
      const id = ids[1]!;
      expect((await t.rest('PUT', `/api/mc-dm-downloads/${id}/`, { form: { title: 'Renamed' } })).status).toBe(200);
      const answers = await Promise.all([restGet(id), gqlGet(id), restGet(id), gqlGet(id)]);
      expect(answers.map((a) => ('body' in a ? a.body.download.title : a.data.download.title))).toEqual([
        'Renamed',
        'Renamed',
        'Renamed',
        'Renamed',
      ]);
    });
  });

  describe('download reads that arrive together, with the read cache', () => {
    let t: TestApp;
    const ids: number[] = [];
    beforeAll(async () => {
      t = await startTestApp(kind, { readCacheMb: 16, readCacheAdmitWindow: 0, cacheSeconds: 300 });
      t.app.services.views = undefined; // no view counts flushed into the answers meanwhile
      const category = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Kept' } })).body.category
        .category_id;
      const owner = await t.user('owner');
      for (let i = 0; i < 3; i++) {
        const r = await t.rest('POST', '/api/mc-dm-downloads/', {
          key: owner.key,
          form: { category_id: category, title: `Kept ${i}` },
        });
        ids.push(r.body.download.download_id);
      }
    });
    afterAll(async () => {
      await t?.close();
    });

    it('the same read asked by many at once after a write is computed once or twice, and all get it', async () => {
      const list = () => t.rest('GET', '/api/mc-dm-downloads/', { query: { per_page: 5 } });
      await list();
      // An edit evicts the list; then eight clients ask for it at once.
      expect((await t.rest('PUT', `/api/mc-dm-downloads/${ids[0]}/`, { form: { tag_line: 'stampede' } })).status).toBe(
        200,
      );
      const counts = t.app.readCache.counts;
      const [hits, misses] = [counts.hit, counts.miss];
      const answers = await Promise.all(Array.from({ length: 8 }, list));
      expect(new Set(answers.map((a) => JSON.stringify(a.body))).size).toBe(1);
      expect(answers[0]!.body.downloads.map((d: { tag_line: string }) => d.tag_line)).toContain('stampede');
      // The first lookup reads the versions at once; the others, arriving meanwhile, share the next versions statement
      // and one computation (each would have computed its own before).
      expect(counts.miss - misses).toBeLessThanOrEqual(2);
      expect(counts.hit - hits + counts.miss - misses).toBe(8);
    });

    it('an answer computed from a shared statement is evicted by a write to its download', async () => {
      const get = (id: number) => t.rest('GET', `/api/mc-dm-downloads/${id}/`);
      const titles = async () =>
        (await Promise.all(ids.map(get))).map((r) => (r.body as { download: { title: string } }).download.title);
      const counts = t.app.readCache.counts;
      const statements = t.app.db.sharedReadCounts().statements;
      expect(await titles()).toEqual(['Kept 0', 'Kept 1', 'Kept 2']);
      // Computed from shared statements: the first request reads the cache's versions at once, those behind it wait
      // for the next versions statement together, and then share their download statement.
      expect(t.app.db.sharedReadCounts().statements - statements).toBeLessThan(3);
      const hits = counts.hit;
      expect(await titles()).toEqual(['Kept 0', 'Kept 1', 'Kept 2']);
      expect(counts.hit - hits).toBe(3); // each kept
      expect((await t.rest('PUT', `/api/mc-dm-downloads/${ids[1]}/`, { form: { title: 'Edited' } })).status).toBe(200);
      const misses = counts.miss;
      expect(await titles()).toEqual(['Kept 0', 'Edited', 'Kept 2']);
      expect(counts.miss - misses).toBe(1); // the edited one computed again, the others still kept
    });
  });
});

/** An answer without what differs between two runs of one read (the headers: dates, request ids). */
function strip(answer: { status: number; body?: unknown; data?: unknown; errors?: unknown; codes?: unknown }) {
  return 'body' in answer
    ? { status: answer.status, body: answer.body }
    : { status: answer.status, data: answer.data, codes: answer.codes };
}
