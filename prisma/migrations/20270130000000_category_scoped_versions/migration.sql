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
-- The per-download trigger function (20270120000000_download_scoped_versions) takes a third argument, the column
-- naming the category ('' for none), and finds the downloads and the categories a statement touched in one pass over
-- its transition tables (both sides of an update: a download moved from one category to another names the two;
-- counters apart). A second set of triggers doing the category's part alone cost single-row updates of download 13-16%
-- of their throughput (pgbench, 4 clients, 5,000 downloads); in one pass they cost what the per-download triggers
-- alone did, within the runs' noise.
-- The tables: download (its id and its category), download_total (its category only: col ''), and the tables that
-- belong to downloads as before (no category: '').

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

-- Arguments: the key column (the download's id, or the version's for 'version'; '' for none), 'download' or
-- 'version', the category's column ('' for none), then the counter columns (none for tables without counters).
CREATE OR REPLACE FUNCTION "cache_bump_scoped"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
  col TEXT := TG_ARGV[0];
  via TEXT := TG_ARGV[1];
  catcol TEXT := TG_ARGV[2];
  counters TEXT[] := TG_ARGV[3:];
  data INTEGER[];
  counts INTEGER[];
  cdata INTEGER[];
  ccounts INTEGER[];
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    INSERT INTO "cache_bumps" ("table_name", "download_id") VALUES (TG_TABLE_NAME, NULL), (TG_TABLE_NAME, 0);
    RETURN NULL;
  ELSIF TG_OP = 'INSERT' THEN
    SELECT array_agg(DISTINCT (j ->> col)::int) FILTER (WHERE col <> ''),
        array_agg(DISTINCT (j ->> catcol)::int) FILTER (WHERE catcol <> '')
      INTO data, cdata FROM (SELECT to_jsonb(r) AS j FROM new_rows r) x;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(DISTINCT (j ->> col)::int) FILTER (WHERE col <> ''),
        array_agg(DISTINCT (j ->> catcol)::int) FILTER (WHERE catcol <> '')
      INTO data, cdata FROM (SELECT to_jsonb(r) AS j FROM old_rows r) x;
  ELSIF cardinality(counters) = 0 THEN
    -- No counters: the rows changed at all, both sides.
    WITH n AS (SELECT to_jsonb(r) AS j FROM new_rows r), o AS (SELECT to_jsonb(r) AS j FROM old_rows r),
      d AS ((SELECT j FROM n EXCEPT ALL SELECT j FROM o) UNION ALL (SELECT j FROM o EXCEPT ALL SELECT j FROM n))
    SELECT array_agg(DISTINCT (j ->> col)::int) FILTER (WHERE col <> ''),
        array_agg(DISTINCT (j ->> catcol)::int) FILTER (WHERE catcol <> '')
      INTO data, cdata FROM d;
  ELSE
    -- Rows changed in columns other than counters (d), and rows changed at all (a); both sides, so a row moved to
    -- another download or category names the two.
    WITH n AS (SELECT to_jsonb(r) AS j FROM new_rows r), o AS (SELECT to_jsonb(r) AS j FROM old_rows r),
      d AS ((SELECT j - counters AS j FROM n EXCEPT ALL SELECT j - counters FROM o)
        UNION ALL (SELECT j - counters FROM o EXCEPT ALL SELECT j - counters FROM n)),
      a AS ((SELECT j FROM n EXCEPT ALL SELECT j FROM o) UNION ALL (SELECT j FROM o EXCEPT ALL SELECT j FROM n))
    SELECT (SELECT array_agg(DISTINCT (j ->> col)::int) FILTER (WHERE col <> '') FROM d),
        (SELECT array_agg(DISTINCT (j ->> col)::int) FILTER (WHERE col <> '') FROM a),
        (SELECT array_agg(DISTINCT (j ->> catcol)::int) FILTER (WHERE catcol <> '') FROM d),
        (SELECT array_agg(DISTINCT (j ->> catcol)::int) FILTER (WHERE catcol <> '') FROM a)
      INTO data, counts, cdata, ccounts;
  END IF;
  -- Downloads, then categories as negated ids: one list of scopes.
  data := "cache_downloads_of"(data, via) || "cache_downloads_of"(cdata, 'category');
  counts := "cache_downloads_of"(counts, via) || "cache_downloads_of"(ccounts, 'category');
  IF cardinality(data) > 0 THEN
    INSERT INTO "cache_bumps" ("table_name", "download_id")
      SELECT TG_TABLE_NAME, NULL UNION ALL SELECT DISTINCT TG_TABLE_NAME, d FROM unnest(data) d;
  ELSIF cardinality(counts) > 0 THEN
    INSERT INTO "cache_bumps" ("table_name", "download_id") VALUES (TG_TABLE_NAME || '#counts', NULL);
  END IF;
  IF cardinality(counts) > 0 THEN
    INSERT INTO "cache_bumps" ("table_name", "download_id")
      SELECT DISTINCT TG_TABLE_NAME || '#counts', d FROM unnest(counts) d WHERE d <> ALL (data);
  END IF;
  RETURN NULL;
