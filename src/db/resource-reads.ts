// Hand-written SQL for the category, comment and file reads, as src/db/reads.ts does for downloads: a list is one
// statement (the parent the permission check needs, the page, and the total together), a get is one statement (the
// row and the parents its permission check needs). Both the page-numbered lists and the cursor connections read
// through here: a `Slice` is either an offset page or a keyset window. Rows come back in Prisma's model shapes
// (src/db/rows.ts) with the relations Prisma would have included, so the domain and Pothos treat them alike.
//
// Each list's total is one function of src/db/totals.ts (categoryTotalSql, commentTotalSql, fileTotalSql) returning
// a scalar subquery, which the statement carries beside the page.
import type { Download } from '../generated/prisma/client.js';
import type { Database } from './client.js';
import { jsonOf, revive } from './rows.js';
import type { KeysetSpec, Window } from './keyset.js';
import { childPages, type ChildPage, type ChildSource } from './child-pages.js';

export class ResourceReads {
  constructor(protected readonly db: Pick<Database, 'query'>) {}

  /** One page of children for each parent, in one statement (the nested connections: src/db/child-pages.ts). */
  childPages<T>(
    source: ChildSource,
    spec: KeysetSpec,
    window: Window,
    parentIds: readonly number[],
  ): Promise<Map<number, ChildPage<T>>> {
    return childPages<T>(this.db, source, spec, window, parentIds);
  }

  /** Downloads by id (those that exist), for permission checks on rows read elsewhere. */
  async downloadsById(ids: readonly number[]): Promise<Download[]> {
    const wanted = [...new Set(ids)].filter((id) => Number.isInteger(id));
    if (wanted.length === 0) return [];
    const rows = await this.db.query<{ d: Record<string, unknown> }>(
      `SELECT ${jsonOf('Download', 'd')} AS d FROM download d WHERE d.id = ANY(string_to_array($1, ',')::int[])`,
      [wanted.join(',')],
    );
    return rows.map((r) => revive<Download>('Download', r.d));
  }
}
