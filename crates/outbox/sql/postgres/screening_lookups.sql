-- Each RFC of the JSON array $2 with an entry in list $1: the first line that names it —
-- `screening_lookup` for a whole bulk-intake batch in one query, the same lookup per RFC.
SELECT x.*
FROM jsonb_array_elements_text($2::jsonb) AS wanted (rfc)
CROSS JOIN LATERAL (
    SELECT line_no, rfc, nombre, situacion, fecha_situacion
    FROM screening_entries
    WHERE list_id = $1 AND rfc = wanted.rfc
    ORDER BY line_no
    LIMIT 1
) x
