// The house's import rules, checked by `npm run lint` (and so by CI). Layers, highest first; an import may only point
// to its own layer or a lower one:
//
//   app        src/main.ts, src/app.ts, src/cli/
//   http       src/http/                      the server: transport only
//   rest       rest-adapter/                  REST routes run as GraphQL operations
//   jobs       src/jobs/                      scheduled work calling module functions
//   assembly   src/modules/*.ts               the schema built from every module, and fields that join two modules
//   modules    src/modules/<resource>/        one folder per resource; others import it through its index.ts only
//   graphql    src/graphql/                   builder, context, connections, cost and limits, compiled execution
//   shared     src/auth/, src/permissions/, src/files/, src/events.ts, src/cache.ts
//   db         src/db/                        client, migrations, transactions, SQL reads and totals
//   base       src/config.ts, src/errors.ts, src/error-codes.ts, src/log.ts, src/project-root.ts, src/bytes.ts, src/input/
const layers = [
  ['app', '^src/(main|app)[.]ts$|^src/cli/'],
  ['http', '^src/http/'],
  ['rest', '^rest-adapter/'],
  ['jobs', '^src/jobs/'],
  ['assembly', '^src/modules/[^/]+[.]ts$'],
  ['modules', '^src/modules/[^/]+/'],
  ['graphql', '^src/graphql/'],
  ['shared', '^src/(auth|permissions|files)/|^src/(events|cache)[.]ts$'],
  ['db', '^src/db/'],
  ['base', '^src/(config|errors|error-codes|log|project-root|bytes)[.]ts$|^src/input/|^src/generated/'],
];

const upward = layers.slice(1).map(([name, path], i) => ({
  name: `no-upward-from-${name}`,
  comment: `${name} may not import a higher layer (${layers.slice(0, i + 1).map(([n]) => n).join(', ')})`,
  severity: 'error',
  from: { path },
  to: { path: layers.slice(0, i + 1).map(([, p]) => `(${p})`).join('|') },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'no-circular',
      comment: 'no import cycle, type-only imports included',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'modules-through-index',
      comment: "a module reaches another module only through that module's index.ts",
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index[.]ts$'] },
    },
    {
      name: 'assembly-through-index',
      comment: "the schema assembly reaches a module only through its index.ts",
      severity: 'error',
      from: { path: '^src/modules/[^/]+[.]ts$' },
      to: { path: '^src/modules/[^/]+/', pathNot: '^src/modules/[^/]+/index[.]ts$' },
    },
    {
      name: 'outside-through-index',
      comment: "code outside src/modules/ reaches a module only through its index.ts (tests may reach further)",
      severity: 'error',
      from: { path: '^src/|^rest-adapter/', pathNot: '^src/modules/' },
      to: { path: '^src/modules/[^/]+/', pathNot: '^src/modules/[^/]+/index[.]ts$' },
    },
    {
      name: 'no-unresolvable',
      comment: 'every import resolves (the typed-document-node package holds types only)',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true, pathNot: '^@graphql-typed-document-node/core$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/generated/|^rest-adapter/generated/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
