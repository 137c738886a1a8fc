-- An RFC's entry in list $1 (the first line that names it).
SELECT line_no, rfc, nombre, situacion, fecha_situacion
FROM screening_entries
WHERE list_id = $1 AND rfc = $2
ORDER BY line_no
LIMIT 1