END $$;

-- Replaces a table's triggers with the per-download and per-category ones (cache_track_downloads, which it replaces,
-- had no category).
DROP FUNCTION "cache_track_downloads"(TEXT, TEXT, TEXT, TEXT[]);
CREATE FUNCTION "cache_track_scoped"("t" TEXT, "col" TEXT, "via" TEXT, "catcol" TEXT, "counters" TEXT[]) RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
  args TEXT := (SELECT string_agg(quote_literal(a), ', ')
    FROM unnest(ARRAY["col", "via", "catcol"] || COALESCE("counters", '{}')) a);
BEGIN
  EXECUTE format('DROP TRIGGER IF EXISTS "cache_bump_ins" ON %I', "t");
  EXECUTE format('DROP TRIGGER IF EXISTS "cache_bump_del" ON %I', "t");
  EXECUTE format('DROP TRIGGER IF EXISTS "cache_bump_upd" ON %I', "t");
  EXECUTE format('DROP TRIGGER IF EXISTS "cache_bump_truncate" ON %I', "t");
  EXECUTE format('CREATE TRIGGER "cache_bump_ins" AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows '
    'FOR EACH STATEMENT EXECUTE FUNCTION "cache_bump_scoped"(%s)', "t", args);
  EXECUTE format('CREATE TRIGGER "cache_bump_del" AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows '
    'FOR EACH STATEMENT EXECUTE FUNCTION "cache_bump_scoped"(%s)', "t", args);
  EXECUTE format('CREATE TRIGGER "cache_bump_upd" AFTER UPDATE ON %I REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows '
    'FOR EACH STATEMENT EXECUTE FUNCTION "cache_bump_scoped"(%s)', "t", args);
  EXECUTE format('CREATE TRIGGER "cache_bump_truncate" AFTER TRUNCATE ON %I '
    'FOR EACH STATEMENT EXECUTE FUNCTION "cache_bump_scoped"(%s)', "t", args);
END $$;

-- The lists are DOWNLOAD_TABLES and CATEGORY_TABLES in src/db/cache-versions.ts (a test compares them).
SELECT "cache_track_scoped"('download', 'id', 'download', 'categoryId', ARRAY['downloadCount', 'viewCount']);
SELECT "cache_track_scoped"('version', 'downloadId', 'download', '', ARRAY['downloadCount']);
SELECT "cache_track_scoped"('file', 'versionId', 'version', '', ARRAY['downloadCount']);
SELECT "cache_track_scoped"('comment', 'downloadId', 'download', '', NULL);
SELECT "cache_track_scoped"('comment_total', 'downloadId', 'download', '', NULL);
SELECT "cache_track_scoped"('file_total', 'versionId', 'version', '', NULL);
SELECT "cache_track_scoped"('team_member', 'downloadId', 'download', '', NULL);
SELECT "cache_track_scoped"('download_tag', 'downloadId', 'download', '', NULL);
SELECT "cache_track_scoped"('download_total', '', '', 'categoryId', NULL);
