-- The typo fallback's lexicon (src/db/search.ts): the distinct words of download titles, each with its deletion
-- neighbourhood (the word with one letter left out, every way), so that the words one typo away from a query word
-- are found through an index instead of by comparing the query with every title. Two words are one typo apart
-- (a letter dropped, doubled or changed, or two neighbouring letters swapped) when one is in the other's
-- neighbourhood or their neighbourhoods share a string. Kept by triggers in the transaction of the write, so a new
-- download's words are there when its create returns. Words are only added: a word whose last title changed or went
-- stays (it then corrects a typo towards a word that matches no title, which costs nothing but a term).

-- The words of a title as the lexicon and the fallback split them: lower case without accents (dcs_fold), the text
-- search parser's word tokens (letters and digits only, so a word is always safe in a tsquery's text; the parts of a
-- hyphenated word count as words), at most 60 characters; each once, with the place it first appears (n). A plain
-- SQL function, not strict: the planner inlines it into the statement that calls it.
CREATE FUNCTION dcs_title_words(title TEXT) RETURNS TABLE (word TEXT, n BIGINT) LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT t.token, min(t.n) FROM ts_parse('default', dcs_fold(title)) WITH ORDINALITY t(tokid, token, n)
   WHERE t.tokid IN (1, 2, 3, 9, 10, 11, 22) AND length(t.token) <= 60 GROUP BY t.token $$;

-- A word with one letter left out, every way (distinct).
CREATE FUNCTION dcs_deletes(word TEXT) RETURNS TEXT[] LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS
$$ SELECT coalesce(array_agg(DISTINCT left(word, i - 1) || substr(word, i + 1)), '{}')
   FROM generate_series(1, length(word)) i $$;

CREATE TABLE "search_word" (
  "word" TEXT NOT NULL,
  "deletes" TEXT[] NOT NULL,
  CONSTRAINT "search_word_pkey" PRIMARY KEY ("word")
);
CREATE INDEX "search_word_deletes_idx" ON "search_word" USING gin ("deletes");

-- New words of inserted titles, once per statement; in one order, so that two writers adding the same new words
-- wait for each other instead of deadlocking.
CREATE FUNCTION dcs_search_words_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_word (word, deletes)
    SELECT x.word, dcs_deletes(x.word) FROM (SELECT DISTINCT w.word FROM new_rows n, dcs_title_words(n.title) w) x
    ORDER BY x.word
  ON CONFLICT (word) DO NOTHING;
  RETURN NULL;
END $$;

CREATE FUNCTION dcs_search_words_retitled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_word (word, deletes)
    SELECT w.word, dcs_deletes(w.word) FROM dcs_title_words(NEW.title) w ORDER BY w.word
  ON CONFLICT (word) DO NOTHING;
  RETURN NULL;
END $$;

CREATE TRIGGER download_search_words_ins AFTER INSERT ON "download" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION dcs_search_words_inserted();
CREATE TRIGGER download_search_words_upd AFTER UPDATE OF title ON "download"
  FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title) EXECUTE FUNCTION dcs_search_words_retitled();

-- The words of the existing titles.
INSERT INTO search_word (word, deletes)
  SELECT x.word, dcs_deletes(x.word) FROM (SELECT DISTINCT w.word FROM download d, dcs_title_words(d.title) w) x;

SELECT cache_track('search_word', NULL);

-- The titles' words, for the fallback's candidates: the words of dcs_title_words (folded, not stemmed: corrections
-- are words as titles spell them, so the index does not depend on SEARCH_LANGUAGE), a small index in place of the
-- titles' trigram index, which the fallback no longer reads (it compared the query with every title).
CREATE INDEX "download_title_words_idx" ON "download" USING gin (to_tsvector('simple', dcs_fold(title)));
DROP INDEX "download_title_trgm_idx";
