-- Versions per category, for the read cache (src/http/read-cache.ts, src/db/cache-versions.ts): a write to the
-- download rows or to the list totals also says which categories it touched, so a list of one category's downloads
-- (REST ?category_id=, GraphQL downloads / downloadsConnection with categoryId) is kept through writes about downloads
-- of other categories. Until now any edit of any download evicted every list.
--
-- The versions of a category are kept beside those of downloads, under the category's id negated: "download@-12" is
-- category 12's version of the download table. So compaction, the bound on that table and the lookup of versions by
-- id work for categories as they do for downloads, unchanged (an instance still running the previous release moves
-- and reads these rows correctly). Category 0 does not exist: rows whose category cannot be told and statements
-- touching more than 100 categories bump download 0, which answers about a category depend on as well.
--
-- Triggers of their own (cache_category_*) run beside the table's cache_bump_* ones, which still bump the table (and
-- its downloads): these add only the per-category rows, from the transition tables, both sides of an update (a
-- download moved from one category to another names the two), counters apart as for downloads.

CREATE OR REPLACE FUNCTION "cache_downloads_of"("keys" INTEGER[], "via" TEXT) RETURNS INTEGER[] LANGUAGE plpgsql AS $$
DECLARE
  out INTEGER[];
BEGIN
  IF "keys" IS NULL OR cardinality("keys") = 0 THEN
    RETURN '{}';
  END IF;
  IF "via" = 'version' THEN
    SELECT array_agg(DISTINCT COALESCE(v."downloadId", 0)) INTO out
      FROM unnest("keys") k LEFT JOIN "version" v ON v."id" = k;
  ELSIF "via" = 'category' THEN
    SELECT array_agg(DISTINCT COALESCE(-k, 0)) INTO out FROM unnest("keys") k;
  ELSE
    SELECT array_agg(DISTINCT COALESCE(k, 0)) INTO out FROM unnest("keys") k;
  END IF;
  IF cardinality(out) > 100 THEN
    RETURN '{0}';
  END IF;
  RETURN out;
END $$;

-- As in 20270120000000_download_scoped_versions, with via 'category': the rows of the table itself are left to its
-- cache_bump_* triggers, and only the per-category ones are added.
CREATE OR REPLACE FUNCTION "cache_bump_scoped"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
  col TEXT := TG_ARGV[0];
  via TEXT := TG_ARGV[1];
  counters TEXT[] := TG_ARGV[2:];
  whole BOOLEAN := TG_ARGV[1] <> 'category';
  data INTEGER[];
  counts INTEGER[];
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    INSERT INTO "cache_bumps" ("table_name", "download_id") VALUES (TG_TABLE_NAME, NULL), (TG_TABLE_NAME, 0);
    RETURN NULL;
  ELSIF TG_OP = 'INSERT' THEN
    SELECT array_agg(DISTINCT (to_jsonb(r) ->> col)::int) INTO data FROM new_rows r;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(DISTINCT (to_jsonb(r) ->> col)::int) INTO data FROM old_rows r;
  ELSIF cardinality(counters) = 0 THEN
    -- No counters: the rows changed at all, both sides.
    WITH n AS (SELECT (to_jsonb(r) ->> col)::int AS k, to_jsonb(r) AS j FROM new_rows r),
      o AS (SELECT (to_jsonb(r) ->> col)::int AS k, to_jsonb(r) AS j FROM old_rows r)
    SELECT array_agg(DISTINCT k) INTO data
      FROM ((SELECT k, j FROM n EXCEPT ALL SELECT k, j FROM o) UNION ALL (SELECT k, j FROM o EXCEPT ALL SELECT k, j FROM n)) a;
  ELSE
    -- Rows changed in columns other than counters (data), and rows changed at all; both sides, so a row moved to
    -- another download (or category) names the two.
    WITH n AS (SELECT (to_jsonb(r) ->> col)::int AS k, to_jsonb(r) AS j FROM new_rows r),
      o AS (SELECT (to_jsonb(r) ->> col)::int AS k, to_jsonb(r) AS j FROM old_rows r),
      d AS ((SELECT k, j - counters FROM n EXCEPT ALL SELECT k, j - counters FROM o)
        UNION ALL (SELECT k, j - counters FROM o EXCEPT ALL SELECT k, j - counters FROM n)),
      a AS ((SELECT k, j FROM n EXCEPT ALL SELECT k, j FROM o) UNION ALL (SELECT k, j FROM o EXCEPT ALL SELECT k, j FROM n))
    SELECT (SELECT array_agg(DISTINCT k) FROM d), (SELECT array_agg(DISTINCT k) FROM a) INTO data, counts;
  END IF;
  data := "cache_downloads_of"(data, via);
  counts := "cache_downloads_of"(counts, via);
  IF cardinality(data) > 0 THEN
    INSERT INTO "cache_bumps" ("table_name", "download_id")
      SELECT TG_TABLE_NAME, NULL WHERE whole UNION ALL SELECT TG_TABLE_NAME, d FROM unnest(data) d;
  ELSIF cardinality(counts) > 0 AND whole THEN
    INSERT INTO "cache_bumps" ("table_name", "download_id") VALUES (TG_TABLE_NAME || '#counts', NULL);
  END IF;
  IF cardinality(counts) > 0 THEN
    INSERT INTO "cache_bumps" ("table_name", "download_id")
      SELECT TG_TABLE_NAME || '#counts', d FROM unnest(counts) d WHERE d <> ALL (COALESCE(data, '{}'));
  END IF;
  RETURN NULL;
END $$;

-- Adds a table's per-category triggers: `col` names the category, `counters` as for cache_track_downloads.
CREATE FUNCTION "cache_track_categories"("t" TEXT, "col" TEXT, "counters" TEXT[]) RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
  args TEXT := (SELECT string_agg(quote_literal(a), ', ') FROM unnest(ARRAY["col", 'category'] || COALESCE("counters", '{}')) a);
BEGIN
  EXECUTE format('DROP TRIGGER IF EXISTS "cache_category_ins" ON %I', "t");
  EXECUTE format('DROP TRIGGER IF EXISTS "cache_category_del" ON %I', "t");
  EXECUTE format('DROP TRIGGER IF EXISTS "cache_category_upd" ON %I', "t");
  EXECUTE format('DROP TRIGGER IF EXISTS "cache_category_truncate" ON %I', "t");
  EXECUTE format('CREATE TRIGGER "cache_category_ins" AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows '
    'FOR EACH STATEMENT EXECUTE FUNCTION "cache_bump_scoped"(%s)', "t", args);
  EXECUTE format('CREATE TRIGGER "cache_category_del" AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows '
    'FOR EACH STATEMENT EXECUTE FUNCTION "cache_bump_scoped"(%s)', "t", args);
  EXECUTE format('CREATE TRIGGER "cache_category_upd" AFTER UPDATE ON %I REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows '
    'FOR EACH STATEMENT EXECUTE FUNCTION "cache_bump_scoped"(%s)', "t", args);
  EXECUTE format('CREATE TRIGGER "cache_category_truncate" AFTER TRUNCATE ON %I '
    'FOR EACH STATEMENT EXECUTE FUNCTION "cache_bump_scoped"(%s)', "t", args);
END $$;

-- The list is CATEGORY_TABLES in src/db/cache-versions.ts (a test compares them).
SELECT "cache_track_categories"('download', 'categoryId', ARRAY['downloadCount', 'viewCount']);
SELECT "cache_track_categories"('download_total', 'categoryId', NULL);
