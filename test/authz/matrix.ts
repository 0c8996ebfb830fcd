// The authorization matrix's cases and how each is run (test/authz-matrix.test.ts and
// test/authz-matrix-postgres.test.ts): every GraphQL root field and every REST route × key type × scope set × object
// state, answered as test/authz/expectations.ts says. One file per database, so that the two run side by side.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { getNamedType, isObjectType, type GraphQLField } from 'graphql';
import { schema } from '../../src/modules/index.js';
import { statusOf } from '../../src/errors.js';
import { toGlobalId } from '../../src/graphql/node.js';
import { startTestApp, SUPER_KEY, type DbKind, type TestApp } from '../helpers/app.js';
import {
  ACTORS,
  SCOPE_SETS,
  expected,
  fields,
  fileData,
  restRoutes,
  scopesFor,
  statesOf,
  type Actor,
  type Outcome,
  type Row,
  type ScopeSet,
  type State,
} from './expectations.js';
import { COMMENT_TEXT, LINK, SPARE_GROUP, WEBHOOK_URL, World } from './fixtures.js';

let roots: Map<string, GraphQLField<unknown, unknown>> | undefined;
/** The schema's root fields: queries and mutations (built once: every case's document reads them). */
export const rootFields = (): Map<string, GraphQLField<unknown, unknown>> =>
  (roots ??= new Map([
    ...Object.entries(schema.getQueryType()!.getFields()),
    ...Object.entries(schema.getMutationType()!.getFields()),
  ]));

interface Case {
  face: 'graphql' | 'rest';
  op: string;
  row: Row;
  actor: Actor;
  set: ScopeSet;
  state: string;
  expect: Outcome;
}

function cases(): Case[] {
  const out: Case[] = [];
  const add = (face: Case['face'], op: string, row: Row) => {
    for (const actor of ACTORS) {
      for (const set of SCOPE_SETS) {
        // Without the needed scopes the state cannot matter: one open and one hidden object suffice.
        const states =
          set === 'none' ? statesOf(row.target).filter((s, i) => i === 0 || s === 'hidden') : statesOf(row.target);
        for (const state of states)
          out.push({ face, op, row, actor, set, state, expect: expected(row, actor, set, state) });
      }
    }
  };
  for (const [name, row] of Object.entries(fields)) add('graphql', name, row);
  for (const [key, field] of Object.entries(restRoutes))
    add('rest', key, field === 'fileData' ? fileData : fields[field]!);
  return out;
}

/** What a case targets, by state; destructive cases expected to succeed get a fresh object. */
async function targetOf(w: World, c: Case) {
  const fresh = c.row.destructive && c.expect === 'ok';
  const field = c.face === 'rest' ? restRoutes[c.op]! : c.op;
  switch (c.row.target) {
    case 'none':
      return {
        apiKeyId: fresh && field === 'revokeApiKey' ? await w.freshKeyId() : 0,
        reportId: fresh && field === 'resolveReport' ? await w.freshReport() : w.reportId,
        ...(field.toLowerCase().includes('webhook')
          ? {
              ...(await w.webhook()),
              ...(fresh && field === 'deleteWebhook' ? { webhookId: await w.freshWebhook() } : {}),
            }
          : {}),
      };
    case 'category': {
      const state = c.state as 'open' | 'hidden';
      return { categoryId: fresh ? await w.freshCategory(state) : w.categories[state] };
    }
    case 'download':
      return fresh ? await w.freshDownload(c.state as State) : w.downloads[c.state as State];
    case 'comment':
      return fresh ? await w.freshComment(c.state as State) : w.comments[c.state as State];
    case 'review':
      return fresh ? await w.freshReview(c.state as State) : w.reviews[c.state as State];
    case 'file': {
      const d = w.downloads[c.state as State];
      return { ...d, fileId: fresh ? await w.freshFile(d) : d.fileId };
    }
  }
}

