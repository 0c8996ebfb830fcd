// The GraphQL face as front-end clients use it: Apollo Client 4 (normalised cache with no hand-written type
// policies, apollo-upload-client for files) and graphql-request (partial data), against a real server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApolloClient, type ApolloLink, HttpLink, InMemoryCache, gql } from '@apollo/client';
// @ts-expect-error apollo-upload-client ships JSDoc types only, not declarations TypeScript reads from node_modules
import UploadHttpLink from 'apollo-upload-client/UploadHttpLink.mjs';
import { GraphQLClient } from 'graphql-request';
import { buildSchema, isInterfaceType, isUnionType, type GraphQLSchema } from 'graphql';
import fs from 'node:fs';
import path from 'node:path';
import { forEachDatabase, startTestApp, type TestApp } from './helpers/app.js';

/** possibleTypes for Apollo, computed from the committed schema.graphql as a client build step would. */
function possibleTypesOf(schema: GraphQLSchema): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const type of Object.values(schema.getTypeMap())) {
    if (isInterfaceType(type) || isUnionType(type)) out[type.name] = schema.getPossibleTypes(type).map((t) => t.name);
  }
  return out;
}
const possibleTypes = possibleTypesOf(
  buildSchema(fs.readFileSync(path.resolve(import.meta.dirname, '../schema.graphql'), 'utf8')),
);

const PAGE = gql`
  query DownloadPage($downloadId: Int!) {
    download(downloadId: $downloadId) {
      id title
      category { id title }
      owner { id username }
      currentVersion { id versionString }
    }
    comments(downloadId: $downloadId, perPage: 10) { nodes { id message author { id username } } }
  }
`;

