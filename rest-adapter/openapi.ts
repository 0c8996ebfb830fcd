// The OpenAPI 3.1 description of the REST face, generated from what serves it: the route table, each route's
// GraphQL document and the schema. Parameters are the operation's variables (and the fields of an input-object
// variable) under the snake_case names inputs.ts maps them from; response envelopes follow the document's
// selections the way envelope.ts renames them; descriptions are the schema's; error statuses come from
// src/errors.ts. Nothing here is written by hand per route, so the document cannot drift from the adapter.
import {
  getNamedType,
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  isCompositeType,
  isInterfaceType,
  Kind,
  typeFromAST,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { ERROR_CODES } from '../src/error-codes.js';
import { statusOf } from '../src/errors.js';
import { MAX_INT } from '../src/input/numbers.js';
import { toSnake } from './inputs.js';
import type { Route } from './routes.js';
import { requirementsOf } from '../src/graphql/requirements.js';

type Json = Record<string, unknown>;

const DATA_ROUTE = '/api/mc-dm-files/{file_id}/data/';

const ARTICLE_VERBS = new Set(['Get', 'Create', 'Update', 'Delete', 'Restore', 'Approve', 'Reject', 'Resolve']);

/**
 * What a route does, in a few words, from its operation's name: `ListDownloads` → "List downloads",
 * `GetDownload` → "Get a download" (a row's own `summary` wins).
 */
export function summaryOf(operationName: string): string {
  const [verb, ...rest] = operationName.split(/(?=[A-Z])/);
  if (!verb) return '';
  const object = rest.join(' ').toLowerCase();
  if (!object) return verb;
  const article = ARTICLE_VERBS.has(verb) && !object.endsWith('s') ? (/^[aeiou]/.test(object) ? 'an ' : 'a ') : '';
  return `${verb} ${article}${object}`;
}

/** `/api/mc-dm-files/:file_id/` → `/api/mc-dm-files/{file_id}/` */
export const openApiPath = (path: string) => path.replace(/:([a-z_]+)/g, '{$1}');

function scalarSchema(type: GraphQLNamedType, input: boolean, idLike: boolean): Json {
  if (type instanceof GraphQLEnumType) {
    return { type: 'string', enum: type.getValues().map((v) => v.name.toLowerCase()) };
  }
  switch (type.name) {
    case 'Int':
      return input
        ? { type: 'integer', minimum: idLike ? 1 : 0, maximum: MAX_INT }
        : { type: 'integer', format: 'int32' };
    case 'Long':
      return input ? { type: 'integer', minimum: 0 } : { type: 'integer', format: 'int64' };
    case 'Float':
      return { type: 'number' };
    case 'Boolean':
      return { type: 'boolean' };
    case 'DateTime':
      return { type: 'string', format: 'date-time' };
    case 'Upload':
      return { type: 'string', format: 'binary' };
    default:
      return { type: 'string' };
  }
}

/** A GraphQL input type as a JSON Schema (REST values: enums lower-case, booleans 1/0 or true/false). */
function inputSchema(type: GraphQLInputType, description: string | null | undefined, idLike: boolean): Json {
  const base = type instanceof GraphQLNonNull ? type.ofType : type;
  let schema: Json;
  if (base instanceof GraphQLList) schema = { type: 'array', items: inputSchema(base.ofType, undefined, idLike) };
  else schema = scalarSchema(base as GraphQLNamedType, true, idLike);
  if (description) schema.description = description;
  return schema;
}

function withNull(schema: Json): Json {
  if (typeof schema.type === 'string') return { ...schema, type: [schema.type, 'null'] };
  if (schema.$ref) return { oneOf: [schema, { type: 'null' }] };
  return schema;
}

/** A selection set as the JSON Schema of what envelope.ts makes of it. */
function selectionSchema(
  schema: GraphQLSchema,
  type: GraphQLNamedType,
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  into: { properties: Json; required: Set<string> },
  verboseOnly: boolean,
): void {
  for (const sel of set.selections) {
    const verbose = verboseOnly || Boolean(sel.directives?.some((d) => d.name.value === 'include'));
    if (sel.kind === Kind.FIELD) {
      if (!(type instanceof GraphQLObjectType) && !isInterfaceType(type)) continue;
      const field = type.getFields()[sel.name.value] as GraphQLField<unknown, unknown> | undefined;
      if (!field) continue;
      const key = sel.alias?.value ?? sel.name.value;
      const capital = /^[A-Z]/.test(key);
      const name = capital ? key : toSnake(key);
      let s = outputSchema(schema, field.type, sel.selectionSet, fragments);
      const parts = [field.description ?? ''];
      if (verbose) parts.push('Only with `with=full`.');
      if (capital) parts.push('Left out when null.');
      const description = parts.filter(Boolean).join(' ');
      if (description) s = s.$ref ? { allOf: [s], description } : { ...s, description };
      into.properties[name] = s;
      if (!verbose && !capital) into.required.add(name);
    } else {
      const frag = sel.kind === Kind.FRAGMENT_SPREAD ? fragments.get(sel.name.value) : sel;
      if (!frag) continue;
      const cond = frag.typeCondition ? schema.getType(frag.typeCondition.name.value) : type;
      if (cond) selectionSchema(schema, cond, frag.selectionSet, fragments, into, verbose);
    }
  }
}

function outputSchema(
  schema: GraphQLSchema,
  type: GraphQLOutputType,
  set: SelectionSetNode | undefined,
  fragments: Map<string, FragmentDefinitionNode>,
): Json {
  if (type instanceof GraphQLNonNull) return outputSchemaNonNull(schema, type.ofType, set, fragments);
  return withNull(outputSchemaNonNull(schema, type, set, fragments));
}

function outputSchemaNonNull(
  schema: GraphQLSchema,
  type: GraphQLOutputType,
  set: SelectionSetNode | undefined,
  fragments: Map<string, FragmentDefinitionNode>,
): Json {
  if (type instanceof GraphQLList) return { type: 'array', items: outputSchema(schema, type.ofType, set, fragments) };
  const named = getNamedType(type);
  if (set && isCompositeType(named)) {
    const into = { properties: {} as Json, required: new Set<string>() };
    selectionSchema(schema, named, set, fragments, into, false);
    return { type: 'object', properties: into.properties, required: [...into.required] };
  }
  return scalarSchema(named, false, false);
}

export interface OpenApiOptions {
  schema: GraphQLSchema;
  routes: Route[];
  /** The server URL shown to clients (BASE_URL). */
  serverUrl?: string;
  version?: string;
}

function rootFieldOf(schema: GraphQLSchema, operation: OperationDefinitionNode) {
  const root = operation.operation === 'mutation' ? schema.getMutationType()! : schema.getQueryType()!;
  const sel = operation.selectionSet.selections[0];
  if (!sel || sel.kind !== Kind.FIELD) throw new Error(`${operation.name?.value}: no root field`);
  return { sel, field: root.getFields()[sel.name.value]! };
}

function errorResponses(): Json {
  const byStatus = new Map<number, string[]>();
  for (const code of Object.keys(ERROR_CODES)) {
    const status = statusOf(code);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Json = {};
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[`Error${status}`] = {
      description: `Refused. Codes: ${codes.map((c) => `\`${c}\` (${ERROR_CODES[c]})`).join('; ')}.`,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Errors' } } },
    };
  }
  return out;
}

function errorTable(): string {
  const rows = Object.entries(ERROR_CODES).map(([code, meaning]) => `| ${statusOf(code)} | \`${code}\` | ${meaning} |`);
  return ['| status | code | meaning |', '|---|---|---|', ...rows].join('\n');
}