/** How many fresh objects of each kind and state `cases` take (see targetOf). */
function freshNeeds(cases: Case[]): Parameters<World['stock']>[0] {
  const needs: Parameters<World['stock']>[0] = {};
  for (const c of cases) {
    if (!(c.row.destructive && c.expect === 'ok')) continue;
    const kind = c.row.target;
    if (kind !== 'download' && kind !== 'comment' && kind !== 'file' && kind !== 'review') continue;
    needs[kind] ??= {};
    const byState = needs[kind];
    byState[c.state as State] = (byState[c.state as State] ?? 0) + 1;
  }
  return needs;
}

/** The arguments each field is called with (non-destructive unless the row says so), and what it selects. */
function argsOf(w: World, field: string, t: any): { args: Record<string, unknown>; select?: string; listKey?: string } {
  const input = (i: Record<string, unknown>) => ({ args: { input: i }, select: '__typename' });
  switch (field) {
    case 'node':
      return { args: { id: toGlobalId('Download', t.downloadId) }, select: '__typename' };
    case 'nodes':
      return { args: { ids: [toGlobalId('Download', t.downloadId)] }, select: '__typename' };
    case 'viewer':
      return { args: {}, select: 'userId' };
    case 'categories':
      return { args: { perPage: 100 }, select: 'nodes { categoryId }', listKey: 'categoryId' };
    case 'categoriesConnection':
      return { args: { first: 100 }, select: 'nodes { categoryId }', listKey: 'categoryId' };
    case 'category':
      return { args: { categoryId: t.categoryId }, select: 'categoryId' };
    case 'downloads':
      return {
        args: { categoryId: t.categoryId, perPage: 100 },
        select: 'nodes { downloadId }',
        listKey: 'downloadId',
      };
    case 'search':
      return {
        args: { query: 'matrix', filter: { categoryId: t.categoryId }, first: 100 },
        select: 'nodes { downloadId }',
        listKey: 'downloadId',
      };
    case 'downloadsConnection':
      return { args: { categoryId: t.categoryId, first: 100 }, select: 'nodes { downloadId }', listKey: 'downloadId' };
    case 'download':
      return { args: { downloadId: t.downloadId }, select: 'downloadId' };
    case 'downloadStats':
      return { args: { downloadId: t.downloadId }, select: 'day' };
    case 'comments':
      return { args: { downloadId: t.downloadId, perPage: 100 }, select: 'nodes { commentId }', listKey: 'commentId' };
    case 'commentsConnection':
      return { args: { downloadId: t.downloadId, first: 100 }, select: 'nodes { commentId }', listKey: 'commentId' };
    case 'comment':
      return { args: { commentId: t.commentId }, select: 'commentId' };
    case 'files':
      return { args: { versionId: t.versionId, perPage: 100 }, select: 'nodes { fileId }', listKey: 'fileId' };
    case 'filesConnection':
      return { args: { versionId: t.versionId, first: 100 }, select: 'nodes { fileId }', listKey: 'fileId' };
    case 'file':
      return { args: { fileId: t.fileId }, select: 'fileId' };
    case 'filesByHash':
      return { args: { hashes: [hashOf(t.fileId)] }, select: 'fileId', listKey: 'fileId' };
    case 'versions':
      return { args: { downloadId: t.downloadId, perPage: 100 }, select: 'nodes { versionId }', listKey: 'versionId' };
    case 'version':
      return { args: { versionId: t.versionId }, select: 'versionId' };
    case 'updateVersion':
    case 'restoreVersion':
      return input({ versionId: t.versionId });
    case 'deleteVersion':
      return input({ versionId: t.versionId, hard: false });
    case 'resolveDependencies':
      return { args: { versionId: t.versionId }, select: 'cycles' };
    case 'updates':
      return { args: { hashes: [hashOf(t.fileId)] }, select: 'current { versionId }', listKey: 'versionId' };
    case 'fileData':
      return { args: { fileId: t.fileId } };
    case 'createCategory':
      return input({ title: 'matrix' });
    case 'updateCategory':
      return input({ categoryId: t.categoryId });
    case 'deleteCategory':
      return input({ categoryId: t.categoryId, hard: true });
    case 'users':
      return { args: { perPage: 5 }, select: '__typename' };
    case 'apiKeys':
      return { args: { perPage: 5 }, select: '__typename' };
    case 'groups':
      return { args: {}, select: 'name' };
    case 'prefixes':
      return { args: {}, select: 'title' };
    case 'effectivePermissions':
      return { args: { userId: w.users.alice }, select: 'permission' };
    case 'createUser':
      return input({ username: `matrix${w.next()}` });
    case 'setUserGroups':
      return input({ userId: w.users.carol, groups: [] });
    case 'createApiKey':
      return input({ type: 'USER', userId: w.users.alice, scopes: ['mc_dm_category:write'] });
    case 'revokeApiKey':
      return input({ apiKeyId: t.apiKeyId || 1 });
    case 'setGroupPermission':
      return input({ group: SPARE_GROUP, permission: 'view', value: 'DENY' });
    case 'setCategoryPermission':
      return input({ categoryId: t.categoryId, group: SPARE_GROUP, permission: 'view', value: 'DENY' });
    case 'createPrefix':
      return input({ title: 'M' });
    case 'assignPrefix':
      return input({ prefixId: w.prefixId, categoryId: t.categoryId });
    case 'createDownload':
      return input({ categoryId: t.categoryId, title: 'matrix' });
    case 'updateDownload':
      return input({ downloadId: t.downloadId });
    case 'deleteDownload':
      return input({ downloadId: t.downloadId, hard: false, reason: 'matrix' });
    case 'restoreDownload':
      return input({ downloadId: t.downloadId });
    case 'createVersion':
      return input({ downloadId: t.downloadId, versionString: '2' });
    case 'addTeamMember':
    case 'removeTeamMember':
      return input({ downloadId: t.downloadId, userId: w.users.carol });
    case 'createComment':
      return input({ downloadId: t.downloadId, message: 'matrix' });
    case 'updateComment':
      return input({ commentId: t.commentId, message: COMMENT_TEXT });
    case 'deleteComment':
      return input({ commentId: t.commentId, hard: false });
    case 'approveDownload':
      return input({ downloadId: t.downloadId });
    case 'rejectDownload':
      return input({ downloadId: t.downloadId, reason: 'matrix' });
    case 'approveComment':
      return input({ commentId: t.commentId });
    case 'rejectComment':
      return input({ commentId: t.commentId, reason: 'matrix' });
    case 'auditLog':
      return { args: { first: 5 }, select: 'totalCount' };
    case 'moderationQueue':
      return { args: { first: 5 }, select: 'totalCount' };
    case 'reportContent':
      return input({ contentType: 'DOWNLOAD', contentId: t.downloadId, reason: 'matrix' });
    case 'resolveReport':
      return input({ reportId: t.reportId });
    case 'reviews':
      return { args: { downloadId: t.downloadId, perPage: 100 }, select: 'nodes { reviewId }', listKey: 'reviewId' };
    case 'review':
      return { args: { reviewId: t.reviewId }, select: 'reviewId' };
    case 'createReview':
      return input({ downloadId: t.downloadId, rating: 4 });
    case 'updateReview':
      return input({ reviewId: t.reviewId, rating: 4 });
    case 'deleteReview':
      return input({ reviewId: t.reviewId });
    case 'approveReview':
      return input({ reviewId: t.reviewId });
    case 'rejectReview':
      return input({ reviewId: t.reviewId, reason: 'matrix' });
    case 'replyToReview':
      return input({ reviewId: t.reviewId, message: 'thanks' });
    case 'createFile':
      return input({ versionId: t.versionId, externalUrl: LINK, linkOnly: true });
    case 'updateFile':
      return input({ fileId: t.fileId });
    case 'deleteFile':
      return input({ fileId: t.fileId, hard: false });
    case 'webhooks':
      return { args: { perPage: 100 }, select: 'nodes { webhookId }', listKey: 'webhookId' };
    case 'webhook':
      return { args: { webhookId: t.webhookId }, select: 'webhookId' };
    case 'webhookDeliveries':
      return { args: { webhookId: t.webhookId, first: 5 }, select: 'totalCount' };
    case 'createWebhook':
      return input({ url: WEBHOOK_URL, events: ['*'], downloadId: t.downloadId, active: false });
    case 'updateWebhook':
      return input({ webhookId: t.webhookId, active: false });
    case 'deleteWebhook':
      return input({ webhookId: t.webhookId });
    case 'redeliverWebhook':
      return input({ deliveryId: t.deliveryId });
    default:
      throw new Error(`no arguments for ${field}: add them to argsOf`);
  }
}

