-- SAT accepted a query whose sender lost its lease meanwhile: the IdSolicitud is a fact and is
-- kept whoever holds the row, as long as the request still waits for its query's answer.
UPDATE sat_requests
SET state = 'aceptada', id_solicitud = ?2, cod_estatus = 5000, accepted_at_ms = ?3, next_try_at_ms = ?3, updated_at_ms = ?3
WHERE id = ?1 AND state = 'enviando' AND id_solicitud IS NULL
