// Imports every type module (each registers itself on the builder) and builds the schema.
import { builder } from './builder.js';
import './pagination.js';
import './node.js';
import './viewer.js';
import './category.js';
import './admin.js';
import './admin-queries.js';
// resource modules are imported below, one line each
import './download.js';
import './comment.js';
import './file.js';
import './connections-root.js';
import './connections-nested.js';
import './subscriptions.js';

export const schema = builder.toSchema({ sortSchema: false });