/** `query($a: T) { field(a: $a) { select } }`, typed from the schema. */
function documentOf(field: string, args: Record<string, unknown>, select?: string): string {
  const def = rootFields().get(field)!;
  const isMutation = field in schema.getMutationType()!.getFields();
  const used = def.args.filter((a) => a.name in args);
  const vars = used.map((a) => `$${a.name}: ${a.type.toString()}`).join(', ');
  const call = used.length ? `(${used.map((a) => `${a.name}: $${a.name}`).join(', ')})` : '';
  const sel = isObjectType(getNamedType(def.type)) || select ? ` { ${select ?? '__typename'} }` : '';
  return `${isMutation ? 'mutation' : 'query'}${vars ? `(${vars})` : ''} { ${field}${call}${sel} }`;
}

/** A SHA-1 that names one fixture file. */
const hashOf = (fileId: number) => `sha1:${fileId.toString(16).padStart(40, '0')}`;

const snake = (s: string) => s.replace(/[A-Z]/g, (ch) => `_${ch.toLowerCase()}`);

/** Runs one case and returns what differs from the expectation ('' when it matches). */
async function run(t: TestApp, w: World, c: Case): Promise<string> {
  const field = c.face === 'rest' ? restRoutes[c.op]! : c.op;
  const target: any = await targetOf(w, c);
  const { args, select, listKey } = argsOf(w, field, target);
  // The fixtures' files are links, which have no hash: the file looked up by hash gets one of its own.
  if (field === 'filesByHash' || field === 'updates')
    await t.prisma.file.update({ where: { id: target.fileId }, data: { sha1: hashOf(target.fileId) } });
  const scopes = scopesFor(c.row, c.set);
  const { key, headers } = await w.credentials(c.actor, scopes);
  const got =
    c.face === 'graphql'
      ? await runGraphql(t, field, args, select, listKey, target, key, headers)
      : await runRest(t, c.op, field, args, listKey, target, key, headers);
  return got === c.expect
    ? ''
    : `${c.face} ${c.op} actor=${c.actor} scopes=${c.set} state=${c.state}: expected ${c.expect}, got ${got}`;
}

