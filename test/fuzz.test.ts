// Property-based fuzzing of every REST route's parameters and every GraphQL root field's arguments with hostile
// values. Whatever arrives: never a 5xx other than the contract's own (503), every error carries a contract code
// with its status, and a refused write changes no row.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  typeFromAST,
  type GraphQLArgument,
  type GraphQLInputType,
  type OperationDefinitionNode,
} from 'graphql';
import { schema } from '../src/modules/index.js';
import { routes } from '../rest-adapter/routes.js';
import { isContractCode, statusOf } from '../src/errors.js';
import { SUPER_KEY, forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';
import { World } from './authz/fixtures.js';

/** Runs per route and per root field; the file stays under a minute per database. */
const NUM_RUNS = Number(process.env.FUZZ_RUNS ?? 20);

// ── hostile values ────────────────────────────────────────────────────────────────────────────────────────

const scalar = fc.oneof(
  fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 53, Number.MAX_SAFE_INTEGER + 2, -1, 0, 1.5, -0.5, 1e308, -1e308),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom(
    'NaN',
    'Infinity',
    '',
    ' ',
    '-1',
    '+1',
    '1e3',
    '0x10',
    '01',
    '1.0',
    '99999999999',
    '9'.repeat(31),
    '-0',
    'true',
    'yes',
    'null',
    'undefined',
    '[]',
    '{}',
    '\u0000',
    'a\u0000b',
    '\uD800',
    'x\uDFFFy',
    '\uFFFF',
    '%00',
    '%',
    '../../etc/passwd',
    '<script>alert(1)</script>',
    "' OR 1=1 --",
    'ASC',
    'desc',
    'RANDOM',
    'all',
    '2026-02-30',
    '2026-11-22T25:00:00Z',
  ),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom('x'.repeat(300), 'é'.repeat(5000), '\u{1F600}'.repeat(2000)),
);
const hostile: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: scalar },
  { weight: 1, arbitrary: fc.array(scalar, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 6 }), scalar, { maxKeys: 3 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);
/** Plausible values, so that a request gets past the first check and reaches deeper code. */
const plausible = fc.oneof(
  fc.integer({ min: 1, max: 40 }),
  fc.constantFrom(
    'matrix',
    'asc',
    'DESC',
    'title',
    'display_order',
    '1',
    'true',
    'https://example.com/a.zip',
    'view',
    'ALLOW',
    'registered',
  ),
);
const valueFor = (enumValues?: string[]) =>
  fc.oneof(
    { weight: 3, arbitrary: hostile },
    { weight: 2, arbitrary: enumValues?.length ? fc.oneof(plausible, fc.constantFrom(...enumValues)) : plausible },
  );
/** A field is omitted, or given a hostile or plausible value. */
const maybe = (arb: fc.Arbitrary<unknown>) => fc.option(arb, { nil: undefined, freq: 4 });

const enumValuesOf = (type: GraphQLInputType) => {
  const named = getNamedType(type);
  return isEnumType(named) ? named.getValues().map((v) => v.name) : undefined;
};

/** A record over the named fields (each maybe omitted). */
function recordOf(
  fields: { name: string; type: GraphQLInputType }[],
  name: (f: string) => string = (f) => f,
): fc.Arbitrary<Record<string, unknown>> {
  const shape: Record<string, fc.Arbitrary<unknown>> = {};
  for (const f of fields) {
    const named = getNamedType(f.type);
    shape[name(f.name)] = isInputObjectType(named)
      ? maybe(fc.oneof(hostile, recordOf(Object.values(named.getFields()), name)))
      : maybe(valueFor(enumValuesOf(f.type)));
  }
  return fc.record(shape).map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)));
}

// ── transport ─────────────────────────────────────────────────────────────────────────────────────────────

/** Percent-encodes like encodeURIComponent, but sends a lone surrogate as its (invalid) three UTF-8-style bytes. */
function enc(s: string): string {
  let out = '';
  for (const ch of s) {
    try {
      out += encodeURIComponent(ch);
    } catch {
      const c = ch.charCodeAt(0);
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    }
  }
  return out;
}
const text = (v: unknown) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
/** name=value pairs as a PHP-style form: lists as name[]=, objects as name[key]=. */
function formOf(values: Record<string, unknown>): string {
  const pairs: string[] = [];
  for (const [k, v] of Object.entries(values)) {
    if (Array.isArray(v)) {
      for (const x of v) pairs.push(`${enc(k)}[]=${enc(text(x))}`);
    } else if (v && typeof v === 'object') {
      for (const [kk, x] of Object.entries(v)) pairs.push(`${enc(k)}[${enc(kk)}]=${enc(text(x))}`);
    } else pairs.push(`${enc(k)}=${enc(v === null ? '' : text(v))}`);
  }
  return pairs.join('&');
}

