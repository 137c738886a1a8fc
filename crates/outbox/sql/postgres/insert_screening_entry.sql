INSERT INTO screening_entries (list_id, line_no, rfc, nombre, situacion, fecha_situacion) VALUES ($1, $2, $3, $4, $5, $6)
