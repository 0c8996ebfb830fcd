// A real front-end client against a real server: Apollo Client 4 pages downloadsConnection with fetchMore and
// relayStylePagination() (no merge code written by hand), while rows arrive between fetches; its normalised cache
// ends up holding every row exactly once, in the list's order.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { relayStylePagination } from '@apollo/client/utilities';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

const DOWNLOADS = gql`
  query Downloads($categoryId: Int, $first: Int, $after: String) {
    downloadsConnection(categoryId: $categoryId, order: TITLE, direction: ASC, first: $first, after: $after) {
      totalCount
      edges { cursor node { id downloadId title } }
      pageInfo { hasNextPage endCursor }
    }
  }
`;

interface Data {
  downloadsConnection: {
    totalCount: number;
    edges: { cursor: string; node: { id: string; downloadId: number; title: string } }[];
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
}

forEachDatabase((kind) => {
  let t: TestApp;
  let reader: { userId: number; key: string };
  let cat: number;
  let ownerId: number;

  beforeAll(async () => {
    t = await startTestApp(kind);
    ownerId = (await t.user(`apollo_owner_${kind}`)).userId;
    reader = await t.user(`apollo_reader_${kind}`);
    cat = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Apollo' } })).body.category.category_id;
    await t.prisma.download.createMany({
      data: Array.from({ length: 23 }, (_, i) => ({
        categoryId: cat,
        userId: ownerId,
        title: `M${String(i).padStart(2, '0')}`,
      })),
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('Apollo Client 4 pages downloadsConnection with fetchMore and relayStylePagination: every row once', async () => {
    const client = new ApolloClient({
      link: new HttpLink({
        uri: new URL('/graphql', t.url).toString(),
        headers: { 'Forum-Api-Key': reader.key },
        fetch,
      }),
      cache: new InMemoryCache({
        typePolicies: {
          Query: { fields: { downloadsConnection: relayStylePagination(['categoryId', 'order', 'direction']) } },
        },
      }),
    });
    const original = (
      await t.prisma.download.findMany({ where: { categoryId: cat }, orderBy: [{ title: 'asc' }, { id: 'asc' }] })
    ).map((d) => d.id);
    const variables = { categoryId: cat, first: 5 };
    const query = client.watchQuery<Data>({ query: DOWNLOADS, variables });
    const sub = query.subscribe(() => {});
    try {
      let result = await query.refetch();
      let fetches = 1;
      let inserted = false;
      while (result.data!.downloadsConnection.pageInfo.hasNextPage) {
        if (!inserted) {
          // Rows arrive between fetches: before the boundary (an offset page would repeat a row) and at the end.
          await t.prisma.download.createMany({
            data: ['A0', 'A1', 'Z9'].map((title) => ({ categoryId: cat, userId: ownerId, title })),
          });
          inserted = true;
        }
        result = await query.fetchMore({ variables: { after: result.data!.downloadsConnection.pageInfo.endCursor } });
        fetches++;
        expect(fetches).toBeLessThan(20);
      }
      const cached = client.readQuery<Data>({ query: DOWNLOADS, variables })!.downloadsConnection;
      const ids = cached.edges.map((e) => e.node.downloadId);
      expect(new Set(ids).size).toBe(ids.length);
      const late = await t.prisma.download.findMany({ where: { categoryId: cat, title: { in: ['A0', 'A1', 'Z9'] } } });
      // The original rows in order, then the row that arrived after the last page read; none of those that arrived
      // before the cursor (they belong to pages already read).
      expect(ids).toEqual([...original, late.find((d) => d.title === 'Z9')!.id]);
      expect(cached.totalCount).toBe(original.length + 3);
      // Normalised: one cache entry per download, keyed by its global id, nothing written by hand.
      const entries = Object.keys(client.cache.extract() as Record<string, unknown>).filter((k) =>
        k.startsWith('Download:'),
      );
      expect(entries.sort()).toEqual(cached.edges.map((e) => `Download:${e.node.id}`).sort());
    } finally {
      sub.unsubscribe();
      client.stop();
    }
  });
});
