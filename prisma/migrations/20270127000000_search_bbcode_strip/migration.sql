-- BB code without its tags, as migration 20270101000000_search defines it, answered the same, several times faster:
-- the bounded repetitions of its patterns ({0,200}: a tag of at most 200 characters) make the regular expression
-- engine carry 200 states along every character (65 µs for a description of 110 characters, 530 µs for one of 900),
-- which a search pays for every highlighted description and a write for every document it makes. A tag's text holds
-- no bracket, so where no run of text between brackets is longer than 200 characters (nearly every text; the check
-- splits at brackets, without a regular expression) the bound cannot decide a match, and the patterns without it
-- replace the same tags. Each step checks the text it replaces in (removing closing tags joins runs); a text that
-- fails the check goes through the bounded patterns as before. PL/pgSQL: a SQL function with these steps is not
-- inlined, and its executor costs more than the bound.
CREATE OR REPLACE FUNCTION dcs_bbcode_strip(body TEXT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT AS
$$
DECLARE
  t TEXT;
BEGIN
  IF length(body) <= 200 OR NOT EXISTS (
      SELECT 1 FROM unnest(string_to_array(translate(body, '[', ']'), ']')) r WHERE length(r) > 200) THEN
    t := regexp_replace(body, '\[/[A-Za-z*][^\[\]]*\]', '', 'g');
  ELSE
    t := regexp_replace(body, '\[/[A-Za-z*][^\[\]]{0,200}\]', '', 'g');
  END IF;
  IF length(t) <= 200 OR NOT EXISTS (
      SELECT 1 FROM unnest(string_to_array(translate(t, '[', ']'), ']')) r WHERE length(r) > 200) THEN
    t := regexp_replace(t, '\[[A-Za-z*][^\[\]]*\]', ' ', 'g');
  ELSE
    t := regexp_replace(t, '\[[A-Za-z*][^\[\]]{0,200}\]', ' ', 'g');
  END IF;
  RETURN btrim(regexp_replace(t, '[ \t]+', ' ', 'g'));
END
$$;