forEachDatabase((kind) => {
  let t: TestApp;
  let owner: { userId: number; key: string };
  let reader: { userId: number; key: string };
  let dl: number;
  let versionId: number;

  beforeAll(async () => {
    t = await startTestApp(kind, { commentFloodSeconds: 0 });
    owner = await t.user(`client_owner_${kind}`);
    reader = await t.user(`client_reader_${kind}`);
    const cat = (await t.rest('POST', '/api/mc-dm-categories/', { form: { title: 'Clients' } })).body.category
      .category_id;
    const d = (
      await t.rest('POST', '/api/mc-dm-downloads/', { key: owner.key, form: { category_id: cat, title: 'Cached' } })
    ).body.download;
    dl = d.download_id;
    versionId = d.current_version_id;
    for (const message of ['first', 'second'])
      await t.rest('POST', '/api/mc-dm-comments/', { key: reader.key, form: { download_id: dl, message } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const apollo = (key: string, link?: ApolloLink) =>
    new ApolloClient({
      link: link ?? new HttpLink({ uri: `${t.url}/graphql`, headers: { 'Forum-Api-Key': key } }),
      cache: new InMemoryCache({ possibleTypes }),
    });

  describe('Apollo Client 4', () => {
    it('normalises every entity by its id with no type policies written by hand', async () => {
      const client = apollo(owner.key);
      const { data } = await client.query({ query: PAGE, variables: { downloadId: dl } });
      expect((data as any).download.title).toBe('Cached');
      const cache = client.cache.extract() as Record<string, any>;
      const entities = Object.keys(cache).filter((k) => k !== 'ROOT_QUERY' && k !== 'ROOT_MUTATION');
      const typenames = new Set(entities.map((k) => k.split(':')[0]));
      expect([...typenames].sort()).toEqual(['Category', 'Comment', 'Download', 'User', 'Version']);
      // Nothing denormalised: every entity inside another is a reference.
      const embedded: string[] = [];
      const walk = (v: unknown, at: string, top: boolean) => {
        if (Array.isArray(v))
          v.forEach((x, i) => {
            walk(x, `${at}[${i}]`, false);
          });
        else if (v && typeof v === 'object') {
          if (!top && typeof (v as any).__typename === 'string' && typenames.has((v as any).__typename))
            embedded.push(at);
          for (const [k, x] of Object.entries(v)) walk(x, `${at}.${k}`, false);
        }
      };
      for (const [k, v] of Object.entries(cache)) walk(v, k, true);
      expect(embedded).toEqual([]);
      expect(cache.ROOT_QUERY[`download({"downloadId":${dl}})`]).toEqual({
        __ref: client.cache.identify({ __typename: 'Download', id: (data as any).download.id }),
      });
    });

    it('updates and deletes reach the cache through payloads alone', async () => {
      const client = apollo(owner.key);
      const { data } = await client.query({ query: PAGE, variables: { downloadId: dl } });
      const downloadId = (data as any).download.id;
      await client.mutate({
        mutation: gql`mutation($i: UpdateDownloadInput!) { updateDownload(input: $i) { download { id title } } }`,
        variables: { i: { downloadId: dl, title: 'Renamed' } },
      });
      const cached = client.readQuery({ query: PAGE, variables: { downloadId: dl } }) as any;
      expect(cached.download.title).toBe('Renamed');
      expect(cached.download.id).toBe(downloadId);

      const mod = apollo((await t.user(`client_mod_${kind}`, { isModerator: true })).key);
      const page = (await mod.query({ query: PAGE, variables: { downloadId: dl } })).data as any;
      const victim = page.comments.nodes[0];
      const r = await mod.mutate({
        mutation: gql`mutation($i: DeleteCommentInput!) { deleteComment(input: $i) { success deletedId } }`,
        variables: {
          i: { commentId: Number(Buffer.from(victim.id, 'base64url').toString().split(':')[1]), hard: true },
        },
      });
      const deletedId = (r.data as any).deleteComment.deletedId;
      expect(deletedId).toBe(victim.id);
      expect(mod.cache.evict({ id: mod.cache.identify({ __typename: 'Comment', id: deletedId }) })).toBe(true);
      await t.rest('PUT', `/api/mc-dm-downloads/${dl}/`, { key: owner.key, form: { title: 'Cached' } });
    });

    it('reads any entity through node(id) with fragments on the Node interface', async () => {
      const client = apollo(owner.key);
      const first = (await client.query({ query: PAGE, variables: { downloadId: dl } })).data as any;
      const { data } = await client.query({
        query: gql`query($id: ID!) { node(id: $id) { id ... on Download { title owner { username } } } }`,
        variables: { id: first.download.id },
      });
      expect((data as any).node).toMatchObject({
        __typename: 'Download',
        id: first.download.id,
        owner: { username: `client_owner_${kind}` },
      });
    });

    it('uploads a file with apollo-upload-client', async () => {
      const client = apollo(
        owner.key,
        new UploadHttpLink({ uri: `${t.url}/graphql`, headers: { 'Forum-Api-Key': owner.key } }),
      );
      const bytes = Buffer.from('uploaded by Apollo');
      const { data } = await client.mutate({
        mutation: gql`mutation($i: CreateFileInput!) { createFile(input: $i) { file { id filename fileSize version { id versionId } } } }`,
        variables: { i: { versionId, file: new File([bytes], 'apollo.txt', { type: 'text/plain' }) } },
      });
      expect((data as any).createFile.file).toMatchObject({
        filename: 'apollo.txt',
        fileSize: bytes.length,
        version: { versionId },
      });
      const res = await fetch(
        `${t.url}/api/mc-dm-files/${(await t.prisma.file.findFirstOrThrow({ where: { filename: 'apollo.txt' } })).id}/data/`,
        { headers: { 'Forum-Api-Key': owner.key } },
      );
      expect(Buffer.from(await res.arrayBuffer())).toEqual(bytes);
    });
  });

  describe('graphql-request', () => {
    it('receives partial data: a refused field is null with its error, the rest arrives', async () => {
      const client = new GraphQLClient(`${t.url}/graphql`, {
        headers: { 'Forum-Api-Key': reader.key },
        errorPolicy: 'all',
      });
      const comment = (await t.prisma.comment.findFirstOrThrow({ where: { downloadId: dl } })).id;
      const r = await client.rawRequest<any>(
        `query($c: Int!) { comment(commentId: $c) { message edits { oldMessage } } viewer { username } }`,
        { c: comment },
      );
      expect(r.data).toEqual({
        comment: { message: expect.any(String), edits: null },
        viewer: { username: `client_reader_${kind}` },
      });
      expect(r.errors?.map((e: any) => e.extensions.code)).toEqual(['do_not_have_permission']);
      expect(r.status).toBe(200);
    });
  });
});
