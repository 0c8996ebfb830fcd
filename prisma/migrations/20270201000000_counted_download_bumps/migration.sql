-- A counted download (GET /api/mc-dm-files/<id>/data/ from byte 0) adds one to the download counters of its file,
-- version and download and to today's row of the download's daily statistics, in one statement. Each of the four
-- tables' statement triggers then compared the rows before and after (as JSON, the download's whole description and
-- search document included) to find that only counters changed, and wrote the "#counts" bumps of the read cache's
-- versions: about 0.6 ms of the server's time per download, two thirds of the statement's (pgbench, one client, a
-- 4 KB description), for the service's most frequent write.
--
-- The statement now writes those bumps itself, the same rows (test/counted-bumps.test.ts compares them with what the
-- triggers write for the same update), and marks itself in the transaction-local setting "dcs.counted": its own
-- statement_timestamp(), then one entry per trigger firing it causes ('|download|download_daily_stats|
-- download_daily_stats|file|version|': an UPDATE fires its table's statement trigger once, an INSERT ... ON CONFLICT
-- DO UPDATE both the INSERT and the UPDATE ones). A version trigger whose statement has that timestamp and whose table
-- has an entry left takes the entry off and returns. A later statement of the same transaction finds the entries
-- gone, even with the same timestamp (the embedded database's clock counts milliseconds: two statements can share
-- one), so its triggers do their work; the setting ends with the transaction.
--
-- The functions below are those of 20270130000000_category_scoped_versions (cache_bump_scoped) and
-- 20270110000000_cache_versions (cache_bump_counts), with that test first.

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
  -- A counted download's statement (src/modules/files/rules.ts) writes its own bumps, the rows this function would
  -- write for it, and marks itself: each of its triggers takes its table's entry off the mark and returns.
  IF starts_with(COALESCE(current_setting('dcs.counted', true), ''), statement_timestamp()::text || '|')
      AND strpos(current_setting('dcs.counted', true), '|' || TG_TABLE_NAME || '|') > 0 THEN
    PERFORM set_config('dcs.counted', overlay(current_setting('dcs.counted', true) PLACING '|'
      FROM strpos(current_setting('dcs.counted', true), '|' || TG_TABLE_NAME || '|') FOR length(TG_TABLE_NAME) + 2), true);
    RETURN NULL;
  END IF;
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

CREATE OR REPLACE FUNCTION "cache_bump_counts"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  -- A counted download's statement (src/modules/files/rules.ts) writes its own bumps, the rows this function would
  -- write for it, and marks itself: each of its triggers takes its table's entry off the mark and returns.
  IF starts_with(COALESCE(current_setting('dcs.counted', true), ''), statement_timestamp()::text || '|')
      AND strpos(current_setting('dcs.counted', true), '|' || TG_TABLE_NAME || '|') > 0 THEN
    PERFORM set_config('dcs.counted', overlay(current_setting('dcs.counted', true) PLACING '|'
      FROM strpos(current_setting('dcs.counted', true), '|' || TG_TABLE_NAME || '|') FOR length(TG_TABLE_NAME) + 2), true);
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    PERFORM FROM new_rows LIMIT 1;
  ELSE
    PERFORM FROM old_rows LIMIT 1;
  END IF;
  IF FOUND THEN
    INSERT INTO "cache_bumps" ("table_name") VALUES (TG_TABLE_NAME || '#counts');
  END IF;
  RETURN NULL;
END $$;
