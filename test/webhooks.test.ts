// Webhooks end to end, on both databases and both faces: a real local receiver checks every delivery's signature
// with the Standard Webhooks library; the outbox sends nothing for a rolled-back write; a receiver that hangs,
// redirects or answers 10 MB is cut and counted failed; retries, redelivery, the delivery log, bad inputs.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDatabaseSideBySide, startTestApp, type TestApp } from './helpers/app.js';
import { recordEvent } from '../src/db/outbox.js';
import { checkEvents, checkUrl } from '../src/modules/webhooks/index.js';
import type { ApiError } from '../src/errors.js';
import { LIMITS, loadConfig } from '../src/config.js';

const { Webhook } = createRequire(import.meta.url)('standardwebhooks') as typeof import('standardwebhooks');

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A receiver on 127.0.0.1: /ok answers 204, /fail 500, /hang never, /redirect 302, /huge 10 MB. */
async function receiver() {
  const got: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const path = req.url ?? '';
      got.push({ path, headers: req.headers, body });
      if (path.startsWith('/ok')) return res.writeHead(204).end();
      if (path.startsWith('/fail')) return res.writeHead(500).end('no');
      if (path.startsWith('/redirect')) return res.writeHead(302, { location: '/ok' }).end();
      if (path.startsWith('/huge')) {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = Buffer.alloc(64 * 1024, 120);
        let sent = 0;
        const more = () => {
          while (sent < 10 * 1024 * 1024) {
            sent += chunk.length;
            if (!res.write(chunk)) return res.once('drain', more);
          }
          res.end();
        };
        res.on('error', () => {});
        more();
        return;
      }
      // /hang: headers never come
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    got,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

async function until<T>(what: string, f: () => T | Promise<T>, ms = 8000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const CREATE = `mutation($i: CreateWebhookInput!) { createWebhook(input: $i) { secret webhook { webhookId url events active categoryId downloadId } } }`;
const DELIVERIES = `query($w: Int!, $first: Int, $after: String) { webhookDeliveries(webhookId: $w, first: $first, after: $after) {
  totalCount pageInfo { hasNextPage endCursor }
  nodes { deliveryId messageId eventType objectId status attemptCount lastError lastHttpStatus attempts { httpStatus durationMs error } } } }`;

describe('webhook rules (no database)', () => {
  const code = async (p: Promise<unknown>) => ((await p.catch((e) => e)) as ApiError).code;
  it('URLs: https on a public address, unless private addresses are allowed; at most 2000 characters', async () => {
    expect(await code(checkUrl('https://127.0.0.1/hook', false))).toBe('mc_dm_api_error.external_url_forbidden');
    expect(await code(checkUrl('https://[::1]/hook', false))).toBe('mc_dm_api_error.external_url_forbidden');
    expect(await code(checkUrl('https://10.1.2.3/hook', false))).toBe('mc_dm_api_error.external_url_forbidden');
    expect(await code(checkUrl('http://93.184.215.14/hook', false))).toBe('mc_dm_api_error.external_url_forbidden');
    expect(await code(checkUrl('ftp://93.184.215.14/hook', true))).toBe('mc_dm_api_error.external_url_forbidden');
    expect(await code(checkUrl('https://user:pw@93.184.215.14/', false))).toBe(
      'mc_dm_api_error.external_url_forbidden',
    );
    expect(await code(checkUrl('not a url', true))).toBe('mc_dm_api_error.external_url_forbidden');
    expect(await code(checkUrl(`https://93.184.215.14/${'a'.repeat(2000)}`, false))).toBe('invalid_input');
    expect(await code(checkUrl('   ', false))).toBe('required_input_missing');
    expect(await checkUrl('https://93.184.215.14/hook', false)).toBe('https://93.184.215.14/hook');
    expect(await checkUrl('http://127.0.0.1:9/hook', true)).toBe('http://127.0.0.1:9/hook');
  });
  it('as deployed: an attempt is cut after 10 s and 64 KiB of answer, retried after 5 s … 6 h, deactivated after 3 days', () => {
    const deployed = loadConfig({}).webhooks;
    expect(deployed.timeoutMs).toBe(10_000);
    expect(deployed.retrySeconds).toEqual([5, 30, 120, 600, 3600, 21600]);
    expect(LIMITS.webhookMaxResponseBytes).toBe(64 * 1024);
    expect(LIMITS.webhookDeactivateAfterMs).toBe(3 * 24 * 3600 * 1000);
  });
  it('events: known types or * alone; unknown ones are named', () => {
    expect(checkEvents(['comment.posted', 'comment.posted', 'file.added'])).toEqual(['comment.posted', 'file.added']);
    expect(checkEvents(['*', 'file.added'])).toEqual(['*']);
    const err = (() => {
      try {
        checkEvents(['download.created', 'nope', 'download.exploded']);
      } catch (e) {
        return e as ApiError;
      }
    })()!;
    expect(err.code).toBe('invalid_input');
    expect(err.params).toMatchObject({ field: 'events', unknown: ['nope', 'download.exploded'] });
    expect(() => checkEvents([])).toThrow(/events must list/);
  });
});

forEachDatabaseSideBySide((kind) => {
  let t: TestApp;
  let r: Awaited<ReturnType<typeof receiver>>;
  beforeAll(async () => {
    r = await receiver();
    t = await startTestApp(kind, {
      externalUrlAllowPrivate: true,
      commentFloodSeconds: 0,
      webhooks: { retrySeconds: [0, 0], timeoutMs: 1500, pollMs: 100 },
    });
  });
  afterAll(async () => {
    await t?.close();
    await r?.close();
  });

  const create = async (input: Record<string, unknown>) => {
    const res = await t.gql(CREATE, { i: input });
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    return res.data.createWebhook as { secret: string; webhook: { webhookId: number } };
  };
  const newDownload = async (title = 'Pack') => {
    const c = await t.rest('POST', '/api/mc-dm-categories/', { form: { title: `Cat ${title}` } });
    const owner = await t.user(`owner${Math.random().toString(36).slice(2, 8)}`);
    const d = await t.rest('POST', '/api/mc-dm-downloads/', {
      key: owner.key,
      form: { category_id: c.body.category.category_id, title },
    });
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    return { ...d.body.download, owner, categoryId: c.body.category.category_id as number };
  };

  it('delivers signed events with the object as the REST face shows it; the signature verifies', async () => {
    const { secret, webhook } = await create({ url: `${r.base}/ok/all`, events: ['*'] });
    expect(secret).toMatch(/^whsec_/);
    const d = await newDownload('Signed');
    const mine = () => r.got.filter((g) => g.path === '/ok/all');
    await until('download.created and version.released', () => mine().length >= 2);
    const hook = new Webhook(secret);
    const bodies = mine().map((g) => hook.verify(g.body, g.headers as Record<string, string>) as any);
    const created = bodies.find((b) => b.type === 'download.created');
    expect(created.data).toMatchObject({ download_id: d.download_id, title: 'Signed', category_id: d.categoryId });
    expect(created.data.can_view).toBeUndefined(); // with=full is omitted
    expect(Date.parse(created.timestamp)).toBeGreaterThan(0);
    const released = bodies.find((b) => b.type === 'version.released');
    expect(released.data).toMatchObject({ version_id: d.current_version_id, download_id: d.download_id });
    // A tampered body does not verify.
    const g = mine()[0]!;
    expect(() => hook.verify(`${g.body} `, g.headers as Record<string, string>)).toThrow();
    // The log lists them, delivered, one attempt each. The receiver answered before the service recorded it: the
    // outcome is written once the answer reaches the service.
    const log = await until('the deliveries recorded', async () => {
      const l = (await t.gqlOk(DELIVERIES, { w: webhook.webhookId })).webhookDeliveries;
      return l.totalCount >= 2 && l.nodes.every((n: { status: string }) => n.status !== 'PENDING') ? l : null;
    });
    expect(log.totalCount).toBeGreaterThanOrEqual(2);
    expect(log.nodes[0]).toMatchObject({ status: 'DELIVERED', attemptCount: 1, lastError: null });
    expect(log.nodes[0].attempts[0]).toMatchObject({ httpStatus: 204, error: null });
    await t.gqlOk(`mutation($i: DeleteWebhookInput!) { deleteWebhook(input: $i) { success } }`, {
      i: { webhookId: webhook.webhookId },
    });
  });

  it('filters by event type, download and category (with descendants); comments and files go out too', async () => {
    const d = await newDownload('Filtered');
    const other = await newDownload('Other');
    const child = await t.rest('POST', '/api/mc-dm-categories/', {
      form: { title: 'Child', parent_category_id: d.categoryId },
    });
    await create({ url: `${r.base}/ok/comments`, events: ['comment.posted'], downloadId: d.download_id });
    await create({ url: `${r.base}/ok/tree`, events: ['download.created'], categoryId: d.categoryId });
    const c1 = await t.rest('POST', '/api/mc-dm-comments/', {
      form: { download_id: d.download_id, message: 'one' },
      key: d.owner.key,
    });
    await t.rest('POST', '/api/mc-dm-comments/', { form: { download_id: other.download_id, message: 'two' } });
    const inChild = await t.rest('POST', '/api/mc-dm-downloads/', {
      form: { category_id: child.body.category.category_id, title: 'Below' },
      headers: { 'Forum-Api-User': String(d.owner.userId) },
    });
    await until('the comment', () => r.got.some((g) => g.path === '/ok/comments'));
    await until('the download below', () => r.got.some((g) => g.path === '/ok/tree'));
    await new Promise((res) => setTimeout(res, 400));
    const comments = r.got.filter((g) => g.path === '/ok/comments').map((g) => JSON.parse(g.body));
    expect(comments.map((b) => [b.type, b.data.comment_id])).toEqual([['comment.posted', c1.body.comment.comment_id]]);
    const tree = r.got.filter((g) => g.path === '/ok/tree').map((g) => JSON.parse(g.body));
    expect(tree.map((b) => b.data.download_id)).toEqual([inChild.body.download.download_id]);
  });

  it('review.posted carries the review; reading an object for a delivery counts no view', async () => {
    const d = await newDownload('Reviewed');
    // A super-user key's webhook: were its reads counted, each would be a view (the key is not the owner).
    const { secret } = await create({ url: `${r.base}/ok/review`, events: ['*'], downloadId: d.download_id });
    await t.app.flushViews();
    const viewCount = async () =>
      (await t.prisma.download.findUniqueOrThrow({ where: { id: d.download_id } })).viewCount;
    const before = await viewCount();
    const reviewer = await t.user(`reviewer_${kind}`);
    const review = await t.rest('POST', '/api/mc-dm-reviews/', {
      key: reviewer.key,
      form: { download_id: d.download_id, rating: 4, message: 'Good' },
    });
    expect(review.status, JSON.stringify(review.body)).toBe(200);
    await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, { form: { title: 'Reviewed, updated' } });
    const mine = () => r.got.filter((g) => g.path === '/ok/review');
    await until('review.posted and download.updated', () => mine().length >= 2);
    const hook = new Webhook(secret);
    const bodies = mine().map((g) => hook.verify(g.body, g.headers as Record<string, string>) as any);
    expect(bodies.find((b) => b.type === 'review.posted')?.data).toEqual(review.body.review);
    // Enum values as the REST face writes them (lower case).
    expect(bodies.find((b) => b.type === 'download.updated')?.data).toMatchObject({
      title: 'Reviewed, updated',
      download_state: 'visible',
    });
    await t.app.flushViews();
    expect(await viewCount()).toBe(before);
  });

  it('a webhook hears the changes made from its creation on, however late the dispatcher reaches them', async () => {
    const d = await newDownload('Late');
    const { webhook } = await create({ url: `${r.base}/ok/late`, events: ['*'], downloadId: d.download_id });
    const { createdAt } = await t.prisma.webhook.findUniqueOrThrow({ where: { id: webhook.webhookId } });
    // A change that committed a moment before the webhook existed, reached by a busy dispatcher only after it.
    await t.prisma.eventOutbox.create({
      data: {
        type: 'download.updated',
        objectId: d.download_id,
        downloadId: d.download_id,
        createdAt: new Date(createdAt.getTime() - 1),
      },
    });
    t.app.dispatcher.wake();
    await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, { form: { title: 'After' } });
    const late = () => r.got.filter((g) => g.path === '/ok/late').map((g) => JSON.parse(g.body));
    await until('the later update', () => late().some((b) => b.data.title === 'After'));
    await new Promise((res) => setTimeout(res, 300));
    // Only the update made after the webhook: not the back-dated one, nor the download's creation events.
    expect(late().map((b) => [b.type, b.data.title])).toEqual([['download.updated', 'After']]);
  });

  it('a rolled-back write sends nothing; a refused write sends nothing', async () => {
    const d = await newDownload('Rollback');
    await create({ url: `${r.base}/ok/rollback`, events: ['*'], downloadId: d.download_id });
    await t.prisma
      .$transaction(async (tx) => {
        await recordEvent(tx, 'download.updated', d.download_id, d.download_id);
        throw new Error('rolled back');
      })
      .catch(() => {});
    const refused = await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, { form: { title: 'x'.repeat(500) } });
    expect(refused.status).toBe(400);
    t.app.dispatcher.wake();
    await new Promise((res) => setTimeout(res, 600));
    expect(r.got.filter((g) => g.path === '/ok/rollback')).toEqual([]);
    expect(await t.prisma.eventOutbox.count({ where: { type: 'download.updated', downloadId: d.download_id } })).toBe(
      0,
    );
    // And a committed one does.
    await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, { form: { title: 'Committed' } });
    await until('the update', () => r.got.some((g) => g.path === '/ok/rollback'));
    expect(JSON.parse(r.got.find((g) => g.path === '/ok/rollback')!.body)).toMatchObject({
      type: 'download.updated',
      data: { title: 'Committed' },
    });
  });

  for (const [path, error] of [
    ['/hang', /no complete answer within 1\.5 s/],
    ['/redirect', /redirects are not followed \(302\)/],
    ['/huge', /larger than 65536 bytes/],
    ['/fail', /answered 500/],
  ] as const) {
    it(`a receiver at ${path} is cut and counted failed; retried per the schedule, then failed`, async () => {
      const d = await newDownload(`Bad ${path}`);
      const { webhook } = await create({
        url: `${r.base}${path}`,
        events: ['download.updated'],
        downloadId: d.download_id,
      });
      await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, { form: { title: 'Changed' } });
      const done = await until(
        'three attempts',
        async () => {
          const n = (await t.gqlOk(DELIVERIES, { w: webhook.webhookId })).webhookDeliveries.nodes[0];
          return n?.status === 'FAILED' ? n : null;
        },
        15_000,
      );
      expect(done.attemptCount).toBe(3); // the first and the two retries of the schedule
      expect(done.attempts).toHaveLength(3);
      for (const a of done.attempts) expect(a.error).toMatch(error);
      if (path === '/hang') for (const a of done.attempts) expect(a.durationMs).toBeLessThan(3000);
      // The same webhook-id on every attempt.
      const got = r.got.filter((g) => g.path === path);
      expect(got).toHaveLength(3);
      expect(new Set(got.map((g) => g.headers['webhook-id'])).size).toBe(1);
      const hook = await t.prisma.webhook.findUniqueOrThrow({ where: { id: webhook.webhookId } });
      expect(hook.failingSince).not.toBeNull();
      await t.prisma.webhook.delete({ where: { id: webhook.webhookId } });
    }, 30_000);
  }

  it('a webhook failing for 3 days is deactivated at its next failure; a success ends a run of failures', async () => {
    const d = await newDownload('Deactivate');
    const { webhook } = await create({
      url: `${r.base}/fail/old`,
      events: ['download.updated'],
      downloadId: d.download_id,
    });
    const longAgo = new Date(Date.now() - 3 * 24 * 3600 * 1000 - 60_000);
    await t.prisma.webhook.update({ where: { id: webhook.webhookId }, data: { failingSince: longAgo } });
    await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, { form: { title: 'Fails again' } });
    await until('the deactivation', async () => {
      const w = (await t.gqlOk(`query($w: Int!) { webhook(webhookId: $w) { active } }`, { w: webhook.webhookId }))
        .webhook;
      return w.active === false;
    });
    // Its pending retries are skipped, not sent.
    const n = await until('the retry skipped', async () => {
      const x = (await t.gqlOk(DELIVERIES, { w: webhook.webhookId })).webhookDeliveries.nodes[0];
      return x?.status === 'SKIPPED' ? x : null;
    });
    expect(n.lastError).toMatch(/inactive/);
    // Reactivated, pointed at a receiver that answers: the run of failures ends.
    await t.rest('PUT', `/api/mc-dm-webhooks/${webhook.webhookId}/`, { form: { active: 1, url: `${r.base}/ok/back` } });
    await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, { form: { title: 'Works again' } });
    await until('the delivery', () => r.got.some((g) => g.path === '/ok/back'));
    // Its outcome is written once the receiver's answer reaches the service.
    const hook = await until('the run of failures ended', async () => {
      const h = await t.prisma.webhook.findUniqueOrThrow({ where: { id: webhook.webhookId } });
      return h.failingSince === null ? h : null;
    });
    expect(hook).toMatchObject({ active: true, failingSince: null });
  });

  it('redelivery sends the event again with the same webhook-id; the log pages with cursors', async () => {
    const d = await newDownload('Again');
    const { secret, webhook } = await create({ url: `${r.base}/ok/again`, events: ['*'], downloadId: d.download_id });
    for (const title of ['A', 'B', 'C'])
      await t.rest('PUT', `/api/mc-dm-downloads/${d.download_id}/`, { form: { title } });
    await until('three updates', () => r.got.filter((g) => g.path === '/ok/again').length >= 3);
    const page1 = (await t.gqlOk(DELIVERIES, { w: webhook.webhookId, first: 2 })).webhookDeliveries;
    expect(page1.totalCount).toBe(3);
    expect(page1.nodes).toHaveLength(2);
    expect(page1.pageInfo.hasNextPage).toBe(true);
    const page2 = (await t.gqlOk(DELIVERIES, { w: webhook.webhookId, first: 2, after: page1.pageInfo.endCursor }))
      .webhookDeliveries;
    expect(page2.nodes).toHaveLength(1);
    expect(page2.pageInfo.hasNextPage).toBe(false);
    const first = page2.nodes[0];
    const again = await t.gqlOk(
      `mutation($i: RedeliverWebhookInput!) { redeliverWebhook(input: $i) { delivery { deliveryId messageId status } } }`,
      { i: { deliveryId: first.deliveryId } },
    );
    expect(again.redeliverWebhook.delivery.messageId).toBe(first.messageId);
    await until('the redelivery', () => r.got.filter((g) => g.headers['webhook-id'] === first.messageId).length >= 2);
    const copies = r.got.filter((g) => g.headers['webhook-id'] === first.messageId);
    for (const c of copies) new Webhook(secret).verify(c.body, c.headers as Record<string, string>);
    // Bad cursors and sizes, unknown ids.
    const bad = await t.gql(DELIVERIES, { w: webhook.webhookId, after: 'nope' });
    expect(bad.codes).toEqual(['invalid_input']);
    expect((await t.gql(DELIVERIES, { w: webhook.webhookId, first: 0 })).codes).toEqual(['invalid_input']);
    expect((await t.gql(DELIVERIES, { w: 999999 })).codes).toEqual(['mc_dm_api_error.webhook_not_found']);
    const gone = await t.gql(
      `mutation($i: RedeliverWebhookInput!) { redeliverWebhook(input: $i) { delivery { deliveryId } } }`,
      { i: { deliveryId: 999999 } },
    );
    expect(gone.codes).toEqual(['mc_dm_api_error.webhook_delivery_not_found']);
  });

  it('an event goes out only if the owner may view the object at delivery time', async () => {
    const d = await newDownload('Private');
    // The owner's webhook (a user may watch a download they can edit).
    const made = await t.rest('POST', '/api/mc-dm-webhooks/', {
      key: d.owner.key,
      form: { url: `${r.base}/ok/owner`, events: ['download.updated', 'download.deleted'], download_id: d.download_id },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    expect(Object.keys(made.body).sort()).toEqual(['secret', 'webhook']);
    // A moderator soft-deletes it: its owner may not view deleted downloads, so nothing is sent.
    const del = await t.rest('DELETE', `/api/mc-dm-downloads/${d.download_id}/`);
    expect(del.status).toBe(200);
    const webhookId = made.body.webhook.webhook_id;
    const skipped = await until('the skip', async () => {
      const n = (await t.gqlOk(DELIVERIES, { w: webhookId })).webhookDeliveries.nodes[0];
      return n?.status === 'SKIPPED' ? n : null;
    });
    expect(skipped).toMatchObject({ eventType: 'download.deleted', attemptCount: 0 });
    expect(skipped.lastError).toMatch(/may not view/);
    expect(r.got.filter((g) => g.path === '/ok/owner')).toEqual([]);
  });

  describe('bad input: a defined answer that changes nothing', () => {
    it('on both faces', async () => {
      const before = await t.prisma.webhook.count();
      const d = await newDownload('Inputs');
      const gql = async (i: Record<string, unknown>) => (await t.gql(CREATE, { i })).codes;
      expect(await gql({ url: 'ftp://x.example/', events: ['*'] })).toEqual(['mc_dm_api_error.external_url_forbidden']);
      expect(await gql({ url: `https://x.example/${'a'.repeat(2001)}`, events: ['*'] })).toEqual(['invalid_input']);
      expect(await gql({ url: `${r.base}/ok`, events: ['nope'] })).toEqual(['invalid_input']);
      expect(await gql({ url: `${r.base}/ok`, events: [] })).toEqual(['invalid_input']);
      expect(await gql({ url: `${r.base}/ok`, events: ['*'], downloadId: 999999 })).toEqual([
        'mc_dm_api_error.download_not_found',
      ]);
      expect(await gql({ url: `${r.base}/ok`, events: ['*'], categoryId: 999999 })).toEqual([
        'mc_dm_api_error.category_not_found',
      ]);
      // A user may not watch a download they cannot edit, nor everything.
      const stranger = await t.user('stranger');
      const asStranger = async (form: Record<string, string | number | string[]>) =>
        (await t.rest('POST', '/api/mc-dm-webhooks/', { key: stranger.key, form })).body.errors?.[0]?.code;
      expect(await asStranger({ url: `${r.base}/ok`, events: ['*'], download_id: d.download_id })).toBe(
        'do_not_have_permission',
      );
      expect(await asStranger({ url: `${r.base}/ok`, events: ['*'] })).toBe('do_not_have_permission');
      // REST: the unknown events are named; a missing field; an unknown webhook.
      const unknown = await t.rest('POST', '/api/mc-dm-webhooks/', { form: { url: `${r.base}/ok`, events: ['x.y'] } });
      expect(unknown.status).toBe(400);
      expect(unknown.body.errors[0]).toMatchObject({
        code: 'invalid_input',
        params: { field: 'events', unknown: ['x.y'] },
      });
      const missing = await t.rest('POST', '/api/mc-dm-webhooks/', { form: { events: ['*'] } });
      expect(missing.status).toBe(400);
      expect(missing.body.errors[0].code).toBe('required_input_missing');
      for (const [method, path] of [
        ['GET', '/api/mc-dm-webhooks/999999/'],
        ['PUT', '/api/mc-dm-webhooks/999999/'],
        ['DELETE', '/api/mc-dm-webhooks/999999/'],
      ] as const) {
        const res = await t.rest(method, path);
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.body.errors[0].code).toBe('mc_dm_api_error.webhook_not_found');
      }
      const word = await t.rest('GET', '/api/mc-dm-webhooks/abc/');
      expect(word.status).toBe(400);
      expect(await t.prisma.webhook.count()).toBe(before);
    });

    it('update and list through REST; the secret is never shown again', async () => {
      const made = await t.rest('POST', '/api/mc-dm-webhooks/', { form: { url: `${r.base}/ok/rest`, events: ['*'] } });
      const id = made.body.webhook.webhook_id;
      const upd = await t.rest('PUT', `/api/mc-dm-webhooks/${id}/`, { form: { active: 0, events: ['file.added'] } });
      expect(upd.body.webhook).toMatchObject({ webhook_id: id, active: false, events: ['file.added'] });
      expect(upd.body.webhook.secret).toBeUndefined();
      const bad = await t.rest('PUT', `/api/mc-dm-webhooks/${id}/`, { form: { url: 'gopher://x/' } });
      expect(bad.status).toBe(422);
      const list = await t.rest('GET', '/api/mc-dm-webhooks/');
      expect(list.body.webhooks.some((w: { webhook_id: number }) => w.webhook_id === id)).toBe(true);
      expect(list.body.pagination).toMatchObject({ page: 1, per_page: 20 });
      const del = await t.rest('DELETE', `/api/mc-dm-webhooks/${id}/`);
      expect(del.body).toEqual({ success: true });
    });
  });

  it('dispatched outbox rows and finished deliveries are pruned once older than the retention; the rest stay', async () => {
    const old = new Date(Date.now() - LIMITS.outboxRetentionMs - 60_000);
    const recent = new Date(Date.now() - 60_000);
    const row = (dispatchedAt: Date | null, objectId: number) =>
      t.prisma.eventOutbox.create({ data: { type: 'download.updated', objectId, downloadId: objectId, dispatchedAt } });
    // Undispatched rows are never pruned, however old (their changes have not been sent yet); they are dispatched
    // below, so they name no download (no webhook watches download 0).
    const [gone, kept, waiting] = [await row(old, 0), await row(recent, 0), await row(null, 0)];
    await t.prisma.eventOutbox.update({ where: { id: waiting.id }, data: { createdAt: old } });
    const { webhook } = await create({ url: `${r.base}/ok/prune`, events: ['*'], active: false });
    const delivery = (status: string, finishedAt: Date | null) =>
      t.prisma.webhookDelivery.create({
        data: {
          webhookId: webhook.webhookId,
          eventId: gone.id,
          type: 'download.updated',
          objectId: 0,
          downloadId: 0,
          eventAt: old,
          status,
          finishedAt,
          nextAttemptAt: new Date(Date.now() + 3600_000),
        },
      });
    const finished = await Promise.all(['delivered', 'failed', 'skipped'].map((st) => delivery(st, old)));
    const pending = await delivery('pending', null);
    const fresh = await delivery('delivered', recent);
    await (t.app.dispatcher as unknown as { prune(): Promise<void> }).prune();
    const outbox = new Set((await t.prisma.eventOutbox.findMany({ select: { id: true } })).map((o) => o.id));
    expect([outbox.has(gone.id), outbox.has(kept.id), outbox.has(waiting.id)]).toEqual([false, true, true]);
    const left = new Set((await t.prisma.webhookDelivery.findMany({ select: { id: true } })).map((d) => d.id));
    expect(finished.map((d) => left.has(d.id))).toEqual([false, false, false]);
    expect([left.has(pending.id), left.has(fresh.id)]).toEqual([true, true]);
    await t.prisma.webhook.delete({ where: { id: webhook.webhookId } });
  });

  it('/metrics shows the queue depth, attempts by outcome and commit → first attempt', async () => {
    const res = await fetch(new URL('/metrics', t.url), {
      headers: { 'Forum-Api-Key': 'dm_test_super_key_with_every_scope_000000000' },
    });
    const text = await res.text();
    expect(text).toMatch(/^dcs_webhook_queue_depth \d+/m);
    expect(text).toMatch(/^dcs_webhook_attempts_total\{outcome="failed"\} [1-9]/m);
    expect(text).toMatch(/^dcs_webhook_first_attempt_seconds_count [1-9]/m);
  });
});
