// The REST routes of versions (releases of a download).
import * as ops from '../generated/operations.js';
import type { Route } from '../route.js';

export const versionsRoutes: Route[] = [
  { method: 'GET', path: '/api/mc-dm-versions/', document: ops.ListVersionsDocument, envelope: 'versions' },
  { method: 'GET', path: '/api/mc-dm-versions/:version_id/', document: ops.GetVersionDocument, envelope: 'version' },
  { method: 'POST', path: '/api/mc-dm-versions/', document: ops.CreateVersionDocument, envelope: 'version' },
  { method: 'PUT', path: '/api/mc-dm-versions/:version_id/', document: ops.UpdateVersionDocument, envelope: 'version' },
  {
    method: 'DELETE',
    path: '/api/mc-dm-versions/:version_id/',
    document: ops.DeleteVersionDocument,
    envelope: 'success',
  },
  {
    method: 'GET',
    path: '/api/mc-dm-versions/:version_id/dependencies/',
    document: ops.ResolveDependenciesDocument,
    envelope: 'versions',
    spread: true,
  },
  // The update check: a read, sent by POST because a launcher sends up to 500 hashes.
  { method: 'POST', path: '/api/mc-dm-updates/', document: ops.CheckUpdatesDocument, envelope: 'updates' },
];