export function buildOpenApi({ schema, routes, serverUrl, version = '1.0.0' }: OpenApiOptions): Json {
  const paths: Record<string, Json> = {};
  const errorStatuses = [...new Set(Object.keys(ERROR_CODES).map(statusOf))].sort();

  for (const route of routes) {
    const doc = route.document as DocumentNode;
    const fragments = new Map(
      doc.definitions
        .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
        .map((f) => [f.name.value, f]),
    );
    const operation = doc.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
    const { sel, field } = rootFieldOf(schema, operation);
    // Which root-field argument each variable feeds: its description documents the parameter.
    const argOfVariable = new Map<string, string | null | undefined>();
    for (const a of sel.arguments ?? []) {
      if (a.value.kind === Kind.VARIABLE)
        argOfVariable.set(a.value.name.value, field.args.find((x) => x.name === a.name.value)?.description);
    }
    // A variable that only switches a field of the answer on (`facets @include(if: $facets)`) is documented by it.
    const answer = getNamedType(field.type);
    for (const s of sel.selectionSet?.selections ?? []) {
      if (s.kind !== Kind.FIELD || !('getFields' in answer)) continue;
      for (const d of s.directives ?? []) {
        const on = d.arguments?.find((a) => a.name.value === 'if')?.value;
        if (d.name.value !== 'include' || on?.kind !== Kind.VARIABLE || argOfVariable.has(on.name.value)) continue;
        const description = answer.getFields()[s.name.value]?.description;
        argOfVariable.set(
          on.name.value,
          `1 adds \`${toSnake(s.name.value)}\` to the answer${description ? `: ${description}` : '.'}`,
        );
      }
    }
    const pathParams = [...route.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1]!);
    const fields: { name: string; type: GraphQLInputType; description?: string | null; required: boolean }[] = [];
    let verbose = false;
    for (const def of operation.variableDefinitions ?? []) {
      const name = def.variable.name.value;
      const type = typeFromAST(schema, def.type as never) as GraphQLInputType;
      if (name === 'full') {
        verbose = true;
        continue;
      }
      const base = type instanceof GraphQLNonNull ? type.ofType : type;
      if (base instanceof GraphQLInputObjectType) {
        for (const f of Object.values(base.getFields())) {
          fields.push({
            name: toSnake(f.name),
            type: f.type,
            description: f.description,
            required: f.type instanceof GraphQLNonNull && f.defaultValue === undefined,
          });
        }
      } else {
        fields.push({
          name: toSnake(name),
          type,
          description: argOfVariable.get(name),
          required: type instanceof GraphQLNonNull && !def.defaultValue,
        });
      }
    }
    const idLike = (f: { name: string; required: boolean }) => f.required && f.name.endsWith('_id');
    const parameters: Json[] = [];
    for (const p of pathParams) {
      const f = fields.find((x) => x.name === p);
      if (!f)
        throw new Error(
          `${route.method} ${route.path}: the path segment :${p} is not a variable of ${operation.name?.value}.`,
        );
      parameters.push({
        name: p,
        in: 'path',
        required: true,
        schema: inputSchema(f.type, undefined, true),
        ...(f.description ? { description: f.description } : {}),
      });
    }
    const rest = fields.filter((f) => !pathParams.includes(f.name));
    const inQuery = route.method === 'GET' || route.method === 'DELETE';
    if (inQuery) {
      for (const f of rest) {
        const list = (f.type instanceof GraphQLNonNull ? f.type.ofType : f.type) instanceof GraphQLList;
        parameters.push({
          name: list ? `${f.name}[]` : f.name,
          in: 'query',
          required: f.required,
          schema: inputSchema(f.type, undefined, idLike(f)),
          ...(f.description ? { description: f.description } : {}),
        });
      }
    }
    if (verbose) {
      parameters.push({
        name: 'with',
        in: 'query',
        required: false,
        schema: { type: 'string', enum: ['full'] },
        description:
          'Verbose mode: `with=full` adds the fields marked "Only with `with=full`" (any other value is ignored).',
      });
    }

    let requestBody: Json | undefined;
    if (!inQuery) {
      const props = (arrays: boolean): Json =>
        Object.fromEntries(
          rest.map((f) => {
            const list = (f.type instanceof GraphQLNonNull ? f.type.ofType : f.type) instanceof GraphQLList;
            return [arrays && list ? `${f.name}[]` : f.name, inputSchema(f.type, f.description, idLike(f))];
          }),
        );
      const required = rest.filter((f) => f.required).map((f) => f.name);
      const form = { type: 'object', properties: props(true), ...(required.length ? { required } : {}) };
      const json = { type: 'object', properties: props(false), ...(required.length ? { required } : {}) };
      const content: Json = {
        'application/x-www-form-urlencoded': { schema: form },
        'multipart/form-data': { schema: form },
        'application/json': { schema: json },
      };
      if (route.upload) delete content['application/json']; // an upload needs a file part
      requestBody = { required: required.length > 0, content };
    }

    // The envelope: list, single object or success.
    let envelopeSchema: Json;
    if (route.envelope === 'success') {
      envelopeSchema = {
        type: 'object',
        properties: { success: { type: 'boolean', const: true } },
        required: ['success'],
      };
    } else {
      const rootSchema = outputSchemaNonNull(
        schema,
        field.type instanceof GraphQLNonNull ? field.type.ofType : field.type,
        sel.selectionSet,
        fragments,
      );
      const props = rootSchema.properties as Json;
      // A mutation payload (`createDownload { download { … } }`) is unwrapped, as envelope.ts does.
      const inner = props && route.envelope in props ? stripNull(props[route.envelope] as Json) : rootSchema;
      const innerProps = inner.properties as Json | undefined;
      if (route.spread) {
        envelopeSchema = stripNull(rootSchema); // the root object's own fields
      } else if (innerProps && 'nodes' in innerProps && 'pagination' in innerProps) {
        // What else the page carries (a search's `facets`, `total_is_exact`): present when not null (envelope.ts).
        const extra = Object.entries(innerProps).filter(([k]) => k !== 'nodes' && k !== 'pagination');
        envelopeSchema = {
          type: 'object',
          properties: {
            [route.envelope]: innerProps.nodes,
            pagination: stripNull(innerProps.pagination as Json),
            ...Object.fromEntries(
              extra.map(([k, v]) => {
                const schema = stripNull(v as Json);
                return [k, { ...schema, description: `${schema.description ?? ''} Left out when null.`.trim() }];
              }),
            ),
          },
          required: [route.envelope, 'pagination'],
        };
      } else {
        envelopeSchema = { type: 'object', properties: { [route.envelope]: inner }, required: [route.envelope] };
      }
    }

    const description = [
      field.description ?? '',
      route.upload
        ? `The \`${route.upload}\` part must come after ${(route.uploadAfter ?? []).map((f) => `\`${f}\``).join(', ')} in the form.`
        : '',
    ]
      .filter(Boolean)
      .join('\n\n');
    const scopes = route.scopes ?? requirementsOf(field).scopes;
    const responses: Json = {
      200: { description: 'Success.', content: { 'application/json': { schema: envelopeSchema } } },
    };
    for (const status of errorStatuses) responses[String(status)] = { $ref: `#/components/responses/Error${status}` };
    if (route.csv) {
      // `format=csv`: the same rows as text/csv (route.ts, `csv`).
      (responses[200] as { content: Json }).content['text/csv'] = {
        schema: { type: 'string', description: `A header line \`${route.csv.join(',')}\`, then one line per row.` },
      };
      parameters.push({
        name: 'format',
        in: 'query',
        required: false,
        description: 'json (the default) or csv.',
        schema: { type: 'string', enum: ['json', 'csv'] },
      });
    }

    const pathKey = openApiPath(route.path);
    const p = paths[pathKey] ?? {};
    paths[pathKey] = p;
    p[route.method.toLowerCase()] = {
      operationId: operation.name?.value,
      summary: route.summary ?? summaryOf(operation.name?.value ?? ''),
      description,
      tags: [route.path.split('/')[2]!],
      parameters,
      ...(requestBody ? { requestBody } : {}),
      security: [{ ForumApiKey: scopes }, { ForumApiKey: scopes, ForumApiUser: [] }],
      responses,
      'x-graphql-operation': operation.name?.value,
    };
  }

  // The one route that is not a GraphQL operation: the bytes of a file.
  paths[DATA_ROUTE] = {
    get: {
      operationId: 'GetFileData',
      summary: "Download a file's bytes",
      description:
        'The bytes of a file, as an attachment, with `ETag` (the file hash; `If-None-Match` answers 304), `Accept-Ranges` and single `Range` requests (206, or 416 when unsatisfiable). A link-only file answers 302 to its URL. A request that starts at byte 0 counts one download on the file, its version and its download; HEAD answers the headers and counts nothing. Needs mc_dm_download:read and the download permission.',
      tags: ['mc-dm-files'],
      parameters: [
        { name: 'file_id', in: 'path', required: true, schema: { type: 'integer', minimum: 1, maximum: MAX_INT } },
        {
          name: 'Range',
          in: 'header',
          required: false,
          schema: { type: 'string' },
          description: 'One `bytes=` range.',
        },
        {
          name: 'If-None-Match',
          in: 'header',
          required: false,
          schema: { type: 'string' },
          description: 'The ETag of a copy the client holds.',
        },
      ],
      security: [{ ForumApiKey: ['mc_dm_download:read'] }, { ForumApiKey: ['mc_dm_download:read'], ForumApiUser: [] }],
      responses: {
        200: {
          description: 'The bytes.',
          content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
        },
        206: {
          description: 'The requested range.',
          content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
        },
        302: { description: 'A link-only file: its URL is in `Location`.' },
        304: { description: "The client's copy is current." },
        416: { description: 'The range cannot be served; `Content-Range: bytes */<size>`.' },
        ...Object.fromEntries(errorStatuses.map((s) => [String(s), { $ref: `#/components/responses/Error${s}` }])),
      },
    },
  };

  return {
    openapi: '3.1.0',
    info: {
      title: 'Downloads Catalogue Service: REST API',
      version,
      description: [
        'The REST face of the Downloads Catalogue Service. Every route runs a GraphQL operation of the same service (`x-graphql-operation`), so both faces answer alike.',
        '',
        'Requests send the API key in `Forum-Api-Key`; a super-user key may act as a user named by `Forum-Api-User`. Write bodies are form fields (`application/x-www-form-urlencoded` or `multipart/form-data`) or JSON; fields may also come in the query string. Booleans are `1`/`0` (or `true`/`false`), lists `name[]=a&name[]=b`, enum values are case-insensitive. Paths work with or without the trailing slash. Every success answers 200.',
        '',
        'Errors answer `{"errors":[{"code","message","params"}]}` with these statuses:',
        '',
        errorTable(),
      ].join('\n'),
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    tags: [
      { name: 'mc-dm-categories', description: 'The category tree.' },
      { name: 'mc-dm-downloads', description: 'Downloads, with their first version.' },
      { name: 'mc-dm-comments', description: 'Comments on downloads.' },
      { name: 'mc-dm-files', description: 'Files of a version, uploaded or linked, and their bytes.' },
      {
        name: 'mc-dm-reviews',
        description: 'Ratings and reviews of downloads, the owner’s replies, their moderation.',
      },
      { name: 'mc-dm-audit-log', description: 'The audit and moderator logs, for administrators.' },
    ],
    paths,
    components: {
      securitySchemes: {
        ForumApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'Forum-Api-Key',
          description: 'An API key. Its scopes are listed per operation.',
        },
        ForumApiUser: {
          type: 'apiKey',
          in: 'header',
          name: 'Forum-Api-User',
          description:
            'With a super-user key only: the user id to act as (else the guest). Any other key sending it answers 403 api_user_header_not_allowed.',
        },
      },
      schemas: {
        Errors: {
          type: 'object',
          required: ['errors'],
          properties: {
            errors: {
              type: 'array',
              items: {
                type: 'object',
                required: ['code', 'message', 'params'],
                properties: {
                  code: { type: 'string', enum: Object.keys(ERROR_CODES) },
                  message: { type: 'string', description: 'What went wrong, for a person.' },
                  params: {
                    type: 'object',
                    description:
                      'Details: `field` (invalid_input), `missing` (required_input_missing), `scope`, `limit`, …',
                  },
                },
              },
            },
          },
        },
      },
      responses: errorResponses(),
    },
  };
}

function stripNull(s: Json): Json {
  if (Array.isArray(s.type)) return { ...s, type: (s.type as string[]).find((t) => t !== 'null') };
  if (Array.isArray(s.oneOf)) return (s.oneOf as Json[]).find((x) => x.type !== 'null') ?? s;
  return s;
}
