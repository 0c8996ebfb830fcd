// The schema's SDL as it is committed (schema.graphql) and given to the code generator: types, fields, arguments and
// enum values in alphabetical order. The order the builder holds follows the order in which the modules were first
// imported, which a test runner's worker or a script may change; sorted, the text depends on the schema alone.
import { lexicographicSortSchema, printSchema, type GraphQLSchema } from 'graphql';

export const schemaSdl = (schema: GraphQLSchema): string => `${printSchema(lexicographicSortSchema(schema))}\n`;
