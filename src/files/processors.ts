// The file processors of contract §6, in their order: size, hash, mime, magic-byte, file type, decompression bomb.
// Each is a small named rule over what ingest() learnt about the bytes; the first rejection wins and names
// its processor (422 processor_rejected, params.processor and params.reason).
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import mime from 'mime-types';
import yauzl from 'yauzl';
import type { Ingested } from './ingest.js';

export interface Limits {
  maxFileSize: bigint;
  maxVersionSize: bigint;
  maxDownloadSize: bigint;
  allowedFileTypes: string;
}

export interface Candidate {
  filename: string;
  ingested: Ingested;
  limits: Limits;
  /** Bytes already stored in the version and in the whole download (files not deleted). */
  versionBytes: bigint;
  downloadBytes: bigint;
}

export interface Rejection {
  processor: string;
  reason: string;
}
export interface Outcome {
  mimeType: string;
  rejection?: Rejection;
}

interface State {
  ext: string;
  detected?: { ext: string; mime: string };
  mimeType: string;
}
interface Processor {
  name: string;
  run(c: Candidate, s: State): Promise<string | undefined> | string | undefined;
}

/** Extensions whose files must start with their format's signature. Aliases share a format. */
const BINARY_FORMATS: Record<string, string[]> = {
  zip: ['zip'],
  jar: ['zip', 'jar'],
  apk: ['zip', 'apk'],
  xpi: ['zip', 'xpi'],
  epub: ['zip', 'epub'],
  docx: ['zip', 'docx'],
  xlsx: ['zip', 'xlsx'],
  pptx: ['zip', 'pptx'],
  odt: ['zip', 'odt'],
  ods: ['zip', 'ods'],
  rar: ['rar'],
  '7z': ['7z'],
  gz: ['gz'],
  tgz: ['gz'],
  bz2: ['bz2'],
  xz: ['xz'],
  zst: ['zst'],
  tar: ['tar'],
  png: ['png'],
  jpg: ['jpg'],
  jpeg: ['jpg'],
  gif: ['gif'],
  webp: ['webp'],
  bmp: ['bmp'],
  tif: ['tif'],
  tiff: ['tif'],
  pdf: ['pdf'],
  mp3: ['mp3'],
  mp4: ['mp4', 'm4v'],
  ogg: ['ogg', 'oga', 'ogv', 'opus'],
  flac: ['flac'],
  wav: ['wav'],
  mkv: ['mkv'],
  webm: ['webm'],
  avi: ['avi'],
  woff: ['woff'],
  woff2: ['woff2'],
  ttf: ['ttf'],
  otf: ['otf'],
  exe: ['exe'],
  dll: ['exe'],
  psd: ['psd'],
};
const ZIP_FAMILY = new Set(['zip', 'jar', 'apk', 'xpi', 'epub', 'docx', 'xlsx', 'pptx', 'odt', 'ods']);
export const BOMB_RATIO = 100;

const bytes = (n: bigint | number) => `${n} bytes`;

/** Sum of the uncompressed sizes a zip archive declares in its central directory (nothing is inflated). */
async function zipDeclaredSize(file: string): Promise<bigint> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(file, { lazyEntries: true, autoClose: true }, (err, z) => (err ? reject(err) : resolve(z!))),
  );
  return new Promise((resolve, reject) => {
    let total = 0n;
    zip.on('entry', (e: yauzl.Entry) => {
      total += BigInt(e.uncompressedSize);
      zip.readEntry();
    });
    zip.on('end', () => resolve(total));
    zip.on('error', reject);
    zip.readEntry();
  });
}

/** The uncompressed size a gzip stream declares in its trailer (ISIZE, modulo 2^32). */
async function gzipDeclaredSize(file: string, size: number): Promise<bigint> {
  if (size < 18) return 0n;
  const fh = await fs.open(file, 'r');
  try {
    const buf = Buffer.alloc(4);
    await fh.read(buf, 0, 4, size - 4);
    return BigInt(buf.readUInt32LE(0));
  } finally {
    await fh.close();
  }
}

