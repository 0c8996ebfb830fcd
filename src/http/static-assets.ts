// How the service's static files travel: with an ETag (a hash of the bytes, so a reload asks "still this?" and gets an
// empty 304), compressed with Brotli or gzip when the browser takes it (GraphiQL's bundle is 5 MB of JavaScript, about
// 1.2 MB in Brotli), and, when the page asks for a file by its versioned address (`?v=<its hash>`, or the bundled
// package's version, written into the pages here), kept by the browser for a year without asking again: a new build
// changes the address.
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import { promisify } from 'node:util';

export interface Asset {
  body: Buffer | string;
  type: string;
  /** What its versioned address carries (`?v=`): by default a hash of its bytes (see versionOf). */
  version?: string;
}

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

/** Bodies smaller than this travel as they are: compressing them saves less than its headers cost. */
const MIN_COMPRESSED_BYTES = 1024;
/** Scripts, styles and JSON. Pages are small, and security-headers.ts reads each page's text for its CSP. */
const COMPRESSIBLE = /^(text\/(?:javascript|css)|application\/json|image\/svg\+xml)/;

interface Prepared {
  etag: string;
  bytes: Buffer;
  encoded: Map<'br' | 'gzip', Promise<Buffer>>;
}
const prepared = new WeakMap<Asset, Prepared>();

function prepare(asset: Asset): Prepared {
  let p = prepared.get(asset);
  if (!p) {
    const bytes = typeof asset.body === 'string' ? Buffer.from(asset.body) : asset.body;
    const etag = `"${crypto.createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`;
    p = { etag, bytes, encoded: new Map() };
    prepared.set(asset, p);
  }
  return p;
}

/** What a versioned address of `asset` carries (`?v=`): its own version, else a short hash of its bytes. */
export function versionOf(asset: Asset): string {
  return asset.version ?? prepare(asset).etag.slice(1, 12);
}

/** `html` with each same-origin `href`/`src` that names one of `assets` (not a page) given its versioned address. */
export function withVersionedAddresses(html: string, assets: ReadonlyMap<string, Asset>): string {
  return html.replace(/(href|src)="(\/[^"?#]*)"/g, (whole, attr: string, p: string) => {
    const asset = assets.get(p);
    return asset && !asset.type.startsWith('text/html') ? `${attr}="${p}?v=${versionOf(asset)}"` : whole;
  });
}

/** The encoding to send, from Accept-Encoding: Brotli first, then gzip; none when the client takes neither. */
function chosenEncoding(accept: string | null): 'br' | 'gzip' | undefined {
  const offered = new Map<string, number>();
  for (const part of (accept ?? '').toLowerCase().split(',')) {
    const [name, ...params] = part.trim().split(';');
    const q = params.map((x) => /^\s*q=([\d.]+)\s*$/.exec(x)?.[1]).find(Boolean);
    if (name) offered.set(name.trim(), q === undefined ? 1 : Number(q));
  }
  const takes = (name: string) => (offered.get(name) ?? offered.get('*') ?? 0) > 0;
  if (takes('br')) return 'br';
  if (takes('gzip')) return 'gzip';
  return undefined;
}

function encode(p: Prepared, encoding: 'br' | 'gzip'): Promise<Buffer> {
  let out = p.encoded.get(encoding);
  if (!out) {
    out =
      encoding === 'br'
        ? brotli(p.bytes, {
            params: {
              [zlib.constants.BROTLI_PARAM_QUALITY]: 9,
              [zlib.constants.BROTLI_PARAM_SIZE_HINT]: p.bytes.length,
            },
          })
        : gzip(p.bytes, { level: 9 });
    p.encoded.set(encoding, out);
  }
  return out;
}

/** The answer for a GET or HEAD of `asset`. */
export async function assetResponse(
  request: Request,
  url: URL,
  asset: Asset,
  ResponseImpl: typeof Response,
): Promise<Response> {
  const p = prepare(asset);
  const page = asset.type.startsWith('text/html') || asset.type.startsWith('application/json');
  // Kept for a year only under the address of these very bytes: a `?v=` of another build (a page cached before an
  // upgrade, or served by an instance of another version) gets them revalidated instead, so no browser keeps
  // bytes under an address that names others.
  const asked = url.searchParams.get('v');
  const headers: Record<string, string> = {
    'content-type': asset.type,
    etag: p.etag,
    'cache-control':
      asked === versionOf(asset)
        ? 'public, max-age=31536000, immutable'
        : page || asked !== null
          ? 'no-cache'
          : 'public, max-age=3600',
  };
  const compressible = COMPRESSIBLE.test(asset.type) && p.bytes.length >= MIN_COMPRESSED_BYTES;
  if (compressible) headers.vary = 'Accept-Encoding';
  const match = request.headers.get('if-none-match');
  if (match?.split(',').some((tag) => tag.trim().replace(/^W\//, '') === p.etag)) {
    return new ResponseImpl(null, { status: 304, headers });
  }
  const encoding = compressible ? chosenEncoding(request.headers.get('accept-encoding')) : undefined;
  const body = encoding ? await encode(p, encoding) : p.bytes;
  if (encoding) headers['content-encoding'] = encoding;
  headers['content-length'] = String(body.length);
  return new ResponseImpl(request.method === 'HEAD' ? null : (body as unknown as BodyInit), { status: 200, headers });
}
