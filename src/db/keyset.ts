// Keyset (cursor) pagination for Relay connections: a list is ordered by one column and the row id (the
// tiebreaker, in the same direction), and a page starts strictly after (or ends strictly before) a position
// (value, id). Inserts between two requests therefore neither repeat nor skip rows of the next page, as an offset
// would. A cursor is that position plus the list, order and direction it belongs to, so a cursor of another list,
// order or direction is refused instead of silently paging something else.
//
// Cursors are sealed (AES-256-GCM, a random 12-byte IV, base64url) with a key every instance on the database shares
// (CursorSeal below): a cursor holds the order column's value of a row, such as a title, which the visitor may not
// be allowed to see, so decoding one must reveal nothing; and a forged, altered, cut or foreign cursor fails
// authentication and answers invalid_input. The list's filters and permission rules still apply whatever it says.
import { LIMITS } from '../config.js';
import crypto from 'node:crypto';
import { invalidInput } from '../errors.js';
import type { Direction } from './lists.js';
import { MAX_INT } from '../input/numbers.js';

export const DEFAULT_PAGE_SIZE = LIMITS.defaultPageSize;
export const MAX_PAGE_SIZE = LIMITS.maxPageSize;

/** How the order column's values are compared, carried in a cursor, and bound as SQL parameters. */
export type KeyKind = 'int' | 'bigint' | 'date' | 'string';

export interface KeyColumn {
  /** The column's (Prisma field) name, e.g. `lastUpdate`. */
  name: string;
  kind: KeyKind;
  /** A nullable column sorts its nulls before every value (first ascending, last descending). */
  nullable?: boolean;
}

/** One list in one order: what a cursor is bound to. */
export interface KeysetSpec {
  /** The list's name, e.g. `downloads` or `Download.comments`. */
  list: string;
  /** The order's public name, e.g. `last_update`. */
  order: string;
  direction: Direction;
  column: KeyColumn;
}

export type KeyValue = number | bigint | Date | string | null;

/** A row's place in its list: the order column's value and the row id. */
export interface Position {
  value: KeyValue;
  id: number;
}

export interface ConnectionArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

/** What to read: `size` rows after (or, backward, before) `cursor`. */
export interface Window {
  size: number;
  /** last/before: read from the end (the scan runs against the list's direction). */
  backward: boolean;
  cursor: Position | null;
}

/** The first byte of every sealed cursor: a later format changes it (and the key's derivation label). */
const VERSION = Buffer.from([1]);
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Version, IV, at least one byte of ciphertext and the tag, base64url; the longest a cursor of a long title needs. */
const CURSOR_SHAPE = /^[A-Za-z0-9_-]{40,4096}$/;

/**
 * Seals and opens cursors with a key derived (HKDF-SHA256) from the server secret: CURSOR_SECRET, or the one
 * generated once and kept in the database (src/db/secrets.ts), so every instance opens every other's cursors.
 */
export class CursorSeal {
  readonly #key: Buffer;

  constructor(secret: string) {
    if (!secret) throw new Error('the cursor secret is empty');
    this.#key = Buffer.from(crypto.hkdfSync('sha256', secret, 'downloads-catalogue', 'cursor v1 aes-256-gcm', 32));
  }

  /** `plain` sealed: version, IV, ciphertext and tag, base64url. */
  seal(plain: Buffer): string {
    const iv = crypto.randomBytes(IV_BYTES);
    const cipher = crypto.createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(VERSION);
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([VERSION, iv, body, cipher.getAuthTag()]).toString('base64url');
  }

  /** What `token` seals; undefined unless this key sealed it, unaltered and whole. */
  open(token: string): Buffer | undefined {
    if (!CURSOR_SHAPE.test(token)) return undefined;
    const raw = Buffer.from(token, 'base64url');
    // Only the canonical spelling: base64url's last character can carry unused bits, which must not vary.
    if (raw.toString('base64url') !== token || raw.length <= 1 + IV_BYTES + TAG_BYTES || raw[0] !== VERSION[0])
      return undefined;
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', this.#key, raw.subarray(1, 1 + IV_BYTES), {
        authTagLength: TAG_BYTES,
      });
      decipher.setAAD(VERSION);
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(1 + IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]);
    } catch {
      return undefined;
    }
  }
}

function pageSize(field: 'first' | 'last', n: number): number {
  if (!Number.isInteger(n) || n < 1) {
    throw invalidInput(
      field,
      `${field} must be a whole number from 1 to ${MAX_PAGE_SIZE} (larger values are clamped to ${MAX_PAGE_SIZE}), got ${n}.`,
    );
  }
  return Math.min(n, MAX_PAGE_SIZE);
}

/**
 * The page a connection's arguments ask for: `first` (default 20) rows after `after`, or `last` rows before
 * `before`. Mixing the two directions is refused, since the answer would depend on a rule the client cannot see.
 */
