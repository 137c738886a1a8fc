-- Each RFC of the JSON array $2 with an entry in list $1: the first line that names it —
-- `screening_lookup` for a whole bulk-intake batch in one query.
SELECT DISTINCT ON (rfc) line_no, rfc, nombre, situacion, fecha_situacion
FROM screening_entries
WHERE list_id = $1 AND rfc IN (SELECT jsonb_array_elements_text($2::jsonb))
ORDER BY rfc, line_no
