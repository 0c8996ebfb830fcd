// GET /api/mc-dm-files/<file_id>/data/: the bytes of a file (contract §6). Not a GraphQL operation, because it
// answers with a byte stream, not JSON: streamed from storage with Content-Disposition, ETag (the hash) and
// single Range requests (206, or 416 when unsatisfiable); a link-only file answers 302 to its URL.
// A GET that starts at byte 0 counts one download on the file, its version and its download; HEAD answers the same
// headers and counts nothing.
import type { Plugin } from 'graphql-yoga';
import type { Context } from '../../graphql/context.js';
import { requireScopes } from '../../auth/scopes.js';
import { ApiError, notFound, statusOfError, toErrorItem, headersOf } from '../../errors.js';
import { countFileDownload, fileToServe } from './rules.js';
import { MAX_INT, wholeNumberRange } from '../../input/numbers.js';

/** A file's bytes are never run as a page: no script, no plugin, no framing, whatever their type claims. */
export const FILE_CSP = "default-src 'none'; sandbox; frame-ancestors 'none'";

/** Types a browser would render as a document (and run scripts in): served as opaque bytes instead. */
const ACTIVE =
  /^(text\/html|application\/xhtml\+xml|image\/svg\+xml|text\/xml|application\/xml|text\/xsl|application\/xslt\+xml|text\/javascript|application\/javascript|application\/ecmascript|text\/ecmascript|multipart\/|message\/|application\/pdf|text\/vtt)/i;

export function servedContentType(mimeType: string): string {
  const t = (mimeType || '').trim();
  if (!/^[\w.+-]+\/[\w.+-]+$/.test(t.split(';')[0]!.trim()) || ACTIVE.test(t)) return 'application/octet-stream';
  return t;
}

const PATH = /^\/api\/mc-dm-files\/([^/]+)\/data\/?$/;

function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/** A single `bytes=` range, resolved against the size; null when absent, 'unsatisfiable' when it cannot be served. */
export function parseRange(
  header: string | null,
  size: number,
): { start: number; end: number } | null | 'unsatisfiable' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'unsatisfiable';
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}

export function fileDataPlugin(
  contextFor: (request: Request) => Promise<Context>,
  onUnexpectedError: (err: unknown) => void,
): Plugin {
  let R: typeof Response = Response; // the server's Response class, set per request
  const fail = (err: unknown) => {
    const item = toErrorItem(err);
    if (item.code === 'server_error') onUnexpectedError(err);
    return new R(JSON.stringify({ errors: [item] }), {
      status: statusOfError(err, item.code),
      headers: { 'content-type': 'application/json; charset=utf-8', ...headersOf(err) },
    });
  };

  async function serve(request: Request, rawId: string): Promise<Response> {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return fail(
        new ApiError(
          'method_not_allowed',
          `${request.method} is not allowed here; use GET (or HEAD for the headers alone).`,
          { allowed: ['GET', 'HEAD'] },
          { allow: 'GET, HEAD' },
        ),
      );
    }
    const ctx = await contextFor(request);
    requireScopes(ctx.visitor, ['mc_dm_download:read']);
    if (!/^\d+$/.test(rawId) || Number(rawId) < 1 || Number(rawId) > MAX_INT) {
      throw new ApiError('invalid_input', `file_id must be ${wholeNumberRange(1)}, got "${rawId.slice(0, 40)}".`, {
        field: 'file_id',
      });
    }
    const id = Number(rawId);
    const f = await fileToServe(ctx.db, await ctx.access(), id);
    const count = () => countFileDownload(ctx.db, f);
    const counts = request.method === 'GET';
    if (f.isLinkOnly || !f.storageKey) {
      if (!f.externalUrl) throw notFound('file', id);
      if (counts) await count();
      return new R(null, { status: 302, headers: { location: f.externalUrl } });
    }
    const size = Number(f.fileSize);
    const etag = `"${f.fileHash}"`;
    const headers: Record<string, string> = {
      'content-type': servedContentType(f.mimeType),
      'content-disposition': contentDisposition(f.filename),
      etag,
      'accept-ranges': 'bytes',
      'cache-control': 'private, max-age=0',
      'content-security-policy': FILE_CSP,
    };
    if (request.headers.get('if-none-match') === etag) return new R(null, { status: 304, headers: { etag } });
    const range = parseRange(request.headers.get('range'), size);
    if (range === 'unsatisfiable') {
      return new R(null, { status: 416, headers: { 'content-range': `bytes */${size}`, 'accept-ranges': 'bytes' } });
    }
    // The blob is found before the download is counted: a missing one answers 404 and counts nothing.
    const key = f.storageKey;
    const missing = () =>
      new ApiError(
        'mc_dm_api_error.file_not_available',
        'The bytes of this file are not in storage; the operator has been told.',
        { file_id: id, reason: 'blob_missing' },
        undefined,
        404,
      );
    let stream: import('node:stream').Readable | null = null;
    if (request.method === 'HEAD') {
      if (!(await ctx.storage.exists(key))) throw missing();
    } else {
      try {
        stream = await ctx.storage.read(key, range ?? undefined, size);
      } catch (err) {
        if (!(await ctx.storage.exists(key).catch(() => true))) {
          onUnexpectedError(new Error(`file ${id}: blob ${key} is missing from storage`));
          throw missing();
        }
        throw err;
      }
    }
    try {
      if (counts && (!range || range.start === 0)) await count();
    } catch (err) {
      stream?.destroy();
      throw err;
    }
    if (!stream) {
      // HEAD: the headers the GET would answer.
      const ranged: Record<string, string> = range
        ? { 'content-range': `bytes ${range.start}-${range.end}/${size}` }
        : {};
      return new R(null, {
        status: range ? 206 : 200,
        headers: { ...headers, ...ranged, 'content-length': String(range ? range.end - range.start + 1 : size) },
      });
    }
    // Yoga's Response takes a Node stream as it is and pipes it to the socket.
    const body = stream as unknown as ReadableStream;
    if (range) {
      return new R(body, {
        status: 206,
        headers: {
          ...headers,
          'content-range': `bytes ${range.start}-${range.end}/${size}`,
          'content-length': String(range.end - range.start + 1),
        },
      });
    }
    return new R(body, { status: 200, headers: { ...headers, 'content-length': String(size) } });
  }

  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      const m = PATH.exec(url.pathname);
      if (!m) return;
      R = fetchAPI.Response;
      try {
        endResponse(await serve(request, m[1]!));
      } catch (err) {
        endResponse(fail(err));
      }
    },
  };
}
