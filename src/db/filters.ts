// The filters a download list accepts, shared by the page list and connection reads (src/db/reads.ts) and the totals
// (src/db/totals.ts), so both read one description.
import type { Download } from '../generated/prisma/client.js';

export interface DownloadFilter {
  categoryId?: number;
  /** null: downloads without a prefix. */
  prefixId?: number | null;
  state?: Download['state'];
  since?: Date;
}

export const DOWNLOAD_ORDER_COLUMNS = ['createdDate', 'lastUpdate', 'downloadCount', 'viewCount', 'title'] as const;
export type DownloadOrderColumn = (typeof DOWNLOAD_ORDER_COLUMNS)[number];
