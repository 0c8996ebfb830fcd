// Every REST route runs a GraphQL document compiled in at build time; the service does not validate them when it
// starts (it would slow every start), so this test does: a document that no longer matches the schema fails here.
import { describe, expect, it } from 'vitest';
import { schema } from '../src/modules/index.js';
import { routes } from '../rest-adapter/routes.js';
import { compileRoutes, routeProblems } from '../rest-adapter/plugin.js';

describe('REST route documents', () => {
  it('every operation is valid against the schema and has one root field', () => {
    expect(routes.length).toBeGreaterThan(10);
    expect(routeProblems(schema, routes)).toEqual([]);
    expect(compileRoutes(schema, routes).every((r) => r.rootField)).toBe(true);
  });

  it('a document that does not match the schema is reported with its route', async () => {
    const { parse } = await import('graphql');
    const broken = { ...routes[0]!, document: parse('query { noSuchField }') };
    expect(routeProblems(schema, [broken])).toEqual([
      expect.stringMatching(
        new RegExp(`^REST route ${broken.method} ${broken.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .*noSuchField`),
      ),
    ]);
  });
});
