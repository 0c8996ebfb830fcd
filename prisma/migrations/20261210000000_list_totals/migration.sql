-- List totals kept by the database itself, in the transaction of every write (API, jobs, CLI, raw SQL, the bench
-- seed), so a list's total is a sum over a few counter rows instead of a count(*) over every matching row.
-- See docs/architecture.md ("List totals").
--
--   download_total     downloads per category, prefix (0: none) and state; table-wide = sum over categories
--   comment_total      comments per download and state
--   comment_total_all  comments per state, in 64 stripes by download id (table-wide totals without a hot row)
--   file_total         files not soft-deleted, per version
--   file_total_all     files not soft-deleted, in 64 stripes by version id
--
-- INSERT and DELETE are counted by statement-level triggers over the transition tables, so a bulk statement (the
-- seed's million-row inserts, a cascade) costs one grouped upsert. UPDATE is counted by row-level triggers whose
-- WHEN clause only fires when a counted column changes, so the frequent updates that leave them alone (view and
-- download counters, last_update, current version) cost nothing. Counter rows are upserted in key order (fewer lock
-- waits that could cross) and removed when they reach zero.

-- No writer may commit between the backfill below and the triggers taking over.
LOCK TABLE "download", "comment", "file" IN SHARE ROW EXCLUSIVE MODE;

-- CreateTable
CREATE TABLE "download_total" (
    "categoryId" INTEGER NOT NULL,
    "prefixKey" INTEGER NOT NULL,
    "state" "DownloadState" NOT NULL,
    "n" BIGINT NOT NULL,

    CONSTRAINT "download_total_pkey" PRIMARY KEY ("categoryId","prefixKey","state")
);

-- CreateTable
CREATE TABLE "comment_total" (
    "downloadId" INTEGER NOT NULL,
    "state" "CommentState" NOT NULL,
    "n" BIGINT NOT NULL,

    CONSTRAINT "comment_total_pkey" PRIMARY KEY ("downloadId","state")
);

-- CreateTable
CREATE TABLE "comment_total_all" (
    "state" "CommentState" NOT NULL,
    "stripe" SMALLINT NOT NULL,
    "n" BIGINT NOT NULL,

    CONSTRAINT "comment_total_all_pkey" PRIMARY KEY ("state","stripe")
);

-- CreateTable
CREATE TABLE "file_total" (
    "versionId" INTEGER NOT NULL,
    "n" BIGINT NOT NULL,

    CONSTRAINT "file_total_pkey" PRIMARY KEY ("versionId")
);

-- CreateTable
CREATE TABLE "file_total_all" (
    "stripe" SMALLINT NOT NULL,
    "n" BIGINT NOT NULL,

    CONSTRAINT "file_total_all_pkey" PRIMARY KEY ("stripe")
);

-- ───────────── downloads

CREATE FUNCTION "download_total_add"("rows" JSONB) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
  -- rows: [{c, p, s, n}]: deltas by category, prefix key and state (a key may repeat)
  INSERT INTO "download_total" AS t ("categoryId", "prefixKey", "state", "n")
  SELECT x.c, x.p, x.s, sum(x.n) FROM jsonb_to_recordset("rows") AS x(c int, p int, s "DownloadState", n bigint)
  GROUP BY 1, 2, 3 HAVING sum(x.n) <> 0 ORDER BY 1, 2, 3
  ON CONFLICT ("categoryId", "prefixKey", "state") DO UPDATE SET "n" = t."n" + excluded."n";
  DELETE FROM "download_total" t USING jsonb_to_recordset("rows") AS x(c int, p int, s "DownloadState", n bigint)
  WHERE t."n" = 0 AND t."categoryId" = x.c AND t."prefixKey" = x.p AND t."state" = x.s;
END $$;

CREATE FUNCTION "download_total_ins"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "download_total" AS t ("categoryId", "prefixKey", "state", "n")
  SELECT "categoryId", coalesce("prefixId", 0), "state", count(*) FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT ("categoryId", "prefixKey", "state") DO UPDATE SET "n" = t."n" + excluded."n";
  RETURN NULL;
END $$;

CREATE FUNCTION "download_total_del"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "download_total_add"(coalesce(jsonb_agg(jsonb_build_object('c', c, 'p', p, 's', s, 'n', -k)), '[]'))
  FROM (SELECT "categoryId" c, coalesce("prefixId", 0) p, "state" s, count(*) k FROM old_rows GROUP BY 1, 2, 3) g;
  RETURN NULL;
END $$;

CREATE FUNCTION "download_total_upd"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "download_total_add"(jsonb_build_array(
    jsonb_build_object('c', OLD."categoryId", 'p', coalesce(OLD."prefixId", 0), 's', OLD."state", 'n', -1),
    jsonb_build_object('c', NEW."categoryId", 'p', coalesce(NEW."prefixId", 0), 's', NEW."state", 'n', 1)));
  RETURN NULL;
END $$;

CREATE FUNCTION "download_total_truncate"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "download_total";
  RETURN NULL;
END $$;

CREATE TRIGGER "download_total_ins" AFTER INSERT ON "download" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "download_total_ins"();
CREATE TRIGGER "download_total_del" AFTER DELETE ON "download" REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "download_total_del"();
CREATE TRIGGER "download_total_upd" AFTER UPDATE ON "download" FOR EACH ROW
  WHEN (OLD."categoryId" IS DISTINCT FROM NEW."categoryId" OR OLD."prefixId" IS DISTINCT FROM NEW."prefixId" OR OLD."state" IS DISTINCT FROM NEW."state")
  EXECUTE FUNCTION "download_total_upd"();
CREATE TRIGGER "download_total_truncate" AFTER TRUNCATE ON "download"
  FOR EACH STATEMENT EXECUTE FUNCTION "download_total_truncate"();

-- ───────────── comments

CREATE FUNCTION "comment_total_add"("rows" JSONB) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
  -- rows: [{d, s, n}]: deltas by download and state (a key may repeat)
  INSERT INTO "comment_total" AS t ("downloadId", "state", "n")
  SELECT x.d, x.s, sum(x.n) FROM jsonb_to_recordset("rows") AS x(d int, s "CommentState", n bigint)
  GROUP BY 1, 2 HAVING sum(x.n) <> 0 ORDER BY 1, 2
  ON CONFLICT ("downloadId", "state") DO UPDATE SET "n" = t."n" + excluded."n";
  DELETE FROM "comment_total" t USING jsonb_to_recordset("rows") AS x(d int, s "CommentState", n bigint)
  WHERE t."n" = 0 AND t."downloadId" = x.d AND t."state" = x.s;
  INSERT INTO "comment_total_all" AS t ("state", "stripe", "n")
  SELECT x.s, (x.d % 64)::smallint, sum(x.n) FROM jsonb_to_recordset("rows") AS x(d int, s "CommentState", n bigint)
  GROUP BY 1, 2 HAVING sum(x.n) <> 0 ORDER BY 1, 2
  ON CONFLICT ("state", "stripe") DO UPDATE SET "n" = t."n" + excluded."n";
END $$;

CREATE FUNCTION "comment_total_ins"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "comment_total" AS t ("downloadId", "state", "n")
  SELECT "downloadId", "state", count(*) FROM new_rows GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("downloadId", "state") DO UPDATE SET "n" = t."n" + excluded."n";
  INSERT INTO "comment_total_all" AS t ("state", "stripe", "n")
  SELECT "state", ("downloadId" % 64)::smallint, count(*) FROM new_rows GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT ("state", "stripe") DO UPDATE SET "n" = t."n" + excluded."n";
  RETURN NULL;
END $$;

CREATE FUNCTION "comment_total_del"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "comment_total_add"(coalesce(jsonb_agg(jsonb_build_object('d', d, 's', s, 'n', -k)), '[]'))
  FROM (SELECT "downloadId" d, "state" s, count(*) k FROM old_rows GROUP BY 1, 2) g;
  RETURN NULL;
END $$;

CREATE FUNCTION "comment_total_upd"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "comment_total_add"(jsonb_build_array(
    jsonb_build_object('d', OLD."downloadId", 's', OLD."state", 'n', -1),
    jsonb_build_object('d', NEW."downloadId", 's', NEW."state", 'n', 1)));
  RETURN NULL;
END $$;

CREATE FUNCTION "comment_total_truncate"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "comment_total";
  DELETE FROM "comment_total_all";
  RETURN NULL;
END $$;

CREATE TRIGGER "comment_total_ins" AFTER INSERT ON "comment" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "comment_total_ins"();
CREATE TRIGGER "comment_total_del" AFTER DELETE ON "comment" REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "comment_total_del"();
CREATE TRIGGER "comment_total_upd" AFTER UPDATE ON "comment" FOR EACH ROW
  WHEN (OLD."downloadId" IS DISTINCT FROM NEW."downloadId" OR OLD."state" IS DISTINCT FROM NEW."state")
  EXECUTE FUNCTION "comment_total_upd"();
CREATE TRIGGER "comment_total_truncate" AFTER TRUNCATE ON "comment"
  FOR EACH STATEMENT EXECUTE FUNCTION "comment_total_truncate"();

-- ───────────── files (only those not soft-deleted are counted)

CREATE FUNCTION "file_total_add"("rows" JSONB) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
  -- rows: [{v, n}]: deltas by version (a version may repeat)
  INSERT INTO "file_total" AS t ("versionId", "n")
  SELECT x.v, sum(x.n) FROM jsonb_to_recordset("rows") AS x(v int, n bigint)
  GROUP BY 1 HAVING sum(x.n) <> 0 ORDER BY 1
  ON CONFLICT ("versionId") DO UPDATE SET "n" = t."n" + excluded."n";
  DELETE FROM "file_total" t USING jsonb_to_recordset("rows") AS x(v int, n bigint)
  WHERE t."n" = 0 AND t."versionId" = x.v;
  INSERT INTO "file_total_all" AS t ("stripe", "n")
  SELECT (x.v % 64)::smallint, sum(x.n) FROM jsonb_to_recordset("rows") AS x(v int, n bigint)
  GROUP BY 1 HAVING sum(x.n) <> 0 ORDER BY 1
  ON CONFLICT ("stripe") DO UPDATE SET "n" = t."n" + excluded."n";
END $$;

CREATE FUNCTION "file_total_ins"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "file_total" AS t ("versionId", "n")
  SELECT "versionId", count(*) FROM new_rows WHERE NOT "isDeleted" GROUP BY 1 ORDER BY 1
  ON CONFLICT ("versionId") DO UPDATE SET "n" = t."n" + excluded."n";
  INSERT INTO "file_total_all" AS t ("stripe", "n")
  SELECT ("versionId" % 64)::smallint, count(*) FROM new_rows WHERE NOT "isDeleted" GROUP BY 1 ORDER BY 1
  ON CONFLICT ("stripe") DO UPDATE SET "n" = t."n" + excluded."n";
  RETURN NULL;
END $$;

CREATE FUNCTION "file_total_del"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "file_total_add"(coalesce(jsonb_agg(jsonb_build_object('v', v, 'n', -k)), '[]'))
  FROM (SELECT "versionId" v, count(*) k FROM old_rows WHERE NOT "isDeleted" GROUP BY 1) g;
  RETURN NULL;
END $$;

CREATE FUNCTION "file_total_upd"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM "file_total_add"(jsonb_build_array(
    jsonb_build_object('v', OLD."versionId", 'n', CASE WHEN OLD."isDeleted" THEN 0 ELSE -1 END),
    jsonb_build_object('v', NEW."versionId", 'n', CASE WHEN NEW."isDeleted" THEN 0 ELSE 1 END)));
  RETURN NULL;
END $$;

CREATE FUNCTION "file_total_truncate"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "file_total";
  DELETE FROM "file_total_all";
  RETURN NULL;
END $$;

CREATE TRIGGER "file_total_ins" AFTER INSERT ON "file" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "file_total_ins"();
CREATE TRIGGER "file_total_del" AFTER DELETE ON "file" REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION "file_total_del"();
CREATE TRIGGER "file_total_upd" AFTER UPDATE ON "file" FOR EACH ROW
  WHEN (OLD."versionId" IS DISTINCT FROM NEW."versionId" OR OLD."isDeleted" IS DISTINCT FROM NEW."isDeleted")
  EXECUTE FUNCTION "file_total_upd"();
CREATE TRIGGER "file_total_truncate" AFTER TRUNCATE ON "file"
  FOR EACH STATEMENT EXECUTE FUNCTION "file_total_truncate"();

-- ───────────── backfill

INSERT INTO "download_total" ("categoryId", "prefixKey", "state", "n")
SELECT "categoryId", coalesce("prefixId", 0), "state", count(*) FROM "download" GROUP BY 1, 2, 3;
INSERT INTO "comment_total" ("downloadId", "state", "n")
SELECT "downloadId", "state", count(*) FROM "comment" GROUP BY 1, 2;
INSERT INTO "comment_total_all" ("state", "stripe", "n")
SELECT "state", ("downloadId" % 64)::smallint, count(*) FROM "comment" GROUP BY 1, 2;
INSERT INTO "file_total" ("versionId", "n")
SELECT "versionId", count(*) FROM "file" WHERE NOT "isDeleted" GROUP BY 1;
INSERT INTO "file_total_all" ("stripe", "n")
SELECT ("versionId" % 64)::smallint, count(*) FROM "file" WHERE NOT "isDeleted" GROUP BY 1;
