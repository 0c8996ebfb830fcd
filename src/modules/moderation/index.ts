// Moderation (approve and reject): what other modules and the app may use of this module.
export * from './schema.js';
export * from './rules.js';
export * from './reports.js';
export * from './audit.js';
