// The peer in the benchmark: PostGraphile 4 serving the same PostgreSQL database the service uses, as someone who
// deploys it for speed would run it — library mode on a bare node:http server, a pool the size of the service's,
// no GraphiQL, no schema watching, no query log, JSON columns as JSON (bench/README.md lists the options and why).
// `npm run bench -- --database-url …` starts it as a child process with DATABASE_URL, PORT and DATABASE_POOL_SIZE.
import http from 'node:http';
import Module, { createRequire } from 'node:module';
import path from 'node:path';
import pg from 'pg';

// PostGraphile 4 needs graphql 15 while the service uses 16, so npm installs graphql 15 (and graphile-build) more
// than once: beside postgraphile, beside graphile-build-pg, and packages of its tree hoisted to the top
// (graphql-parse-resolve-info) find the service's graphql 16. More than one graphql in one schema breaks its type
// checks ("Unexpected input type: Int!"). Nothing else runs in this process, so every module in it is made to load
// the graphql and graphile-build that sit beside postgraphile.
const require = createRequire(import.meta.url);
const home = path.dirname(require.resolve('postgraphile/package.json'));
const shared = /^(graphql|graphile-build)(\/|$)/;
const modules = Module as unknown as {
  _resolveFilename(request: string, parent: unknown, ...rest: unknown[]): string;
  _nodeModulePaths(dir: string): string[];
};
const resolve = modules._resolveFilename;
const besidePostgraphile = {
  id: home,
  filename: path.join(home, 'package.json'),
  paths: modules._nodeModulePaths(home),
};
modules._resolveFilename = function (request, parent, ...rest) {
  return resolve.call(this, request, shared.test(request) ? besidePostgraphile : parent, ...rest);
};
const { postgraphile } = await import('postgraphile');

const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.DATABASE_POOL_SIZE ?? 10),
});
const middleware = postgraphile(pool, 'public', {
  graphiql: false,
  watchPg: false,
  disableQueryLog: true,
  dynamicJson: true,
  setofFunctionsContainNulls: false,
  ignoreRBAC: false,
  legacyRelations: 'omit',
  enableQueryBatching: true,
  extendedErrors: ['errcode'],
  showErrorStack: false,
  retryOnInitFail: false, // the harness wants to fail at once
});
const server = http.createServer(middleware);
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('peer ready\n'));
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
