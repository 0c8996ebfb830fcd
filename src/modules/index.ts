// Builds the schema from every module: each module's index.ts registers its types and fields on the one builder; the
// files beside this one join modules (connections that list one resource under another, subscriptions).
import { specifiedDirectives } from 'graphql';
import { GraphQLDeferDirective, GraphQLStreamDirective } from '@graphql-tools/utils';
import { builder } from '../graphql/builder.js';
import '../graphql/pagination.js';
import '../graphql/node.js';
import './accounts/index.js';
import './downloads/index.js';
import './versions/index.js';
import './comments/index.js';
import './files/index.js';
import './search/index.js';
import './reviews/index.js';
import './moderation/index.js';
import './webhooks/index.js';
import './stats/index.js';
import './connections-root.js';
import './connections-nested.js';
import './subscriptions.js';

// @defer and @stream are part of the schema (introspection and schema.graphql show them, so client tools validate
// documents that use them); src/http/server.ts serves their incremental results.
export const schema = builder.toSchema({
  sortSchema: false,
  directives: [...specifiedDirectives, GraphQLDeferDirective, GraphQLStreamDirective],
});
