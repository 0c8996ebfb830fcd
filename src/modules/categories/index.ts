// Categories: the tree that groups downloads. What other modules and the app may use of this module.
export * from './schema.js';
export * from './rules.js';
export * from './store.js';