export function windowOf(seal: CursorSeal, spec: KeysetSpec, args: ConnectionArgs): Window {
  const forward = args.first != null || args.after != null;
  const backward = args.last != null || args.before != null;
  if (forward && backward) {
    const sent = (['first', 'after', 'last', 'before'] as const).filter((k) => args[k] != null);
    throw invalidInput(
      sent.includes('last') ? 'last' : 'before',
      `Page forward with first/after or backward with last/before, not both (got ${sent.join(', ')}).`,
    );
  }
  if (backward) {
    return {
      size: args.last != null ? pageSize('last', args.last) : DEFAULT_PAGE_SIZE,
      backward: true,
      cursor: args.before != null ? decodeCursor(seal, spec, args.before, 'before') : null,
    };
  }
  return {
    size: args.first != null ? pageSize('first', args.first) : DEFAULT_PAGE_SIZE,
    backward: false,
    cursor: args.after != null ? decodeCursor(seal, spec, args.after, 'after') : null,
  };
}

function valueOut(kind: KeyKind, v: KeyValue): unknown {
  if (v === null) return null;
  switch (kind) {
    case 'date':
      return (v as Date).toISOString();
    case 'bigint':
      return String(v);
    default:
      return v;
  }
}

const BIGINT_MAX = 9_223_372_036_854_775_807n;

/** A cursor's value, only when the column's SQL type can hold it (a hand-made cursor must not reach the database). */
function valueIn(col: KeyColumn, raw: unknown): KeyValue | undefined {
  if (raw === null) return col.nullable ? null : undefined;
  switch (col.kind) {
    case 'int':
      return typeof raw === 'number' && Number.isInteger(raw) && Math.abs(raw) <= MAX_INT ? raw : undefined;
    case 'bigint': {
      if (typeof raw !== 'string' || !/^-?\d{1,19}$/.test(raw)) return undefined;
      const v = BigInt(raw);
      return v <= BIGINT_MAX && v >= -BIGINT_MAX ? v : undefined;
    }
    case 'string':
      return typeof raw === 'string' && raw.length <= 10_000 && !raw.includes('\u0000') ? raw : undefined;
    case 'date': {
      // Four-digit years only: what timestamp columns hold and toISOString writes back unchanged.
      if (typeof raw !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(raw)) return undefined;
      const d = new Date(raw);
      return !Number.isNaN(d.getTime()) && d.toISOString() === raw ? d : undefined;
    }
  }
}

/** The cursor of `row` (which carries the order column and `id`) in the list `spec`, sealed with `seal`. */
export function encodeCursor(
  seal: CursorSeal,
  spec: KeysetSpec,
  row: { id: number } & Record<string, unknown>,
): string {
  return seal.seal(
    Buffer.from(
      JSON.stringify([
        spec.list,
        spec.order,
        spec.direction,
        valueOut(spec.column.kind, (row[spec.column.name] ?? null) as KeyValue),
        row.id,
      ]),
    ),
  );
}

/** The position a cursor names; invalid_input (naming `field`) when it is not a cursor of this list and order. */
export function decodeCursor(seal: CursorSeal, spec: KeysetSpec, cursor: string, field: string): Position {
  const bad = (why: string) =>
    invalidInput(
      field,
      `${field} ${why}: pass the \`cursor\` (or pageInfo's startCursor/endCursor) this field returned with the same order and direction, or leave ${field} out to start from the ${field === 'before' ? 'end' : 'beginning'}.`,
    );
  const plain = seal.open(cursor);
  if (!plain) throw bad('is not a cursor issued by this service (or it was altered or cut)');
  let p: unknown;
  try {
    p = JSON.parse(plain.toString('utf8'));
  } catch {
    throw bad('is not a cursor issued by this service');
  }
  if (
    !Array.isArray(p) ||
    p.length !== 5 ||
    typeof p[0] !== 'string' ||
    typeof p[1] !== 'string' ||
    typeof p[2] !== 'string'
  ) {
    throw bad('is not a cursor issued by this service');
  }
  const [list, order, direction, raw, id] = p as [string, string, string, unknown, unknown];
  if (list !== spec.list) throw bad(`belongs to another list (${list}), not ${spec.list}`);
  if (order !== spec.order || direction !== spec.direction) {
    throw bad(`belongs to another order (${order} ${direction}), not ${spec.order} ${spec.direction}`);
  }
  // Sealed cursors are only ever made by encodeCursor; the checks stay so that no value a column cannot hold
  // reaches the database, whatever made the cursor.
  const value = valueIn(spec.column, raw);
  if (value === undefined || typeof id !== 'number' || !Number.isInteger(id) || id < 1 || id > MAX_INT) {
    throw bad('is not a cursor issued by this service');
  }
  return { value, id };
}