const snake = (s: string) => s.replace(/[A-Z]/g, (ch) => `_${ch.toLowerCase()}`);

/** A REST route's parameters: its path names and its operation's variables (input-object fields flattened), snake_case. */
function restParams(route: (typeof routes)[number]): { name: string; type: GraphQLInputType }[] {
  const op = route.document.definitions.find((d: any) => d.kind === 'OperationDefinition') as OperationDefinitionNode;
  const out: { name: string; type: GraphQLInputType }[] = [];
  for (const v of op.variableDefinitions ?? []) {
    const type = typeFromAST(schema, v.type as any) as GraphQLInputType;
    const named = getNamedType(type);
    if (v.variable.name.value === 'full') continue;
    if (isInputObjectType(named))
      out.push(...Object.values(named.getFields()).map((f) => ({ name: snake(f.name), type: f.type })));
    else out.push({ name: snake(v.variable.name.value), type });
  }
  return out;
}

// ── the service's state, for "a refused write changes nothing" ────────────────────────────────────────────

const TABLES = [
  'user',
  'user_group',
  'user_group_membership',
  'group_permission',
  'category_permission',
  'api_key',
  'category',
  'prefix',
  'category_prefix',
  'download',
  'version',
  'file',
  'comment',
  'comment_edit',
  'tag',
  'download_tag',
  'team_member',
  'audit_log',
  'moderator_log',
];
/**
 * One digest of every table's rows (an API key's last-use time aside: reading with a key updates it), as a prepared
 * statement (planned once) over each row's text: about half the cost of planning it each time over JSON rows, which
 * was most of this file's time on the embedded database.
 */
const CHECKSUM_SQL = `SELECT ${TABLES.map(
  (t) => `(SELECT md5(coalesce(string_agg(x, '|' ORDER BY x), '')) FROM
  (SELECT ${t === 'api_key' ? `(to_jsonb(r) - 'lastUsedAt')::text` : 'r::text'} AS x FROM "${t}" r) s) AS "${t}"`,
).join(', ')}`;
const checksum = async (t: TestApp) => JSON.stringify(await t.app.db.query(CHECKSUM_SQL));
/**
 * The checksum before a request: the views earlier reads counted are added to view_count first, so that the flush
 * every 30 s cannot land between it and the checksum after (and look like a refused request that changed rows).
 */
const settledChecksum = async (t: TestApp) => {
  await t.app.flushViews();
  return checksum(t);
};

/** Codes whose refusal keeps a row by design (a failed external URL or a rejected file is kept, quarantined). */
const KEEPS_ROW = new Set(['mc_dm_api_error.external_url_unreachable', 'mc_dm_api_error.processor_rejected']);

/** What is wrong with an answer ('' when nothing is). */
function problemsOf(status: number, codes: unknown[]): string {
  if (status >= 500 && !(status === 503 && codes.every((c) => c === 'server_busy' || c === 'operation_timeout')))
    return `status ${status} ${JSON.stringify(codes)}`;
  const bad = codes.filter((c) => !isContractCode(c));
  return bad.length ? `status ${status} with codes outside the contract: ${JSON.stringify(bad)}` : '';
}