async function runGraphql(
  t: TestApp,
  field: string,
  args: Record<string, unknown>,
  select: string | undefined,
  listKey: string | undefined,
  target: any,
  key: string,
  headers: Record<string, string>,
): Promise<string> {
  const r = await t.gql(documentOf(field, args, select), args, key, headers);
  // `nodes` is a list that is never null: a refused entry is null with its own error.
  const value = field === 'nodes' ? r.data?.nodes?.[0] : r.data?.[field];
  if (r.errors?.length) {
    if (value != null) return `data and error ${r.codes[0]}`;
    return r.codes[0] ?? `no code: ${r.errors[0].message}`;
  }
  if (value == null) return 'null';
  if (listKey) {
    const rows: any[] = Array.isArray(value) ? value : value.nodes;
    // An update check lists the versions of the files it found.
    return rows.some((n: any) => (n.current ?? n)[listKey] === target[listKey]) ? 'listed' : 'unlisted';
  }
  return 'ok';
}

async function runRest(
  t: TestApp,
  route: string,
  field: string,
  args: Record<string, unknown>,
  listKey: string | undefined,
  target: any,
  key: string,
  headers: Record<string, string>,
): Promise<string> {
  const [method, pattern] = route.split(' ') as [string, string];
  const flat: Record<string, unknown> = { ...((args.input as Record<string, unknown>) ?? args) };
  if (field === 'fileData') flat.file_id = target.fileId;
  const values = new Map(Object.entries(flat).map(([k, v]) => [snake(k), v]));
  const path = pattern.replace(/:([a-z_]+)/g, (_m, name: string) => {
    const v = values.get(name);
    values.delete(name);
    return String(v);
  });
  const params = new URLSearchParams();
  for (const [k, v] of values) {
    if (Array.isArray(v)) {
      for (const x of v) params.append(`${k}[]`, String(x));
    } else params.append(k, typeof v === 'boolean' ? (v ? '1' : '0') : String(v));
  }
  const url = new URL(path, t.url);
  const init: RequestInit = { method, redirect: 'manual', headers: { 'Forum-Api-Key': key, ...headers } };
  if (method === 'GET') url.search = params.toString();
  else {
    init.body = params.toString();
    (init.headers as Record<string, string>)['content-type'] = 'application/x-www-form-urlencoded';
  }
  const res = await t.send(url, init);
  const text = await res.text();
  let body: any = null;
  try {
    body = JSON.parse(text);
  } catch {
    /* the file data route answers bytes or a redirect */
  }
  if (res.status >= 300 && res.status < 400) return field === 'fileData' ? 'ok' : `status ${res.status}`;
  if (res.status !== 200) {
    const code = body?.errors?.[0]?.code as string | undefined;
    if (!code) return `status ${res.status} without a code`;
    return statusOf(code) === res.status ? code : `${code} with status ${res.status}`;
  }
  if (listKey) {
    const list = Object.values(body).find(Array.isArray) as any[] | undefined;
    const id = snake(listKey);
    return list?.some((n) => (n.current_version ?? n)[id] === target[listKey]) ? 'listed' : 'unlisted';
  }
  return 'ok';
}

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

