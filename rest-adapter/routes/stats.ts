// The REST routes of download statistics: JSON by default, CSV with `format=csv` (the `csv` option of the row).
import * as ops from '../generated/operations.js';
import type { Route } from '../route.js';

export const statsRoutes: Route[] = [
  {
    method: 'GET',
    path: '/api/mc-dm-downloads/:download_id/stats/',
    document: ops.GetDownloadStatsDocument,
    envelope: 'stats',
    csv: ['day', 'downloads', 'views'],
    summary: "Get a download's daily statistics",
  },
];
