// The REST surface of the spec, as data: one file of route rows per resource under routes/, joined here in the
// order the API reference lists them. A new resource adds its file and one line below.
import { categoriesRoutes } from './routes/categories.js';
import { downloadsRoutes } from './routes/downloads.js';
import { commentsRoutes } from './routes/comments.js';
import { filesRoutes } from './routes/files.js';
import { versionsRoutes } from './routes/versions.js';
import { moderationRoutes } from './routes/moderation.js';
import { reviewsRoutes } from './routes/reviews.js';
import { webhooksRoutes } from './routes/webhooks.js';
import { statsRoutes } from './routes/stats.js';
import type { Route } from './route.js';

export type { Method, Route } from './route.js';

export const routes: Route[] = [
  ...categoriesRoutes,
  ...downloadsRoutes,
  ...commentsRoutes,
  ...versionsRoutes,
  ...filesRoutes,
  ...moderationRoutes,
  ...reviewsRoutes,
  ...webhooksRoutes,
  ...statsRoutes,
];
