// The REST adapter's generic field → variable rule, against a small schema.
import { describe, expect, it } from 'vitest';
import { buildSchema, parse, type OperationDefinitionNode } from 'graphql';
import { addPairs, toVariables, type RawFields } from '../rest-adapter/inputs.js';
import { envelope, snakeKeys } from '../rest-adapter/envelope.js';

const schema = buildSchema(`
  enum Color { RED DARK_BLUE }
  input ThingInput { thingId: Int! title: String! tags: [String!] isPrimary: Boolean color: Color }
  type Query { things(page: Int, perPage: Int, color: Color): Int }
  type Mutation { createThing(input: ThingInput!): Int }
`);
const op = (src: string) => parse(src).definitions[0] as OperationDefinitionNode;
const LIST = op(
  `query($page: Int, $perPage: Int, $color: Color, $full: Boolean!) { things(page: $page, perPage: $perPage, color: $color) }`,
);
const CREATE = op(`mutation($input: ThingInput!) { createThing(input: $input) }`);
const fields = (pairs: [string, string][]): RawFields => {
  const m: RawFields = new Map();
  addPairs(m, pairs);
  return m;
};
const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e: any) {
    return [e.extensions.code, e.extensions.params];
  }
  return null;
};

describe('toVariables', () => {
  it('maps snake_case fields to variables and with=full to $full', () => {
    expect(
      toVariables(
        schema,
        LIST,
        fields([
          ['per_page', '5'],
          ['page', '2'],
          ['color', 'dark_blue'],
          ['with', 'full'],
        ]),
      ),
    ).toEqual({ page: 2, perPage: 5, color: 'DARK_BLUE', full: true });
    expect(toVariables(schema, LIST, fields([]))).toEqual({ full: false });
  });

  it('gathers input-object fields from the flat field set, with name[] lists and 1/0 booleans', () => {
    const v = toVariables(
      schema,
      CREATE,
      fields([
        ['thing_id', '3'],
        ['title', ''],
        ['tags[]', 'a'],
        ['tags[]', 'b'],
        ['is_primary', '0'],
      ]),
    );
    expect(v).toEqual({ input: { thingId: 3, title: '', tags: ['a', 'b'], isPrimary: false } });
  });

  it('accepts JSON-typed values', () => {
    const raw: RawFields = new Map<string, any>([
      ['thing_id', 4],
      ['title', 'x'],
      ['tags', ['z']],
      ['is_primary', true],
    ]);
    expect(toVariables(schema, CREATE, raw)).toEqual({
      input: { thingId: 4, title: 'x', tags: ['z'], isPrimary: true },
    });
  });

  it('reports every missing required field at once', () => {
    expect(codeOf(() => toVariables(schema, CREATE, fields([])))).toEqual([
      'required_input_missing',
      { missing: ['thing_id', 'title'] },
    ]);
  });

  it('refuses malformed values naming the field', () => {
    for (const [pairs, field] of [
      [[['page', '-1']], 'page'],
      [[['page', '1.5']], 'page'],
      [[['page', '99999999999']], 'page'],
      [[['color', 'green']], 'color'],
    ] as [[string, string][], string][]) {
      expect(codeOf(() => toVariables(schema, LIST, fields(pairs)))).toEqual(['invalid_input', { field }]);
    }
    expect(
      codeOf(() =>
        toVariables(
          schema,
          CREATE,
          fields([
            ['thing_id', '1'],
            ['title', 't'],
            ['is_primary', 'yes'],
          ]),
        ),
      ),
    ).toEqual(['invalid_input', { field: 'is_primary' }]);
  });

  it('refuses JSON objects that cannot be turned into text (no toString) as invalid input, not a crash', () => {
    const hostile = { toString: null, valueOf: null };
    for (const [field, op] of [
      ['thing_id', CREATE],
      ['is_primary', CREATE],
      ['color', CREATE],
      ['page', LIST],
      ['color', LIST],
    ] as const) {
      const raw: RawFields = new Map<string, any>([
        ['thing_id', 1],
        ['title', 't'],
        [field, hostile],
      ]);
      expect(
        codeOf(() => toVariables(schema, op, raw)),
        field,
      ).toEqual(['invalid_input', { field }]);
    }
  });
});

describe('envelopes', () => {
  it('snake-cases keys but keeps capitalised embedded objects', () => {
    expect(snakeKeys({ downloadId: 1, coverUrl: null, Category: { categoryId: 2 }, CurrentVersion: null })).toEqual({
      download_id: 1,
      cover_url: null,
      Category: { category_id: 2 },
    });
  });

  it('wraps single, list and success results', () => {
    expect(envelope('thing', { thing: { thingId: 1 } })).toEqual({ thing: { thing_id: 1 } });
    expect(envelope('thing', { thingId: 1 })).toEqual({ thing: { thing_id: 1 } });
    expect(envelope('things', { nodes: [{ thingId: 1 }], pagination: { perPage: 20, lastPage: 1 } })).toEqual({
      things: [{ thing_id: 1 }],
      pagination: { per_page: 20, last_page: 1 },
    });
    expect(envelope('success', { success: true })).toEqual({ success: true });
  });
});