export function matrixTests(kind: DbKind): void {
  let t: TestApp;
  let w: World;
  beforeAll(async () => {
    t = await startTestApp(kind, { commentFloodSeconds: 0 });
    const started = Date.now();
    w = await new World(t).build();
    console.log(`authorization matrix (${kind}): world built in ${Date.now() - started} ms`);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it('every field and route answers each key type, scope set and object state as the table says', async () => {
    const all = cases();
    // Reads first, on the untouched world; then writes (a write expected to succeed on a shared object leaves it as it was).
    const isWrite = (c: Case) =>
      c.face === 'graphql' ? c.op in schema.getMutationType()!.getFields() : !c.op.startsWith('GET ');
    const reads = all.filter((c) => !isWrite(c));
    const writes = all.filter(isWrite);
    const started = Date.now();
    const direct0 = await directAnswers(t);
    const failures = [
      ...(await pool(reads, 16, (c) =>
        run(t, w, c).catch((e) => `${c.face} ${c.op} ${c.actor} ${c.set} ${c.state}: threw ${e}`),
      )),
    ];
    // The fresh objects the writes expected to succeed take, made ahead in bulk.
    await w.stock(freshNeeds(writes));
    failures.push(
      ...(await pool(writes, 16, (c) =>
        run(t, w, c).catch((e) => `${c.face} ${c.op} ${c.actor} ${c.set} ${c.state}: threw ${e}`),
      )),
    );
    const failed = failures.filter(Boolean);
    // GraphQL queries sent again are answered without Yoga's pipeline (src/http/known-queries.ts): most of the
    // matrix's GraphQL reads repeat a document another key sent first, so the table holds for that path too.
    const direct = (await directAnswers(t)) - direct0;
    console.log(
      `authorization matrix (${kind}): ${all.length} cases (${reads.length} reads, ${writes.length} writes) in ${Date.now() - started} ms; ${direct} GraphQL reads answered directly`,
    );
    expect(direct).toBeGreaterThan(reads.filter((c) => c.face === 'graphql').length / 4);
    expect(failed).toEqual([]);
    expect(w.leftInStock(), 'fresh objects made ahead that no case took').toBe(0);
    // About 8,000 requests: a bound for a hang, not for speed. On a 2-core machine that other work loads as well as
    // the test files beside it, one database's matrix was seen to take over ten minutes.
  }, 1_800_000);
}

/** GraphQL requests answered directly so far (dcs_graphql_known_queries_total{path="direct"}). */
async function directAnswers(t: TestApp): Promise<number> {
  const res = await t.send('/metrics', { headers: { 'Forum-Api-Key': SUPER_KEY } });
  return Number(/^dcs_graphql_known_queries_total\{path="direct"\} (\d+)/m.exec(await res.text())?.[1] ?? NaN);
}
