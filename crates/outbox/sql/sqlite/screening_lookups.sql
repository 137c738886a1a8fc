-- Each RFC of the JSON array ?2 with an entry in list ?1: the first line that names it —
-- `screening_lookup` for a whole bulk-intake batch in one query.
SELECT line_no, rfc, nombre, situacion, fecha_situacion
FROM (
    SELECT line_no, rfc, nombre, situacion, fecha_situacion,
           ROW_NUMBER() OVER (PARTITION BY rfc ORDER BY line_no) AS n
    FROM screening_entries
    WHERE list_id = ?1 AND rfc IN (SELECT value FROM json_each(?2))
)
WHERE n = 1