export const PROCESSORS: Processor[] = [
  {
    name: 'size',
    run: (c) => {
      const size = BigInt(c.ingested.size);
      const { maxFileSize, maxVersionSize, maxDownloadSize } = c.limits;
      if (size > maxFileSize)
        return `The file is ${bytes(size)}; this category allows at most ${bytes(maxFileSize)} per file.`;
      if (c.versionBytes + size > maxVersionSize)
        return `The version would hold ${bytes(c.versionBytes + size)}; this category allows at most ${bytes(maxVersionSize)} per version.`;
      if (c.downloadBytes + size > maxDownloadSize)
        return `The download would hold ${bytes(c.downloadBytes + size)}; this category allows at most ${bytes(maxDownloadSize)} per download.`;
      return undefined;
    },
  },
  {
    name: 'hash',
    run: (c) => (/^sha256:[0-9a-f]{64}$/.test(c.ingested.hash) ? undefined : 'The file could not be hashed.'),
  },
  {
    name: 'mime',
    run: async (c, s) => {
      s.detected = await fileTypeFromBuffer(c.ingested.head);
      s.mimeType = s.detected?.mime ?? (mime.lookup(c.filename) || 'application/octet-stream');
      return undefined;
    },
  },
  {
    name: 'magic-byte',
    run: (_c, s) => {
      const formats = BINARY_FORMATS[s.ext];
      if (!formats) return undefined;
      if (s.detected && formats.includes(s.detected.ext)) return undefined;
      return s.detected
        ? `The name says .${s.ext}, but the bytes are a ${s.detected.ext} file.`
        : `The name says .${s.ext}, but the bytes do not start like a .${s.ext} file.`;
    },
  },
  {
    name: 'file-type',
    run: (c, s) => {
      const allowed = c.limits.allowedFileTypes.split(',').filter(Boolean);
      if (allowed.length === 0 || allowed.includes(s.ext)) return undefined;
      return `Files of type ${s.ext ? `.${s.ext}` : 'without an extension'} are not accepted here; allowed: ${allowed.map((e) => `.${e}`).join(', ')}.`;
    },
  },
  {
    name: 'decompression-bomb',
    run: async (c, s) => {
      const kind =
        s.detected?.ext === 'zip' || ZIP_FAMILY.has(s.detected?.ext ?? '')
          ? 'zip'
          : s.detected?.ext === 'gz'
            ? 'gz'
            : null;
      if (!kind) return undefined;
      let declared: bigint;
      try {
        declared =
          kind === 'zip'
            ? await zipDeclaredSize(c.ingested.tmpPath)
            : await gzipDeclaredSize(c.ingested.tmpPath, c.ingested.size);
      } catch (err) {
        return `The ${kind} archive cannot be read: ${(err as Error).message}`;
      }
      const size = BigInt(Math.max(c.ingested.size, 1));
      if (declared > size * BigInt(BOMB_RATIO))
        return `The archive declares ${bytes(declared)} uncompressed, over ${BOMB_RATIO}× its ${bytes(c.ingested.size)}.`;
      if (declared > c.limits.maxVersionSize)
        return `The archive declares ${bytes(declared)} uncompressed, over this category's version limit of ${bytes(c.limits.maxVersionSize)}.`;
      return undefined;
    },
  },
];

export function extensionOf(filename: string): string {
  return path.extname(filename).replace(/^\./, '').toLowerCase();
}

export async function runProcessors(c: Candidate): Promise<Outcome> {
  const s: State = { ext: extensionOf(c.filename), mimeType: mime.lookup(c.filename) || 'application/octet-stream' };
  for (const p of PROCESSORS) {
    const reason = await p.run(c, s);
    if (reason) return { mimeType: s.mimeType, rejection: { processor: p.name, reason } };
  }
  return { mimeType: s.mimeType };
}
