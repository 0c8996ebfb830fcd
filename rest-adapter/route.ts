// What one REST route is, as data: its method, path, the GraphQL operation it runs and the envelope key that wraps
// the result. How request fields become variables is one generic rule (see inputs.ts): path, query and body fields
// are matched to the operation's variables by snake_case name, fields of an input-object variable likewise, and
// `with=full` sets `$full`.
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface Route {
  method: Method;
  /** Spec path; `:name` segments become the field `name`. The trailing slash is optional on requests. */
  path: string;
  document: TypedDocumentNode<unknown, never>;
  /**
   * Envelope key: a list result (`{ nodes, pagination }`) answers `{ <key>: [...], pagination }`,
   * a `{ success }` payload answers `{ success: true }`, anything else `{ <key>: {...} }`; keys joined by commas
   * (`webhook,secret`) answer those fields of the payload side by side.
   */
  envelope: string;
  /**
   * The result's own fields are the envelope (`{ versions, conflicts, cycles }`), `envelope` naming the main one,
   * instead of the result wrapped in `{ <envelope>: … }`.
   */
  spread?: boolean;
  /**
   * The multipart field that carries a file, for upload routes. Its bytes are streamed to the server's
   * upload receiver while the request is read, and the result becomes that field's value (an `Upload`).
   */
  upload?: string;
  /** Fields that must precede the file part of an upload (the upload is checked against them before it is stored). */
  uploadAfter?: string[];
  /** What the route does, for the API reference; by default said from the operation's name ("Get a download"). */
  summary?: string;
  /**
   * Columns of a CSV answer: with `format=csv` the envelope's list (`envelope`) is answered as text/csv, a header
   * line of these columns then one line per item; `format=json` (the default) answers the JSON envelope.
   */
  csv?: string[];
  /** Scopes checked from the key alone, before a byte of the body is read (the operation checks them again). */
  scopes?: string[];
}
