// The service's own pages, none of which needs a key: the landing page at /, the REST reference (/api/docs, Swagger
// UI served from node_modules, so it works offline) with its OpenAPI document (/api/openapi.json), GraphiQL's assets
// (the page itself is rendered by Yoga through renderGraphiQLPage), and a short 404 page for the forum's addresses
// (`view_url`s) explaining that they belong to the forum. Every page loads its scripts and styles as files from this
// origin: no inline script (see security-headers.ts for the policy).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { GraphQLSchema } from 'graphql';
import type { GraphiQLOptions, Plugin } from 'graphql-yoga';
import { buildOpenApi } from '../../rest-adapter/openapi.js';
import type { Route } from '../../rest-adapter/routes.js';
import { type Asset, assetResponse, withVersionedAddresses } from './static-assets.js';

const require = createRequire(import.meta.url);

/** The repository's root (the folder of package.json), wherever this file runs from (sources or a build). */
function projectRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json')) || !fs.existsSync(path.join(dir, 'public'))) {
    const up = path.dirname(dir);
    if (up === dir)
      throw new Error(`The service's public/ folder was not found above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
  return dir;
}

const HTML = 'text/html; charset=utf-8';
const CSS = 'text/css; charset=utf-8';
const JS = 'text/javascript; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';

/** Paths of the forum's pages (the `view_url`s): answered with a page that says so. */
const FORUM_PAGE = /^\/downloads(\/|$)/;

function loadAssets(root: string): Map<string, Asset> {
  const pub = (name: string) => fs.readFileSync(path.join(root, 'public', name));
  const swagger = path.dirname(require.resolve('swagger-ui-dist/package.json'));
  const assets = new Map<string, Asset>([
    ['/', { body: pub('index.html'), type: HTML }],
    ['/site.css', { body: pub('site.css'), type: CSS }],
    ['/api/docs', { body: pub('api-docs.html'), type: HTML }],
    ['/api/docs/api-docs.js', { body: pub('api-docs.js'), type: JS }],
    ['/api/docs/api-docs.css', { body: pub('api-docs.css'), type: CSS }],
    ['/api/docs/swagger-ui-bundle.js', { body: fs.readFileSync(path.join(swagger, 'swagger-ui-bundle.js')), type: JS }],
    ['/api/docs/swagger-ui.css', { body: fs.readFileSync(path.join(swagger, 'swagger-ui.css')), type: CSS }],
    ['/graphiql/start.js', { body: pub('graphiql-start.js'), type: JS }],
    ['/graphiql/key-bar.css', { body: pub('graphiql-key-bar.css'), type: CSS }],
  ]);
  // Pages name their files by versioned addresses, which browsers keep without asking again.
  for (const asset of assets.values()) {
    if (asset.type === HTML) asset.body = withVersionedAddresses(asset.body.toString('utf8'), assets);
  }
  return assets;
}

/** The bundled GraphiQL's version: its files' addresses carry it, so a new one is fetched when it changes. */
const graphiqlVersion = (): string =>
  (require('@graphql-yoga/render-graphiql/package.json') as { version: string }).version;

let bundled: Promise<Map<string, Asset>> | undefined;

/**
 * Yoga's bundled GraphiQL (megabytes of JavaScript held as strings): imported when one of its files is first asked
 * for, not at start, where loading it took a tenth of the start-up time.
 */
function graphiqlAssets(): Promise<Map<string, Asset>> {
  bundled ??= import('@graphql-yoga/render-graphiql/graphiql').then((graphiql) => {
    const dataUri = /^data:[^;]+;base64,(.*)$/.exec(graphiql.favicon);
    // Addressed by the package's version (hashing megabytes at start would cost more than it tells).
    const version = graphiqlVersion();
    return new Map<string, Asset>([
      ['/graphiql/graphiql.js', { body: graphiql.js, type: JS, version }],
      ['/graphiql/graphiql.css', { body: graphiql.css, type: CSS, version }],
      // start.js asks for Monaco's workers with the version its graphiql.js address carries
      ['/graphiql/worker-editor.js', { body: graphiql.editorWorkerService, type: JS, version }],
      ['/graphiql/worker-json.js', { body: graphiql.jsonWorker, type: JS, version }],
      ['/graphiql/worker-graphql.js', { body: graphiql.graphqlWorker, type: JS, version }],
      ...(dataUri
        ? [
            ['/graphiql/favicon.ico', { body: Buffer.from(dataUri[1]!, 'base64'), type: 'image/x-icon', version }] as [
              string,
              Asset,
            ],
          ]
        : []),
    ]);
  });
  return bundled;
}

let template: string | undefined;

/** Yoga's GraphiQL renderer: the bundled GraphiQL, its options in a JSON data block, its scripts as files. */
export function renderGraphiQLPage(options: GraphiQLOptions): string {
  template ??= withVersionedAddresses(
    fs.readFileSync(path.join(projectRoot(), 'public', 'graphiql.html'), 'utf8'),
    loadAssets(projectRoot()),
  ).replace(/(href|src)="(\/graphiql\/(?:graphiql\.(?:js|css)|favicon\.ico))"/g, `$1="$2?v=${graphiqlVersion()}"`);
  const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  // `<` escaped so that no value can close the data block.
  const json = JSON.stringify(options ?? {}).replace(/</g, '\\u003c');
  return template.replace('{{title}}', escapeHtml(options?.title ?? 'GraphiQL')).replace('{{options}}', () => json);
}

export function pagesPlugin(opts: { schema: GraphQLSchema; routes: Route[] }): Plugin {
  const root = projectRoot();
  const assets = loadAssets(root);
  const version = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
  let openapi: Asset | undefined;
  const forumPage = fs.readFileSync(path.join(root, 'public', 'forum-page.html'));

  return {
    onRequest({ request, url, endResponse, fetchAPI }) {
      let pathname = url.pathname;
      if (pathname === '/api/docs/') pathname = '/api/docs';
      const forum = FORUM_PAGE.test(pathname);
      const answer = async (asset: Asset | undefined) => {
        if (!asset && !forum) return;
        if (request.method !== 'GET' && request.method !== 'HEAD') {
          endResponse(
            new fetchAPI.Response(
              JSON.stringify({
                errors: [
                  {
                    code: 'method_not_allowed',
                    message: `${request.method} is not allowed here; use GET.`,
                    params: { allowed: ['GET', 'HEAD'] },
                  },
                ],
              }),
              {
                status: 405,
                headers: { 'content-type': JSON_TYPE, allow: 'GET, HEAD' },
              },
            ),
          );
          return;
        }
        if (forum) {
          endResponse(
            new fetchAPI.Response(request.method === 'HEAD' ? null : (forumPage as unknown as BodyInit), {
              status: 404,
              headers: { 'content-type': HTML },
            }),
          );
          return;
        }
        endResponse(await assetResponse(request, url, asset!, fetchAPI.Response));
      };
      if (pathname === '/api/openapi.json') {
        openapi ??= {
          body: JSON.stringify(buildOpenApi({ schema: opts.schema, routes: opts.routes, version })),
          type: JSON_TYPE,
        };
        return answer(openapi);
      }
      const asset = assets.get(pathname);
      // Only GraphiQL's own files wait for its bundle; every other request goes on synchronously.
      if (!asset && pathname.startsWith('/graphiql/'))
        return graphiqlAssets().then((bundle) => answer(bundle.get(pathname)));
      if (!asset && !forum) return;
      return answer(asset);
    },
  };
}

/**
 * The answer for an address nothing else served (register last): JSON `endpoint_not_found` under /graphql/ (under
 * /api/ the REST adapter answers its own), a small HTML page anywhere else, for the browsers that end up there.
 */
export function notFoundPlugin(): Plugin {
  const page = fs.readFileSync(path.join(projectRoot(), 'public', 'not-found.html'));
  return {
    onRequest({ request, url, endResponse, fetchAPI }) {
      const pathname = url.pathname;
      if (pathname === '/graphql' || pathname.startsWith('/api/')) return;
      const head = request.method === 'HEAD';
      if (pathname.startsWith('/graphql/')) {
        const body = JSON.stringify({
          errors: [
            {
              code: 'endpoint_not_found',
              message: `No endpoint at ${pathname}: GraphQL is served at /graphql, the REST API under /api/.`,
              params: { path: pathname },
            },
          ],
        });
        endResponse(new fetchAPI.Response(head ? null : body, { status: 404, headers: { 'content-type': JSON_TYPE } }));
        return;
      }
      endResponse(
        new fetchAPI.Response(head ? null : (page as unknown as BodyInit), {
          status: 404,
          headers: { 'content-type': HTML, 'cache-control': 'no-cache' },
        }),
      );
    },
  };
}
