// What every external-URL adapter shares: the adapter's shape, its options and errors, and URL helpers. Kept apart
// from the registry (index.ts) so that an adapter imports these without importing the registry that lists it.
import type { Readable } from 'node:stream';

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
/** The last path segment of a URL, or "download". */
export function filenameFromUrl(url: URL): string {
  const last = decodeURIComponent(url.pathname.split('/').filter(Boolean).pop() ?? '');
  return last.replace(/[\\/]/g, '_') || 'download';
}
