-- Versions of the tables, for the read cache (src/http/read-cache.ts): an answer is given again only while the
-- tables it read are at the versions it was computed at. Kept by the database, so every writer is seen: this
-- instance, another one, the command line, raw SQL.
--
-- A write statement on a table adds a row to "cache_bumps" (statement-level triggers, in the writer's transaction:
-- the bump is seen exactly when the data is). Writers only insert, so they never wait for each other on the bump.
-- A table's version is its "cache_versions" row plus its rows in "cache_bumps"; moving rows from the second into the
-- first (compaction, src/db/cache-versions.ts) keeps that sum. A version only grows.
--
-- Counters (a download's downloadCount and viewCount, a version's and a file's downloadCount, a key's lastUsedAt,
-- and every column of download_daily_stats) bump "<table>#counts" instead: an update that changes only them leaves
-- the table's version as it was. The counter columns are the UPDATE trigger's arguments; src/db/cache-versions.ts
-- lists the same (a test compares them). Every table of the schema has these triggers (a test checks it too): a
-- table added later must get them in its migration (see the DO block below).

CREATE TABLE "cache_versions" (
    "table_name" TEXT NOT NULL PRIMARY KEY,
    "version" BIGINT NOT NULL
);

CREATE TABLE "cache_bumps" (
    "table_name" TEXT NOT NULL
);

-- A statement that wrote no row (an idle job's UPDATE … WHERE nothing matches) bumps nothing: the triggers see the
-- rows through transition tables (old_rows for UPDATE and DELETE, new_rows for INSERT).
CREATE FUNCTION "cache_bump"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM FROM new_rows LIMIT 1;
  ELSIF TG_OP <> 'TRUNCATE' THEN
    PERFORM FROM old_rows LIMIT 1;
  END IF;
  IF TG_OP = 'TRUNCATE' OR FOUND THEN
    INSERT INTO "cache_bumps" ("table_name") VALUES (TG_TABLE_NAME);
  END IF;
  RETURN NULL;
END $$;

-- For tables made only of counters: every write is a counter change.
CREATE FUNCTION "cache_bump_counts"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
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

-- An UPDATE on a table with counter columns (its arguments): rows whose other columns changed bump the table,
-- rows where only counters changed bump "<table>#counts", rows left as they were bump nothing.
CREATE FUNCTION "cache_bump_update"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
  counters TEXT[] := TG_ARGV;
BEGIN
  IF EXISTS (SELECT to_jsonb(n) - counters FROM new_rows n EXCEPT ALL SELECT to_jsonb(o) - counters FROM old_rows o) THEN
    INSERT INTO "cache_bumps" ("table_name") VALUES (TG_TABLE_NAME);
  ELSIF EXISTS (SELECT to_jsonb(n) FROM new_rows n EXCEPT ALL SELECT to_jsonb(o) FROM old_rows o) THEN
    INSERT INTO "cache_bumps" ("table_name") VALUES (TG_TABLE_NAME || '#counts');
  END IF;
  RETURN NULL;
END $$;

-- Installs the triggers on one table; `counters`: its counter columns (NULL: none; '{*}': the whole table).
CREATE FUNCTION "cache_track"("t" TEXT, "counters" TEXT[]) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
  fn TEXT := CASE WHEN "counters" = '{*}' THEN 'cache_bump_counts' ELSE 'cache_bump' END;
BEGIN
  EXECUTE format('CREATE TRIGGER "cache_bump_ins" AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows '
    'FOR EACH STATEMENT EXECUTE FUNCTION %I()', "t", fn);
  EXECUTE format('CREATE TRIGGER "cache_bump_del" AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows '
    'FOR EACH STATEMENT EXECUTE FUNCTION %I()', "t", fn);
  EXECUTE format('CREATE TRIGGER "cache_bump_truncate" AFTER TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION "cache_bump"()', "t");
  IF "counters" IS NULL OR "counters" = '{*}' THEN
    EXECUTE format('CREATE TRIGGER "cache_bump_upd" AFTER UPDATE ON %I REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows '
      'FOR EACH STATEMENT EXECUTE FUNCTION %I()', "t", fn);
  ELSE
    EXECUTE format('CREATE TRIGGER "cache_bump_upd" AFTER UPDATE ON %I REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows '
      'FOR EACH STATEMENT EXECUTE FUNCTION "cache_bump_update"(%s)', "t",
      (SELECT string_agg(quote_literal(c), ', ') FROM unnest("counters") c));
  END IF;
END $$;

DO $$
DECLARE
  r RECORD;
BEGIN
  FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = 'public'
      AND tablename NOT IN ('_prisma_migrations', 'cache_versions', 'cache_bumps') ORDER BY tablename LOOP
    PERFORM "cache_track"(r.tablename, CASE r.tablename
      WHEN 'download' THEN ARRAY['downloadCount', 'viewCount']
      WHEN 'version' THEN ARRAY['downloadCount']
      WHEN 'file' THEN ARRAY['downloadCount']
      WHEN 'api_key' THEN ARRAY['lastUsedAt']
      WHEN 'download_daily_stats' THEN ARRAY['*']
    END);
  END LOOP;
END $$;
