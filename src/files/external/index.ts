// External-URL adapters: each knows how to fetch one kind of link. The registry picks the first that accepts a
// URL; `direct-url` (plain http/https) accepts every URL the others do not.
import { directUrl } from './direct-url.js';

export { checkHop, safeLookup } from './direct-url.js';
export { refusalFor } from './address-policy.js';
import type { ExternalAdapter } from './adapter.js';

export {
  ExternalUrlError,
  filenameFromUrl,
  parseExternalUrl,
  type ExternalAdapter,
  type FetchOptions,
  type Fetched,
} from './adapter.js';

/** The adapters in order of preference. */
export const adapters = (): ExternalAdapter[] => [directUrl];

export function adapterFor(url: URL): ExternalAdapter {
  return adapters().find((a) => a.accepts(url))!;
}
