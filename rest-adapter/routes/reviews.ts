// The REST routes of reviews.
import * as ops from '../generated/operations.js';
import type { Route } from '../route.js';

export const reviewsRoutes: Route[] = [
  { method: 'GET', path: '/api/mc-dm-reviews/', document: ops.ListReviewsDocument, envelope: 'reviews' },
  { method: 'GET', path: '/api/mc-dm-reviews/:review_id/', document: ops.GetReviewDocument, envelope: 'review' },
  { method: 'POST', path: '/api/mc-dm-reviews/', document: ops.CreateReviewDocument, envelope: 'review' },
  { method: 'PUT', path: '/api/mc-dm-reviews/:review_id/', document: ops.UpdateReviewDocument, envelope: 'review' },
  { method: 'DELETE', path: '/api/mc-dm-reviews/:review_id/', document: ops.DeleteReviewDocument, envelope: 'success' },
  {
    method: 'POST',
    path: '/api/mc-dm-reviews/:review_id/reply/',
    document: ops.ReplyToReviewDocument,
    envelope: 'review',
  },
];
