-- The typo fallback's query of title words (src/modules/downloads/search.ts) as a function, the same steps as the
-- search statement's CTEs held: planned once per connection (PL/pgSQL keeps its statements' plans), where every search
-- statement planned them again, whether its fallback ran or not (it runs only when the exact matches are fewer than the
-- page). The query's words (the first max_words, stop words left out), each as typed when it is a title word (the
-- lexicon search_word), or one of the title words one typo away from it (at most max_corrections, the most similar
-- first, the word itself left out), or, when it is no title word and the last word typed as a prefix (prefix_word,
-- folded; NULL when there is none), the start of a word; a word with none of these is left out. Titles holding every
-- word (two words or fewer) or all of them but one (three or more) match the answer, a tsquery of config `simple` over
-- the titles' folded words (download_title_words_idx); NULL when no word is left. The search statement names
-- search_word beside the call, so that the read cache counts the table the answer depends on.
CREATE FUNCTION dcs_search_typo_query(query_text TEXT, prefix_word TEXT, max_words INTEGER, max_corrections INTEGER)
RETURNS tsquery LANGUAGE plpgsql STABLE PARALLEL SAFE AS
$$
DECLARE
  result tsquery;
BEGIN
  WITH typo_words AS MATERIALIZED (
    SELECT w.word, w.word = prefix_word AS prefix, dcs_deletes(w.word) AS deletes,
      EXISTS (SELECT 1 FROM search_word s WHERE s.word = w.word) AS known
    FROM dcs_title_words(query_text) w
    WHERE to_tsvector('dcs_search', w.word) <> ''::tsvector
    ORDER BY w.n LIMIT max_words),
  typo_alts AS MATERIALIZED (
    SELECT t.word, '(' || concat_ws(' | ',
        CASE WHEN t.prefix AND NOT t.known THEN t.word || ':*' END,
        CASE WHEN t.known THEN t.word END,
        (SELECT string_agg(n.word, ' | ') FROM (
           SELECT s.word FROM search_word s
           WHERE length(t.word) >= 3
             AND (s.deletes && (t.deletes || t.word) OR s.word = ANY(t.deletes)) AND s.word <> t.word
             AND to_tsvector('dcs_search', s.word) <> ''::tsvector
           ORDER BY similarity(s.word, t.word) DESC, s.word LIMIT max_corrections) n)) || ')' AS alts
    FROM typo_words t WHERE t.prefix OR t.known OR length(t.word) >= 3),
  typo_terms AS MATERIALIZED (SELECT * FROM typo_alts WHERE alts <> '()')
  SELECT to_tsquery('simple', CASE WHEN (SELECT count(*) FROM typo_terms) <= 2
      THEN (SELECT string_agg(alts, ' & ') FROM typo_terms)
      ELSE (SELECT string_agg('(' || (SELECT string_agg(b.alts, ' & ') FROM typo_terms b WHERE b.word <> a.word) || ')', ' | ')
            FROM typo_terms a) END)
  INTO result;
  RETURN result;
END
$$;
