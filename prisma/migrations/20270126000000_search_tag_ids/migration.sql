-- The ids of a download's tags on its row (src/modules/downloads/search.ts), so that a search's tag facet counts the
-- tags of its results from the rows it has read already (unnest), instead of looking each result up in download_tag
-- (1,000 index lookups for a search at the bound of its results). Kept by the trigger that rewrites the search
-- documents of the downloads a change of tags touched, in the write's transaction; ordered, without duplicates.
-- Nullable for the Prisma client (which cannot create rows of a model with a required column it does not support);
-- NULL and '{}' both mean no tags.
ALTER TABLE "download" ADD COLUMN "tagIds" INTEGER[] DEFAULT '{}';

CREATE FUNCTION dcs_download_tag_ids(download_id INTEGER) RETURNS INTEGER[] LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(x."tagId" ORDER BY x."tagId"), '{}') FROM download_tag x WHERE x."downloadId" = download_id $$;

CREATE OR REPLACE FUNCTION dcs_download_tags_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE download d SET "searchVector" = dcs_download_search_vector(d.title, d."tagLine", d.description,
      dcs_download_tag_text(d.id)), "tagIds" = dcs_download_tag_ids(d.id)
      WHERE d.id IN (SELECT DISTINCT "downloadId" FROM added_tags);
  ELSE
    UPDATE download d SET "searchVector" = dcs_download_search_vector(d.title, d."tagLine", d.description,
      dcs_download_tag_text(d.id)), "tagIds" = dcs_download_tag_ids(d.id)
      WHERE d.id IN (SELECT DISTINCT "downloadId" FROM removed_tags);
  END IF;
  RETURN NULL;
END $$;

-- Existing downloads with tags (the others hold the default).
UPDATE download d SET "tagIds" = t.ids
  FROM (SELECT "downloadId", array_agg("tagId" ORDER BY "tagId") AS ids FROM download_tag GROUP BY 1) t
  WHERE d.id = t."downloadId";
