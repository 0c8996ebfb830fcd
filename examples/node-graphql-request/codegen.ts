// GraphQL Code Generator's client preset over the service's schema (the committed schema.graphql): typed documents
// in src/gql/, and the persisted-documents file a service can trust (GRAPHQL_PERSISTED_DOCUMENTS), ids `sha256:<hex>`.
import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  schema: '../../schema.graphql',
  documents: ['src/**/*.ts', '!src/gql/**/*'],
  generates: {
    'src/gql/': {
      preset: 'client',
      presetConfig: { persistedDocuments: { hashAlgorithm: 'sha256' } },
      config: { useTypeImports: true, enumsAsTypes: true },
    },
  },
  // imports written with .js, as Node's ESM resolution (module NodeNext) needs: no tsconfig change in the client
  emitLegacyCommonJSImports: false,
  silent: true,
};

export default config;
