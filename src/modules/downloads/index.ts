// Downloads and their versions: what other modules and the app may use of this module.
export * from './schema.js';
export * from './rules.js';
export * from './tags.js';
export * from './views.js';
export * from './store.js';
export * from './search.js';
