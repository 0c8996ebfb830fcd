// GraphQL results out as the spec's envelopes: snake_case keys (keys that start with a capital, such as the
// embedded `Category` and `CurrentVersion`, are kept as written, and left out when null: the spec says such
// objects are present only when set), and errors as `{ errors: [...] }`.
import { statusOf, type ErrorBodyItem } from '../src/errors.js';
import { toSnake } from './inputs.js';

export function snakeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const k in value) {
    const v = (value as Record<string, unknown>)[k];
    const c = k.charCodeAt(0);
    if (c >= 65 && c <= 90) {
      if (v !== null) out[k] = snakeKeys(v);
    } else {
      out[toSnake(k)] = typeof v === 'object' && v !== null ? snakeKeys(v) : v;
    }
  }
  return out;
}

/**
 * Wraps the value of the operation's single root field. A key naming several fields (`webhook,secret`) answers
 * those fields of the payload side by side; `spread` answers the fields of the result itself.
 */
export function envelope(key: string, rootValue: unknown, spread = false): Record<string, unknown> {
  if (spread) return (snakeKeys(rootValue) ?? {}) as Record<string, unknown>;
  if (key.includes(',')) {
    const payload = (rootValue ?? {}) as Record<string, unknown>;
    return Object.fromEntries(key.split(',').map((k) => [k, snakeKeys(payload[k] ?? null)]));
  }
  let value = rootValue as Record<string, unknown> | null;
  if (value && typeof value === 'object' && key in value && !Array.isArray(value))
    value = value[key] as Record<string, unknown>;
  if (key === 'success')
    return { success: (value as unknown) === true || (value as { success?: unknown } | null)?.success === true };
  if (value && typeof value === 'object' && 'nodes' in value && 'pagination' in value) {
    const out: Record<string, unknown> = { [key]: snakeKeys(value.nodes), pagination: snakeKeys(value.pagination) };
    // What else the page carries (a search's `facets` and `totalIsExact`), under its snake_case name, when not null.
    for (const k in value)
      if (k !== 'nodes' && k !== 'pagination' && value[k] != null) out[toSnake(k)] = snakeKeys(value[k]);
    return out;
  }
  return { [key]: snakeKeys(value) };
}

export function errorBody(items: ErrorBodyItem[]): { status: number; body: { errors: ErrorBodyItem[] } } {
  return { status: statusOf(items[0]?.code ?? 'server_error'), body: { errors: items } };
}
