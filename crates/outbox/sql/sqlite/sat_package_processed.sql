-- A downloaded package was read into SAT's record (sat_cfdis): it is not read again.
UPDATE sat_packages SET processed_at_ms = ?2
WHERE id_paquete = ?1 AND processed_at_ms IS NULL
