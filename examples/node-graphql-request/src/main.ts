// A small Node client: graphql-request with the documents typed by Code Generator's client preset. It lists the
// categories, creates one and reads it back through its Node id. With PERSISTED=1 it sends only each document's
// id (`sha256:<hex>`), as a front-end built for a service that runs trusted documents only does.
//
//   BASE=http://127.0.0.1:3000 KEY=dm_… npx tsx src/main.ts
import { GraphQLClient } from 'graphql-request';
import { print } from 'graphql';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { graphql } from './gql/index.js';

const Categories = graphql(`
  query ExampleCategories($perPage: Int!) {
    categories(perPage: $perPage) {
      nodes {
        categoryId
        title
      }
      pagination {
        total
      }
    }
  }
`);

const CreateCategory = graphql(`
  mutation ExampleCreateCategory($title: String!) {
    createCategory(input: { title: $title }) {
      category {
        id
        categoryId
        title
      }
    }
  }
`);

const ByNode = graphql(`
  query ExampleNode($id: ID!) {
    node(id: $id) {
      ... on Category {
        title
      }
    }
  }
`);

const base = process.env.BASE ?? 'http://127.0.0.1:3000';
const key = process.env.KEY;
if (!key) throw new Error('Set KEY to an API key with the category scopes (the bootstrap key will do).');
const persisted = process.env.PERSISTED === '1';

/** How each persisted document went (PERSISTED=1): method and the start of its id. */
const sent: string[] = [];

const client = new GraphQLClient(`${base}/graphql`, { headers: { 'Forum-Api-Key': key } });

/**
 * Runs a typed document: the text, or with PERSISTED=1 its id alone (the preset puts it in `__meta__.hash`), a query
 * by GET (`?documentId=…&variables=…`), a mutation by POST.
 */
async function run<R, V extends Record<string, unknown>>(document: TypedDocumentNode<R, V>, variables: V): Promise<R> {
  if (!persisted) return client.request<R>(print(document), variables);
  const hash = (document as { __meta__?: { hash?: string } }).__meta__?.hash;
  if (!hash) throw new Error('The document has no persisted id: run graphql-codegen first.');
  const isQuery = document.definitions.some((d) => d.kind === 'OperationDefinition' && d.operation === 'query');
  const url = new URL(`${base}/graphql`);
  const init: RequestInit = { headers: { 'Forum-Api-Key': key! } };
  if (isQuery) {
    url.searchParams.set('documentId', hash);
    url.searchParams.set('variables', JSON.stringify(variables));
  } else {
    Object.assign(init, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'Forum-Api-Key': key! },
      body: JSON.stringify({ documentId: hash, variables }),
    });
  }
  sent.push(`${isQuery ? 'GET' : 'POST'} ${hash.slice(0, 'sha256:'.length + 8)}…`);
  const res = await fetch(url, init);
  const body = (await res.json()) as { data?: R; errors?: { message: string }[] };
  if (!body.data) throw new Error(body.errors?.map((e) => e.message).join('; ') ?? `HTTP ${res.status}`);
  return body.data;
}

const created = await run(CreateCategory, { title: `Example ${persisted ? 'persisted' : 'plain'}` });
const category = created.createCategory?.category;
if (!category) throw new Error('createCategory returned no category');
const list = (await run(Categories, { perPage: 100 })).categories;
if (!list) throw new Error('categories returned nothing');
const again = await run(ByNode, { id: category.id });
console.log(
  JSON.stringify({
    created: category.title,
    listed: list.nodes.some((c) => c.categoryId === category.categoryId),
    total: list.pagination.total,
    byNode: again.node && 'title' in again.node ? again.node.title : null,
    ...(persisted ? { sent } : {}),
  }),
);
