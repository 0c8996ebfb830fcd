// The REST routes of categories.
import * as ops from '../generated/operations.js';
import type { Route } from '../route.js';

export const categoriesRoutes: Route[] = [
  { method: 'GET', path: '/api/mc-dm-categories/', document: ops.ListCategoriesDocument, envelope: 'categories' },
  {
    method: 'GET',
    path: '/api/mc-dm-categories/:category_id/',
    document: ops.GetCategoryDocument,
    envelope: 'category',
  },
  { method: 'POST', path: '/api/mc-dm-categories/', document: ops.CreateCategoryDocument, envelope: 'category' },
  {
    method: 'PUT',
    path: '/api/mc-dm-categories/:category_id/',
    document: ops.UpdateCategoryDocument,
    envelope: 'category',
  },
  {
    method: 'DELETE',
    path: '/api/mc-dm-categories/:category_id/',
    document: ops.DeleteCategoryDocument,
    envelope: 'success',
  },
];
