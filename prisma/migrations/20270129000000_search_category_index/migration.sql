-- The search documents' GIN index with the download's category as its first column (an array of one, which GIN's
-- built-in array support indexes: no extension), in place of the index over the documents alone. A search in a
-- category's subtree (src/modules/downloads/search.ts: `ARRAY["categoryId"] && <the categories>`) then finds its
-- matches in one index scan, where the planner and'ed the documents' bitmap (every download holding the word) with a
-- bitmap of every download in those categories from the (categoryId, lastUpdate, id) btree; a search without a
-- category reads the documents' column of this index as it read the old one.
CREATE INDEX "download_category_search_idx" ON "download" USING gin ((ARRAY["categoryId"]), "searchVector");
DROP INDEX "download_searchVector_idx";