forEachDatabase((kind) => {
  let t: TestApp;
  let keys: { key: string; headers: Record<string, string> }[];
  beforeAll(async () => {
    t = await startTestApp(kind, { commentFloodSeconds: 0 });
    const w = await new World(t).build();
    // The super-user key (every check passes, so the values reach the deepest code), a user and a guest.
    keys = [
      { key: SUPER_KEY, headers: { 'Forum-Api-User': String(w.users.alice) } },
      { key: SUPER_KEY, headers: {} },
      await w.credentials('user', [
        'mc_dm_category:read',
        'mc_dm_download:read',
        'mc_dm_download:write',
        'mc_dm_category:write',
      ]),
      await w.credentials('guest', ['mc_dm_category:read', 'mc_dm_download:read']),
    ];
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  describe('REST: hostile parameters', () => {
    for (const route of routes) {
      const params = restParams(route);
      const pathNames = [...route.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1]!);
      it(`${route.method} ${route.path}`, async () => {
        const arb = fc.record({
          values: recordOf(params.filter((p) => !pathNames.includes(p.name))),
          path: fc.record(Object.fromEntries(pathNames.map((n) => [n, valueFor()]))),
          transport:
            route.method === 'GET'
              ? fc.constant('query' as const)
              : fc.constantFrom('query' as const, 'form' as const, 'json' as const),
          who: fc.nat({ max: 3 }),
        });
        await fc.assert(
          fc.asyncProperty(arb, async ({ values, path, transport, who }) => {
            const { key, headers } = keys[who]!;
            const url = new URL(
              route.path.replace(/:([a-z_]+)/g, (_m, n: string) => enc(text(path[n]))),
              t.url,
            );
            const init: RequestInit = {
              method: route.method,
              headers: { 'Forum-Api-Key': key, ...headers },
              redirect: 'manual',
            };
            if (transport === 'query') url.search = formOf(values);
            else if (transport === 'form')
              Object.assign(init, {
                body: formOf(values),
                headers: { ...init.headers, 'content-type': 'application/x-www-form-urlencoded' },
              });
            else
              Object.assign(init, {
                body: JSON.stringify(values),
                headers: { ...init.headers, 'content-type': 'application/json' },
              });
            const before = route.method === 'GET' ? '' : await settledChecksum(t);
            const res = await fetch(url, init);
            const body: any = await res.json().catch(() => null);
            const codes: unknown[] = res.status >= 400 ? (body?.errors ?? [undefined]).map((e: any) => e?.code) : [];
            const where = `${route.method} ${url.pathname}${url.search} ${init.body ?? ''}`.slice(0, 400);
            expect(problemsOf(res.status, codes), where).toBe('');
            // A request line and headers over 16 KiB: 431, the one status of request_too_large other than 413.
            const status = res.status === 431 && codes[0] === 'request_too_large' ? 413 : res.status;
            if (res.status >= 400) expect(statusOf(codes[0] as string), `${where}: status of ${codes[0]}`).toBe(status);
            if (res.status >= 400 && route.method !== 'GET' && !codes.some((c) => KEEPS_ROW.has(c as string))) {
              expect(await checksum(t), `${where}: refused with ${codes[0]} but changed rows`).toBe(before);
            }
          }),
          { numRuns: NUM_RUNS },
        );
      }, 60_000);
    }
  });

  describe('GraphQL: hostile arguments', () => {
    const mutations = schema.getMutationType()!.getFields();
    const roots = [...Object.values(schema.getQueryType()!.getFields()), ...Object.values(mutations)];
    for (const field of roots) {
      const isMutation = field.name in mutations;
      it(`${isMutation ? 'mutation' : 'query'} ${field.name}`, async () => {
        const args = field.args as readonly GraphQLArgument[];
        const vars = args.map((a) => `$${a.name}: ${a.type.toString()}`).join(', ');
        const call = args.length ? `(${args.map((a) => `${a.name}: $${a.name}`).join(', ')})` : '';
        const doc = `${isMutation ? 'mutation' : 'query'}${vars ? `(${vars})` : ''} { ${field.name}${call} { __typename } }`;
        const arb = fc.record({
          variables: recordOf(args.map((a) => ({ name: a.name, type: a.type }))),
          who: fc.nat({ max: 3 }),
        });
        await fc.assert(
          fc.asyncProperty(arb, async ({ variables, who }) => {
            const { key, headers } = keys[who]!;
            const before = isMutation ? await settledChecksum(t) : '';
            const res = await t.send(new URL('/graphql', t.url), {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'Forum-Api-Key': key, ...headers },
              body: JSON.stringify({ query: doc, variables }),
            });
            const body: any = await res.json().catch(() => null);
            const codes: unknown[] = (body?.errors ?? []).map((e: any) => e?.extensions?.code);
            const where = `${field.name} ${JSON.stringify(variables)}`.slice(0, 400);
            expect(body, `${where}: not JSON (status ${res.status})`).not.toBeNull();
            expect(problemsOf(res.status, codes), where).toBe('');
            if (
              isMutation &&
              codes.length &&
              body?.data?.[field.name] == null &&
              !codes.some((c) => KEEPS_ROW.has(c as string))
            ) {
              expect(await checksum(t), `${where}: refused with ${codes[0]} but changed rows`).toBe(before);
            }
          }),
          { numRuns: NUM_RUNS },
        );
      }, 60_000);
    }
  });
});
