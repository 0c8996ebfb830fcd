// The REST routes of moderation: approve or reject a moderated download or comment; read the audit log.
import * as ops from '../generated/operations.js';
import type { Route } from '../route.js';

export const moderationRoutes: Route[] = [
  {
    method: 'POST',
    path: '/api/mc-dm-downloads/:download_id/approve/',
    document: ops.ApproveDownloadDocument,
    envelope: 'download',
  },
  {
    method: 'POST',
    path: '/api/mc-dm-downloads/:download_id/reject/',
    document: ops.RejectDownloadDocument,
    envelope: 'download',
  },
  {
    method: 'POST',
    path: '/api/mc-dm-comments/:comment_id/approve/',
    document: ops.ApproveCommentDocument,
    envelope: 'comment',
  },
  {
    method: 'POST',
    path: '/api/mc-dm-comments/:comment_id/reject/',
    document: ops.RejectCommentDocument,
    envelope: 'comment',
  },
  {
    method: 'POST',
    path: '/api/mc-dm-reviews/:review_id/approve/',
    document: ops.ApproveReviewDocument,
    envelope: 'review',
  },
  {
    method: 'POST',
    path: '/api/mc-dm-reviews/:review_id/reject/',
    document: ops.RejectReviewDocument,
    envelope: 'review',
  },
  { method: 'GET', path: '/api/mc-dm-audit-log/', document: ops.AuditLogDocument, envelope: 'audit_log' },
];