/** The direction rows are read in: the list's own, or its reverse when paging backward. */
export function scanDirection(spec: KeysetSpec, w: Window): Direction {
  if (!w.backward) return spec.direction;
  return spec.direction === 'asc' ? 'desc' : 'asc';
}

// ───────────── the "strictly after the cursor in scan order" condition, for Prisma and for SQL
// Nulls count as smaller than every value: ascending scans meet them first, descending scans last.

/** A Prisma `where` fragment selecting rows strictly after the window's cursor in scan order; {} without a cursor. */
export function prismaAfter(spec: KeysetSpec, w: Window): Record<string, unknown> {
  if (!w.cursor) return {};
  const { name, nullable } = spec.column;
  const { value, id } = w.cursor;
  const up = scanDirection(spec, w) === 'asc';
  const past = up ? 'gt' : 'lt';
  if (value === null) {
    // Among the nulls by id; ascending, every non-null value follows the nulls.
    return { OR: [{ [name]: null, id: { [past]: id } }, ...(up ? [{ [name]: { not: null } }] : [])] };
  }
  return {
    OR: [
      { [name]: { [past]: value } },
      { [name]: value, id: { [past]: id } },
      ...(nullable && !up ? [{ [name]: null }] : []),
    ],
  };
}

/** Prisma `orderBy` for the scan. */
export function prismaOrderBy(spec: KeysetSpec, w: Window): Record<string, unknown>[] {
  const dir = scanDirection(spec, w);
  const col = spec.column.nullable ? { sort: dir, nulls: dir === 'asc' ? 'first' : 'last' } : dir;
  return [{ [spec.column.name]: col }, { id: dir }];
}

const SQL_TYPE: Record<KeyKind, string> = { int: 'int', bigint: 'bigint', date: 'timestamp', string: 'text' };

/** SQL parameter value of a key (timestamps are stored as UTC without a zone). */
function sqlValue(kind: KeyKind, v: Exclude<KeyValue, null>): unknown {
  if (kind === 'date') return (v as Date).toISOString();
  if (kind === 'bigint') return String(v);
  return v;
}

/**
 * The same condition as SQL over table alias `t`, binding values through `param` (which returns `$n`); `TRUE`
 * without a cursor. Column names are the spec's own (never client input).
 */
export function sqlAfter(spec: KeysetSpec, w: Window, t: string, param: (v: unknown) => string): string {
  if (!w.cursor) return 'TRUE';
  const col = `${t}."${spec.column.name}"`;
  const { value, id } = w.cursor;
  const up = scanDirection(spec, w) === 'asc';
  const op = up ? '>' : '<';
  const idParam = `${param(id)}::int`;
  if (value === null) {
    return `((${col} IS NULL AND ${t}.id ${op} ${idParam})${up ? ` OR ${col} IS NOT NULL` : ''})`;
  }
  const v = `${param(sqlValue(spec.column.kind, value))}::${SQL_TYPE[spec.column.kind]}`;
  return `(${col} ${op} ${v} OR (${col} = ${v} AND ${t}.id ${op} ${idParam})${spec.column.nullable && !up ? ` OR ${col} IS NULL` : ''})`;
}

/** SQL `ORDER BY` terms for the scan over alias `t`. */
export function sqlOrderBy(spec: KeysetSpec, w: Window, t: string): string {
  const dir = scanDirection(spec, w) === 'asc' ? 'ASC' : 'DESC';
  const nulls = spec.column.nullable ? (dir === 'ASC' ? ' NULLS FIRST' : ' NULLS LAST') : '';
  return `${t}."${spec.column.name}" ${dir}${nulls}, ${t}.id ${dir}`;
}

// ───────────── from the rows read to a page

export interface PageInfo {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
}
export interface Edge<T> {
  cursor: string;
  node: T;
}
export interface KeysetPage<T> {
  edges: Edge<T>[];
  pageInfo: PageInfo;
}

/**
 * `rows` were read in scan order, up to `size + 1` of them (the extra row only tells that more follow). Answers the
 * page in list order with a cursor per row. `hasPreviousPage` when paging forward (and `hasNextPage` backward) is
 * true when the request came with a cursor: rows lay beyond it when that cursor was issued.
 */
export function pageOf<T extends { id: number }>(
  seal: CursorSeal,
  spec: KeysetSpec,
  w: Window,
  rows: readonly T[],
): KeysetPage<T> {
  const more = rows.length > w.size;
  const kept = rows.slice(0, w.size);
  if (w.backward) kept.reverse();
  const edges = kept.map((node) => ({ cursor: encodeCursor(seal, spec, node as T & Record<string, unknown>), node }));
  return {
    edges,
    pageInfo: {
      hasNextPage: w.backward ? w.cursor !== null : more,
      hasPreviousPage: w.backward ? more : w.cursor !== null,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}
