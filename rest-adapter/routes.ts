// The REST surface of the spec, as data: each row names its method, path, the GraphQL operation it runs
// and the envelope key that wraps the result. How request fields become variables is one generic rule
// (see inputs.ts): path, query and body fields are matched to the operation's variables by snake_case name,
// fields of an input-object variable likewise, and `with=full` sets `$full`.
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import * as ops from './generated/operations.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface Route {
  method: Method;
  /** Spec path; `:name` segments become the field `name`. The trailing slash is optional on requests. */
  path: string;
  document: TypedDocumentNode<unknown, never>;
  /**
   * Envelope key: a list result (`{ nodes, pagination }`) answers `{ <key>: [...], pagination }`,
   * a `{ success }` payload answers `{ success: true }`, anything else `{ <key>: {...} }`.
   */
  envelope: string;
  /**
   * The multipart field that carries a file, for upload routes. Its bytes are streamed to the server's
   * upload receiver while the request is read, and the result becomes that field's value (an `Upload`).
   */
  upload?: string;
  /** Fields that must precede the file part of an upload (the upload is checked against them before it is stored). */
  uploadAfter?: string[];
  /** Scopes checked from the key alone, before a byte of the body is read (the operation checks them again). */
  scopes?: string[];
}

export const routes: Route[] = [
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
  // ── downloads (rows added here)
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
  // ── comments (rows added here)
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
  // ── files (rows added here; the bytes, GET /api/mc-dm-files/<id>/data/, are streamed by src/modules/files/data-route.ts)
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
