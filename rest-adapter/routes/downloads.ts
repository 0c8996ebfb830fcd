// The REST routes of downloads.
import * as ops from '../generated/operations.js';
import type { Route } from '../route.js';

export const downloadsRoutes: Route[] = [
  { method: 'GET', path: '/api/mc-dm-downloads/', document: ops.ListDownloadsDocument, envelope: 'downloads' },
  {
    method: 'GET',
    path: '/api/mc-dm-downloads/:download_id/',
    document: ops.GetDownloadDocument,
    envelope: 'download',
  },
  { method: 'POST', path: '/api/mc-dm-downloads/', document: ops.CreateDownloadDocument, envelope: 'download' },
  {
    method: 'PUT',
    path: '/api/mc-dm-downloads/:download_id/',
    document: ops.UpdateDownloadDocument,
    envelope: 'download',
  },
  {
    method: 'DELETE',
    path: '/api/mc-dm-downloads/:download_id/',
    document: ops.DeleteDownloadDocument,
    envelope: 'success',
  },
];
