// Types the REST adapter's operations against the schema: one TypedDocumentNode per
// rest-adapter/operations/*.graphql document. The schema SDL is printed from the Pothos schema first
// (`npm run generate` runs both steps).
import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  schema: 'rest-adapter/generated/schema.graphql',
  documents: 'rest-adapter/operations/*.graphql',
  generates: {
    'rest-adapter/generated/operations.ts': {
      plugins: ['typescript-operations', 'typed-document-node'],
      config: {
        useTypeImports: true,
        enumsAsTypes: true,
        scalars: { Long: 'number', DateTime: 'string', Upload: 'unknown' },
        avoidOptionals: false,
      },
    },
  },
  hooks: {},
  silent: true,
};

export default config;
