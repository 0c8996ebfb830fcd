// The names hand-written statements are prepared under, on a server's pooled connections (src/db/client.ts) and on
// the embedded database (src/db/lite-statements.ts) alike.
import crypto from 'node:crypto';

const statementNames = new Map<string, string>();

/**
 * The name a hand-written statement is prepared under on each connection, from its text: the database parses and
 * plans it once per connection instead of on every request (the texts are a small fixed set: each module's store.ts).
 */
export function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (!name) {
    name = `dcs_${crypto.createHash('sha1').update(sql).digest('hex').slice(0, 16)}`;
    if (statementNames.size < 10_000) statementNames.set(sql, name);
  }
  return name;
}
