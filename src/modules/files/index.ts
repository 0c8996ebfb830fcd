// Files (uploaded blobs or external links) and the route that serves their bytes: what other modules and the app may
// use of this module.
export * from './schema.js';
export * from './rules.js';
export * from './data-route.js';
export * from './store.js';
