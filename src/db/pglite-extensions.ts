// The PostgreSQL extensions the schema needs, as PGlite loads them: an embedded database must be opened with them
// (PGlite ships them as bundles loaded at construction, not installed in the data directory), or the migrations that
// create them, and every statement that uses them, fail. Search (src/modules/downloads/search.ts) uses both: `unaccent` folds
// accents in its text search configuration, `pg_trgm` ranks the typo fallback's titles (similarity).
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { unaccent } from '@electric-sql/pglite/contrib/unaccent';

/** Pass as PGlite's `extensions` option wherever an embedded database is opened. */
export const PGLITE_EXTENSIONS = { pg_trgm, unaccent };
