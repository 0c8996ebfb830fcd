// The REST routes of webhooks. Create answers `{ webhook, secret }`: the secret is shown this once.
import * as ops from '../generated/operations.js';
import type { Route } from '../route.js';

export const webhooksRoutes: Route[] = [
  { method: 'GET', path: '/api/mc-dm-webhooks/', document: ops.ListWebhooksDocument, envelope: 'webhooks' },
  { method: 'GET', path: '/api/mc-dm-webhooks/:webhook_id/', document: ops.GetWebhookDocument, envelope: 'webhook' },
  { method: 'POST', path: '/api/mc-dm-webhooks/', document: ops.CreateWebhookDocument, envelope: 'webhook,secret' },
  { method: 'PUT', path: '/api/mc-dm-webhooks/:webhook_id/', document: ops.UpdateWebhookDocument, envelope: 'webhook' },
  {
    method: 'DELETE',
    path: '/api/mc-dm-webhooks/:webhook_id/',
    document: ops.DeleteWebhookDocument,
    envelope: 'success',
  },
];
