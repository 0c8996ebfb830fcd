// Accounts: users, API keys, groups, permissions and prefixes as operators manage them, the viewer, and the first
// start's data. What other modules and the app may use of this module.
import './viewer.js';
export * from './schema.js';
import './queries.js';
export * from './rules.js';
export * from './reads.js';
export * from './bootstrap.js';
