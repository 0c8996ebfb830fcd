-- The lexemes of the search documents (src/db/search.ts), so that the last word of a query, matched as a prefix
-- (type-ahead), is looked for as the lexemes it starts instead of as a prefix: the GIN index answers a prefix by
-- collecting every posting of every lexeme it starts into a bitmap before anything else is checked (36,695 postings
-- of `castl:*` at 500,000 downloads: twice the time of the same lexeme looked for exactly, and the other words of
-- the query cannot skip any of them), while exact lexemes are read only as far as the query needs. The prefix matches
-- exactly the lexemes of this table that it starts, as long as the table holds every lexeme of every document: kept
-- by triggers in the transaction of the write that changes a document, so a download is findable by prefix the
-- moment its create returns. Lexemes are only added (one no document holds any longer costs the search a term that
-- matches nothing), except when SEARCH_LANGUAGE changes, which rewrites every document and this table with them.
-- "C" collation: a prefix is a range of the primary key.
CREATE TABLE "search_lexeme" (
  "lexeme" TEXT COLLATE "C" NOT NULL,
  CONSTRAINT "search_lexeme_pkey" PRIMARY KEY ("lexeme")
);

-- New lexemes of inserted documents, once per statement; in one order, so that two writers adding the same new
-- lexemes wait for each other instead of deadlocking.
CREATE FUNCTION dcs_search_lexemes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_lexeme (lexeme)
    SELECT DISTINCT l.lexeme FROM new_rows n, unnest(tsvector_to_array(n."searchVector")) l(lexeme)
    ORDER BY 1
  ON CONFLICT (lexeme) DO NOTHING;
  RETURN NULL;
END $$;

-- A changed document (its title, tag line, description or tags): the lexemes it did not hold before.
CREATE FUNCTION dcs_search_lexemes_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_lexeme (lexeme)
    SELECT l.lexeme FROM unnest(tsvector_to_array(NEW."searchVector")) l(lexeme)
    WHERE NOT (l.lexeme = ANY (coalesce(tsvector_to_array(OLD."searchVector"), '{}')))
    ORDER BY 1
  ON CONFLICT (lexeme) DO NOTHING;
  RETURN NULL;
END $$;

CREATE TRIGGER download_search_lexemes_ins AFTER INSERT ON "download" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION dcs_search_lexemes_inserted();
CREATE TRIGGER download_search_lexemes_upd AFTER UPDATE ON "download"
  FOR EACH ROW WHEN (OLD."searchVector" IS DISTINCT FROM NEW."searchVector") EXECUTE FUNCTION dcs_search_lexemes_changed();

-- The lexemes of the existing documents.
INSERT INTO search_lexeme (lexeme)
  SELECT DISTINCT l.lexeme FROM download d, unnest(tsvector_to_array(d."searchVector")) l(lexeme);

SELECT cache_track('search_lexeme', NULL);
