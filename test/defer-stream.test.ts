// @defer and @stream, as front-ends use them: the directives are in the schema, the parts arrive as multipart/mixed
// (Apollo Client 4 with its incremental handler, and raw) or as Server-Sent Events, and the cost limit counts deferred
// and streamed fields as any other.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { Defer20220824Handler } from '@apollo/client/incremental';
import { parse } from 'graphql';
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
      const plain = '{ downloads(perPage: 50) { nodes { title versions(first: 50) { nodes { versionString } } } } }';
      const deferred =
        '{ downloads(perPage: 50) { nodes @stream(initialCount: 0) { title ... @defer { versions(first: 50) { nodes { versionString } } } } } }';
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
  });
});
