// The REST routes of comments.
import * as ops from '../generated/operations.js';
import type { Route } from '../route.js';

export const commentsRoutes: Route[] = [
  { method: 'GET', path: '/api/mc-dm-comments/', document: ops.ListCommentsDocument, envelope: 'comments' },
  { method: 'GET', path: '/api/mc-dm-comments/:comment_id/', document: ops.GetCommentDocument, envelope: 'comment' },
  { method: 'POST', path: '/api/mc-dm-comments/', document: ops.CreateCommentDocument, envelope: 'comment' },
  { method: 'PUT', path: '/api/mc-dm-comments/:comment_id/', document: ops.UpdateCommentDocument, envelope: 'comment' },
  {
    method: 'DELETE',
    path: '/api/mc-dm-comments/:comment_id/',
    document: ops.DeleteCommentDocument,
    envelope: 'success',
  },
];
