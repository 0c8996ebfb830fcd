// The REST routes of files.
// The bytes (GET /api/mc-dm-files/<id>/data/) are streamed by src/modules/files/data-route.ts, not by a row here.
import * as ops from '../generated/operations.js';
import type { Route } from '../route.js';

export const filesRoutes: Route[] = [
  { method: 'GET', path: '/api/mc-dm-files/', document: ops.ListFilesDocument, envelope: 'files' },
  { method: 'GET', path: '/api/mc-dm-files/:file_id/', document: ops.GetFileDocument, envelope: 'file' },
  {
    method: 'POST',
    path: '/api/mc-dm-files/',
    document: ops.CreateFileDocument,
    envelope: 'file',
    upload: 'file',
    uploadAfter: ['version_id'],
    scopes: ['mc_dm_download:write'],
  },
  { method: 'PUT', path: '/api/mc-dm-files/:file_id/', document: ops.UpdateFileDocument, envelope: 'file' },
  { method: 'DELETE', path: '/api/mc-dm-files/:file_id/', document: ops.DeleteFileDocument, envelope: 'success' },
];
