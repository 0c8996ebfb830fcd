-- Full-text search over downloads (src/db/search.ts). Each download carries its search document, a tsvector of
-- its title (weight A), its tags and tag line (B) and its description with BB code stripped (C), written by
-- triggers in the transaction of the write that changes any of them, so a download is findable the moment its
-- create returns. The text search configuration `dcs_search` folds accents (unaccent) before stemming; the
-- service sets its stemmer to SEARCH_LANGUAGE at start (and then rewrites every document if the language changed).
CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TEXT SEARCH CONFIGURATION dcs_search (COPY = english);
ALTER TEXT SEARCH CONFIGURATION dcs_search
  ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH unaccent, english_stem;

-- The language the stored documents were made with (one row): compared with SEARCH_LANGUAGE at start.
CREATE TABLE "search_setting" (
  "id" INTEGER NOT NULL DEFAULT 1,
  "language" TEXT NOT NULL,
  CONSTRAINT "search_setting_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "search_setting_one_row" CHECK ("id" = 1)
);
INSERT INTO "search_setting" ("id", "language") VALUES (1, 'english');

-- BB code without its tags: what they enclose stays. A closing tag ([/b], [/url]) goes, an opening one ([b],
-- [url=…], [*]) becomes a space (it may separate words: `one[br]two`); runs of spaces become one.
CREATE FUNCTION dcs_bbcode_strip(body TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS
$$ SELECT btrim(regexp_replace(regexp_replace(regexp_replace(body,
     '\[/[A-Za-z*][^\[\]]{0,200}\]', '', 'g'),
     '\[[A-Za-z*][^\[\]]{0,200}\]', ' ', 'g'),
     '[ \t]+', ' ', 'g')) $$;

-- Lower case without accents: the form titles are compared in by the typo fallback (an immutable wrapper, since
-- unaccent itself is only stable: its dictionary could change, which this service never does).
CREATE FUNCTION dcs_fold(body TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS
$$ SELECT lower(public.unaccent('public.unaccent'::regdictionary, body)) $$;

CREATE FUNCTION dcs_download_search_vector(title TEXT, tag_line TEXT, description TEXT, tags TEXT)
RETURNS tsvector LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT setweight(to_tsvector('dcs_search', coalesce(title, '')), 'A')
       || setweight(to_tsvector('dcs_search', coalesce(tags, '') || ' ' || coalesce(tag_line, '')), 'B')
       || setweight(to_tsvector('dcs_search', dcs_bbcode_strip(coalesce(description, ''))), 'C') $$;

-- The tags of a download as one text (what the document's weight B holds beside the tag line).
CREATE FUNCTION dcs_download_tag_text(download_id INTEGER) RETURNS TEXT LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT string_agg(g.name, ' ' ORDER BY g.name) FROM download_tag x JOIN tag g ON g.id = x."tagId"
   WHERE x."downloadId" = download_id $$;

ALTER TABLE "download" ADD COLUMN "searchVector" tsvector;

CREATE FUNCTION dcs_download_search_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW."searchVector" := dcs_download_search_vector(NEW.title, NEW."tagLine", NEW.description,
    dcs_download_tag_text(NEW.id));
  RETURN NEW;
END $$;

CREATE TRIGGER download_search_row BEFORE INSERT OR UPDATE OF title, "tagLine", description ON "download"
  FOR EACH ROW EXECUTE FUNCTION dcs_download_search_row();

-- A change of tags rewrites the documents of the downloads it touched, once per statement.
CREATE FUNCTION dcs_download_tags_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE download d SET "searchVector" = dcs_download_search_vector(d.title, d."tagLine", d.description,
      dcs_download_tag_text(d.id)) WHERE d.id IN (SELECT DISTINCT "downloadId" FROM added_tags);
  ELSE
    UPDATE download d SET "searchVector" = dcs_download_search_vector(d.title, d."tagLine", d.description,
      dcs_download_tag_text(d.id)) WHERE d.id IN (SELECT DISTINCT "downloadId" FROM removed_tags);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER download_tag_search_added AFTER INSERT ON "download_tag" REFERENCING NEW TABLE AS added_tags
  FOR EACH STATEMENT EXECUTE FUNCTION dcs_download_tags_changed();
CREATE TRIGGER download_tag_search_removed AFTER DELETE ON "download_tag" REFERENCING OLD TABLE AS removed_tags
  FOR EACH STATEMENT EXECUTE FUNCTION dcs_download_tags_changed();

-- Existing downloads get their documents.
UPDATE download d SET "searchVector" = dcs_download_search_vector(d.title, d."tagLine", d.description,
  dcs_download_tag_text(d.id));

CREATE INDEX "download_searchVector_idx" ON "download" USING gin ("searchVector");
CREATE INDEX "download_title_trgm_idx" ON "download" USING gin (dcs_fold(title) gin_trgm_ops);
