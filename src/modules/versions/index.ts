// Versions of a download: what other modules and the app may use of this module.
export * from './schema.js';
export * from './rules.js';
export * from './updates.js';
export * from './resolve.js';
export * from './store.js';
