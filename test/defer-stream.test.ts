// @defer and @stream, as front-ends use them: the directives are in the schema, the parts arrive as multipart/mixed
// (Apollo Client 4 with its incremental handler, and raw) or as Server-Sent Events, and the cost limit counts deferred
// and streamed fields as any other.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { Defer20220824Handler } from '@apollo/client/incremental';
import { parse, validate } from 'graphql';
import { loadConfig } from '../src/config.js';
import { operationCost } from '../src/graphql/cost.js';
import { schema } from '../src/modules/index.js';
import { forEachDatabase, startTestApp, SUPER_KEY, type TestApp } from './helpers/app.js';

/** The JSON parts of a multipart/mixed body. */
const parts = (body: string) =>
  body
    .split(/\r?\n---/)
    .map((chunk) => chunk.slice(chunk.indexOf('{')))
    .filter((chunk) => chunk.startsWith('{'))
    .map((chunk) => JSON.parse(chunk));

forEachDatabase((kind) => {
  describe('@defer and @stream', () => {
    let t: TestApp;
    let dl: number;
    beforeAll(async () => {
      t = await startTestApp(kind);
      const owner = await t.user(`defer_owner_${kind}`);
      const cat = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Deferred' } })).body.category
        .category_id;
      for (const title of ['First', 'Second', 'Third']) {
        const d = await t.rest('POST', '/api/mc-dm-downloads/', {
          key: owner.key,
          form: { category_id: cat, title, description: `About ${title}` },
        });
        dl = d.body.download.download_id;
      }
    });
    afterAll(() => t?.close());

    const post = (query: string, accept: string) =>
      fetch(`${t.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept, 'Forum-Api-Key': SUPER_KEY },
        body: JSON.stringify({ query, variables: { d: dl } }),
      });

    it('sends the first part, then the deferred fragment, as multipart/mixed', async () => {
      const res = await post(
        'query($d: Int!) { download(downloadId: $d) { title ... @defer(label: "slow") { description } } }',
        'multipart/mixed',
      );
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^multipart\/mixed/);
      expect(parts(await res.text())).toEqual([
        { data: { download: { title: 'Third' } }, hasNext: true },
        {
          incremental: [{ data: { description: 'About Third' }, path: ['download'], label: 'slow' }],
          hasNext: false,
        },
      ]);
    });

    it('streams list items after the first ones, and over SSE too', async () => {
      const query =
        '{ downloads(perPage: 3, order: TITLE, direction: ASC) { nodes @stream(initialCount: 1) { title } } }';
      const res = await post(query, 'multipart/mixed');
      const got = parts(await res.text());
      expect(got[0]).toEqual({ data: { downloads: { nodes: [{ title: 'First' }] } }, hasNext: true });
      const streamed = got.slice(1).flatMap((p) => p.incremental?.flatMap((i: any) => i.items) ?? []);
      expect(streamed).toEqual([{ title: 'Second' }, { title: 'Third' }]);
      expect(got.at(-1).hasNext).toBe(false);

      const sse = await post(query, 'text/event-stream');
      expect(sse.headers.get('content-type')).toContain('text/event-stream');
      const events = (await sse.text()).split('\n\n').filter((e) => e.startsWith('event: next'));
      expect(events.length).toBeGreaterThanOrEqual(2);
      expect(events[0]).toContain('"hasNext":true');
    });

    it('Apollo Client 4 with its incremental handler merges the parts into one result', async () => {
      const client = new ApolloClient({
        cache: new InMemoryCache(),
        incrementalHandler: new Defer20220824Handler(),
        link: new HttpLink({ uri: `${t.url}/graphql`, headers: { 'Forum-Api-Key': SUPER_KEY } }),
      });
      const result = await client.query({
        query: gql`
          query Deferred($d: Int!) {
            download(downloadId: $d) {
              id
              title
              ... @defer {
                description
              }
            }
          }
        `,
        variables: { d: dl },
      });
      expect(result.data).toMatchObject({ download: { title: 'Third', description: 'About Third' } });
    });

    it('costs deferred and streamed fields like any other, and a client that takes only JSON is told what to send', async () => {
      const plain = '{ downloads(perPage: 50) { nodes { title versions(first: 50) { versionString } } } }';
      const deferred =
        '{ downloads(perPage: 50) { nodes @stream(initialCount: 0) { title ... @defer { versions(first: 50) { versionString } } } } }';
      for (const document of [plain, deferred]) expect(validate(schema, parse(document)), document).toEqual([]);
      expect(operationCost(schema, parse(deferred), {})).toBe(operationCost(schema, parse(plain), {}));
      const json = await post(
        'query($d: Int!) { download(downloadId: $d) { title ... @defer { description } } }',
        'application/json',
      );
      expect(json.status).toBe(400);
      const body = (await json.json()) as any;
      expect(body.errors[0].extensions).toMatchObject({ code: 'invalid_input', params: { field: 'accept' } });
      expect(body.errors[0].message).toContain('multipart/mixed');
    });

    it('refuses a deferred and streamed operation over the cost limit before the first part, as the plain one is', async () => {
      const limit = loadConfig({}).graphql.maxCost;
      const plain =
        '{ downloads(perPage: 100) { nodes { title versions(first: 100) { versionString files(first: 10) { nodes { filename } } } } } }';
      const deferred =
        '{ downloads(perPage: 100) { nodes @stream(initialCount: 0) { title ... @defer { versions(first: 100) { versionString files(first: 10) { nodes { filename } } } } } } }';
      for (const document of [plain, deferred]) expect(validate(schema, parse(document)), document).toEqual([]);
      expect(operationCost(schema, parse(deferred), {})).toBe(operationCost(schema, parse(plain), {}));
      expect(operationCost(schema, parse(deferred), {})).toBeGreaterThan(limit);
      for (const [query, accept] of [
        [plain, 'application/json'],
        [deferred, 'multipart/mixed'],
        [deferred, 'text/event-stream'],
      ] as const) {
        const res = await post(query, accept);
        const text = await res.text();
        const errors = res.headers.get('content-type')?.startsWith('multipart/')
          ? parts(text).flatMap((p) => p.errors ?? [])
          : res.headers.get('content-type')?.startsWith('text/event-stream')
            ? text
                .split('\n')
                .filter((l) => l.startsWith('data: {'))
                .flatMap((l) => JSON.parse(l.slice(6)).errors ?? [])
            : JSON.parse(text).errors;
        expect(errors?.[0]?.extensions, `${accept}: ${text.slice(0, 300)}`).toMatchObject({
          code: 'operation_too_expensive',
          params: { kind: 'cost', limit },
        });
        expect(text, accept).not.toContain('"data"');
      }
    });
  });
});
