// A small in-process cache with a time to live, for data every request reads and few requests change
// (API keys, users, permission tables). Concurrent loads of one key share a single query; failures are not kept.
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: Promise<V>; expires: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(key: K, load: () => Promise<V>): Promise<V> {
    const now = Date.now();
    const hit = this.entries.get(key);
    if (hit && hit.expires > now) return hit.value;
    if (this.ttlMs <= 0) return load();
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    const value = load();
    this.entries.set(key, { value, expires: now + this.ttlMs });
    value.catch(() => this.entries.delete(key));
    return value;
  }

  delete(key: K): void {
    this.entries.delete(key);
  }
  clear(): void {
    this.entries.clear();
  }
}
