// The Prisma plugin's query plans are kept per document and variables (src/graphql/plan-cache.ts), which is right only
// while no field's `select` or `query` callback reads the request context: a plan kept for one visitor would then
// serve another. A callback is (args, context, …): one that declares a second parameter fails this test.
import { describe, expect, it } from 'vitest';
import { isObjectType } from 'graphql';
import { schema } from '../src/modules/index.js';

describe('kept query plans', () => {
  it("no field's select or query callback takes the context", () => {
    const callbacks: string[] = [];
    const readingContext: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (!isObjectType(type) || type.name.startsWith('__')) continue;
      const typeSelect = (type.extensions as { pothosOptions?: { select?: unknown } }).pothosOptions?.select;
      if (typeof typeSelect === 'function') {
        callbacks.push(`${type.name} select`);
        if (typeSelect.length > 1) readingContext.push(`${type.name} select`);
      }
      for (const field of Object.values(type.getFields())) {
        const options = (field.extensions as { pothosOptions?: Record<string, unknown> }).pothosOptions ?? {};
        for (const key of ['select', 'query']) {
          const fn = options[key];
          if (typeof fn !== 'function') continue;
          callbacks.push(`${type.name}.${field.name} ${key}`);
          if (fn.length > 1) readingContext.push(`${type.name}.${field.name} ${key}`);
        }
      }
    }
    // The check sees the schema's callbacks (one today), so that it cannot pass by reading nothing.
    expect(callbacks.length).toBeGreaterThan(0);
    expect(readingContext, 'callbacks that take the context: see src/graphql/plan-cache.ts').toEqual([]);
  });
});
