// The authorization matrix: every GraphQL root field and every REST route × key type × scope set × object state,
// answered as test/authz/expectations.ts says. A field or route the table does not cover fails the test.
import { describe, expect, it } from 'vitest';
import { routes } from '../rest-adapter/routes.js';
import { requirementsOf } from '../src/graphql/requirements.js';
import { ANY_WRITE, fields, restRoutes } from './authz/expectations.js';
import { matrixTests, rootFields } from './authz/matrix.js';

const routeKeys = () => [...routes.map((r) => `${r.method} ${r.path}`), 'GET /api/mc-dm-files/:file_id/data/'];

/** The root field a route's operation runs. */
function fieldOfRoute(key: string): string {
  const route = routes.find((r) => `${r.method} ${r.path}` === key);
  if (!route) return 'fileData';
  const op = route.document.definitions.find((d: any) => d.kind === 'OperationDefinition') as any;
  return op.selectionSet.selections[0].name.value;
}

describe('the authorization table covers the whole surface', () => {
  it('every GraphQL root field and mutation has a row, and every row is a field', () => {
    const names = [...rootFields().keys()];
    expect(
      names.filter((n) => !(n in fields)),
      'root fields without a row in test/authz/expectations.ts',
    ).toEqual([]);
    expect(
      Object.keys(fields).filter((n) => !names.includes(n)),
      'rows for fields the schema no longer has',
    ).toEqual([]);
  });
  it('every REST route (and the file data route) has a row, following the field its operation runs', () => {
    expect(
      routeKeys().filter((k) => !(k in restRoutes)),
      'REST routes without a row in test/authz/expectations.ts',
    ).toEqual([]);
    expect(
      Object.keys(restRoutes).filter((k) => !routeKeys().includes(k)),
      'rows for routes that no longer exist',
    ).toEqual([]);
    for (const k of routeKeys()) expect(restRoutes[k], k).toBe(fieldOfRoute(k));
  });
  it("every row's scopes are the scopes the field declares as data (which the OpenAPI document reads)", () => {
    const disagree: string[] = [];
    for (const [name, field] of rootFields()) {
      const row = fields[name];
      // node and nodes need the read scope of the type each id names, checked as the object is fetched.
      if (!row || name === 'node' || name === 'nodes') continue;
      const declared = requirementsOf(field);
      const table = row.scopes === ANY_WRITE ? 'any write scope' : [...row.scopes].sort().join(' ');
      const data = declared.anyWrite ? 'any write scope' : [...declared.scopes].sort().join(' ');
      if (table !== data) disagree.push(`${name}: table "${table}", declared "${data}"`);
    }
    expect(disagree).toEqual([]);
  });
  it('a description that names scopes names exactly the declared ones, so the prose cannot drift from the data', () => {
    const drift: string[] = [];
    for (const [name, field] of rootFields()) {
      const needs = /Needs ([^.]*)\./.exec(field.description ?? '')?.[1];
      if (needs === undefined) continue;
      const named = [...needs.replace(/\([^)]*\)/g, '').matchAll(/mc_dm_\w+:\w+/g)].map((m) => m[0]).sort();
      const declared = requirementsOf(field);
      if (named.join(' ') !== [...declared.scopes].sort().join(' ')) drift.push(`${name}: "${needs}"`);
      if (declared.anyWrite && !/any write scope/.test(needs)) drift.push(`${name}: "${needs}" omits any write scope`);
    }
    expect(drift).toEqual([]);
  });
});

// The matrix itself, on the embedded database here; on the PostgreSQL server in test/authz-matrix-postgres.test.ts,
// a file of its own so that it runs beside this one.
describe('embedded PGlite', () => matrixTests('pglite'));
