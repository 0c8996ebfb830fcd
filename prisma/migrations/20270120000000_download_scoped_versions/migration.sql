-- Versions per download, for the read cache (src/http/read-cache.ts, src/db/cache-versions.ts): a write to a table
-- that belongs to downloads (the download row itself, its versions, files, comments, their totals, its team and tags)
-- also says which downloads it touched, so an answer that read only one download's rows (the download by id, its
-- comments, versions or files) is kept through writes about other downloads. Lists keep depending on whole tables:
-- every write still bumps its table as before.
--
-- The triggers of those tables add, beside the table's row in "cache_bumps", one row per download touched
-- ("download_id" set; from the transition tables, in the writer's transaction, so every writer is seen). Counters are
-- split per download as per table: a download whose rows changed only in counter columns bumps
-- "<table>#counts" for that download. Rows whose download cannot be found (a file whose version is gone, a TRUNCATE)
-- or a statement touching more than 100 downloads bump download 0, which every per-download answer also depends on.
--
-- Compaction moves those rows into "cache_download_versions". That table is kept small: past 20,000 rows the rows
-- changed longest ago are deleted down to 10,000, and "#pruned" in "cache_versions" is bumped in the same statement;
-- every per-download answer depends on it (a deleted row's version starts again from 0 and could come back to a
-- value an answer saw).

ALTER TABLE "cache_bumps" ADD COLUMN "download_id" INTEGER;

CREATE TABLE "cache_download_versions" (
    "download_id" INTEGER NOT NULL,
    "table_name" TEXT NOT NULL,
    "version" BIGINT NOT NULL,
    "changed_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY ("download_id", "table_name")
);
CREATE INDEX "cache_download_versions_changed_at" ON "cache_download_versions" ("changed_at");

-- The downloads of some rows: `keys` are values of the trigger's key column; via 'version' they are version ids.
-- Unknown rows give 0; more than 100 downloads give only 0.
CREATE FUNCTION "cache_downloads_of"("keys" INTEGER[], "via" TEXT) RETURNS INTEGER[] LANGUAGE plpgsql AS $$
DECLARE
  out INTEGER[];
BEGIN
  IF "keys" IS NULL OR cardinality("keys") = 0 THEN
    RETURN '{}';
  END IF;
  IF "via" = 'version' THEN
    SELECT array_agg(DISTINCT COALESCE(v."downloadId", 0)) INTO out
      FROM unnest("keys") k LEFT JOIN "version" v ON v."id" = k;
  ELSE
    SELECT array_agg(DISTINCT COALESCE(k, 0)) INTO out FROM unnest("keys") k;
  END IF;
  IF cardinality(out) > 100 THEN
    RETURN '{0}';
  END IF;
  RETURN out;
END $$;

-- Arguments: the key column (the download's id, or the version's for 'version'), 'download' or 'version', then the
-- counter columns (none for tables without counters).
CREATE FUNCTION "cache_bump_scoped"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
  col TEXT := TG_ARGV[0];
  via TEXT := TG_ARGV[1];
  counters TEXT[] := TG_ARGV[2:];
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
    -- another download names the two.
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
      SELECT TG_TABLE_NAME, NULL UNION ALL SELECT TG_TABLE_NAME, d FROM unnest(data) d;
  ELSIF cardinality(counts) > 0 THEN
    INSERT INTO "cache_bumps" ("table_name", "download_id") VALUES (TG_TABLE_NAME || '#counts', NULL);
  END IF;
  IF cardinality(counts) > 0 THEN
    INSERT INTO "cache_bumps" ("table_name", "download_id")
      SELECT TG_TABLE_NAME || '#counts', d FROM unnest(counts) d WHERE d <> ALL (COALESCE(data, '{}'));
  END IF;
  RETURN NULL;
END $$;

-- Replaces a table's triggers (cache_track) with the per-download ones.
CREATE FUNCTION "cache_track_downloads"("t" TEXT, "col" TEXT, "via" TEXT, "counters" TEXT[]) RETURNS VOID
LANGUAGE plpgsql AS $$
DECLARE
  args TEXT := (SELECT string_agg(quote_literal(a), ', ') FROM unnest(ARRAY["col", "via"] || COALESCE("counters", '{}')) a);
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

-- The list is DOWNLOAD_TABLES in src/db/cache-versions.ts (a test compares them).
SELECT "cache_track_downloads"('download', 'id', 'download', ARRAY['downloadCount', 'viewCount']);
SELECT "cache_track_downloads"('version', 'downloadId', 'download', ARRAY['downloadCount']);
SELECT "cache_track_downloads"('file', 'versionId', 'version', ARRAY['downloadCount']);
SELECT "cache_track_downloads"('comment', 'downloadId', 'download', NULL);
SELECT "cache_track_downloads"('comment_total', 'downloadId', 'download', NULL);
SELECT "cache_track_downloads"('file_total', 'versionId', 'version', NULL);
SELECT "cache_track_downloads"('team_member', 'downloadId', 'download', NULL);
SELECT "cache_track_downloads"('download_tag', 'downloadId', 'download', NULL);
