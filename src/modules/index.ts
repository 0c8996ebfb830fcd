// Builds the schema from every module: each module's index.ts registers its types and fields on the one builder; the
// files beside this one join modules (connections that list one resource under another, subscriptions).
import { builder } from '../graphql/builder.js';
import '../graphql/pagination.js';
import '../graphql/node.js';
import './accounts/index.js';
import './downloads/index.js';
import './versions/index.js';
import './comments/index.js';
import './files/index.js';
import './webhooks/index.js';
import './connections-root.js';
import './connections-nested.js';
import './subscriptions.js';

export const schema = builder.toSchema({ sortSchema: false });
