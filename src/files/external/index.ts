// External-URL adapters: each knows how to fetch one kind of link. The registry picks the first that accepts a
// URL; `direct-url` (plain http/https) accepts every URL the others do not.
import type { Readable } from 'node:stream';
import { directUrl } from './direct-url.js';

export interface FetchOptions {
  allowPrivate: boolean;
  /** To connect and receive the answer's headers, per hop. */
  timeoutMs: number;
  maxRedirects: number;
  /** The body fails when no byte arrives for this long (default: timeoutMs). */
  idleMs?: number;
  /** The whole fetch, redirects and body included, fails after this long (default: none). */
  deadlineMs?: number;
}

export interface Fetched {
  body: Readable;
  filename: string;
  finalUrl: string;
}

export interface ExternalAdapter {
  /** Stored as the file's external_source_type. */
  id: string;
  accepts(url: URL): boolean;
  fetch(url: URL, opts: FetchOptions): Promise<Fetched>;
}

/** Why a URL could not be used: `forbidden` is the caller's input, `unreachable` is the remote side. */
export class ExternalUrlError extends Error {
  constructor(
    readonly kind: 'forbidden' | 'unreachable',
    message: string,
  ) {
    super(message);
  }
}

/** The adapters in order of preference (a function: direct-url imports this module, so it is read at call time). */
export const adapters = (): ExternalAdapter[] => [directUrl];

/** Parses and checks a URL's form (http or https, with a host). */
export function parseExternalUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ExternalUrlError('forbidden', `"${raw}" is not a URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ExternalUrlError('forbidden', `Only http and https URLs are accepted, not ${url.protocol}`);
  if (!url.hostname) throw new ExternalUrlError('forbidden', 'The URL has no host.');
  if (url.username || url.password) throw new ExternalUrlError('forbidden', 'URLs with credentials are not accepted.');
  return url;
}

export function adapterFor(url: URL): ExternalAdapter {
  return adapters().find((a) => a.accepts(url))!;
}

/** The last path segment of a URL, or "download". */
export function filenameFromUrl(url: URL): string {
  const last = decodeURIComponent(url.pathname.split('/').filter(Boolean).pop() ?? '');
  return last.replace(/[\\/]/g, '_') || 'download';
}
