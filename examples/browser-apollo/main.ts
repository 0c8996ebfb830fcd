// Apollo Client 4 in a browser page served from another origin than the service (the service lists that origin in
// CORS_ORIGINS). The service's address and an API key come from the page's address:
//   http://127.0.0.1:8080/#base=http://127.0.0.1:3000&key=dm_…
// It shows the categories, then the rate-limit headers the service lets the page read.
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';

const params = new URLSearchParams(location.hash.slice(1));
const base = params.get('base') ?? 'http://127.0.0.1:3000';
const key = params.get('key') ?? '';
const status = document.getElementById('status')!;
const list = document.getElementById('categories')!;

let remaining: string | null = null;
const client = new ApolloClient({
  cache: new InMemoryCache(),
  link: new HttpLink({
    uri: `${base}/graphql`,
    headers: { 'Forum-Api-Key': key },
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      remaining = res.headers.get('RateLimit-Remaining');
      return res;
    },
  }),
});

const CATEGORIES = gql`
  query BrowserCategories {
    viewer {
      userId
      username
    }
    categories(perPage: 100) {
      nodes {
        id
        title
      }
    }
  }
`;

try {
  const { data } = await client.query<{
    viewer: { username: string };
    categories: { nodes: { id: string; title: string }[] };
  }>({ query: CATEGORIES });
  for (const c of data?.categories.nodes ?? []) {
    const li = document.createElement('li');
    li.textContent = c.title;
    list.append(li);
  }
  status.textContent = `Signed in as ${data?.viewer.username}; ${data?.categories.nodes.length} categories; RateLimit-Remaining: ${remaining ?? 'not readable'}`;
  status.dataset.state = 'ready';
} catch (err) {
  status.textContent = `Failed: ${(err as Error).message}`;
  status.dataset.state = 'failed';
}
