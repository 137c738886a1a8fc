-- A claimed request's new state, fenced: nothing changes unless the caller still holds the
-- fencing token it claimed with. ?20 = 1 releases the lease.
UPDATE sat_requests
SET state = ?3, id_solicitud = ?4, cod_estatus = ?5, estado_solicitud = ?6, codigo_estado = ?7, numero_cfdis = ?8, paquetes = ?9,
    message = ?10, query_tries = ?11, lost_queries = ?12, failures = ?13, verifications = ?14, next_try_at_ms = ?15,
    query_sent_at_ms = ?16, accepted_at_ms = ?17, settled_at_ms = ?18, updated_at_ms = ?19,
    lease_owner = CASE WHEN ?20 = 1 THEN NULL ELSE lease_owner END,
    lease_until_ms = CASE WHEN ?20 = 1 THEN NULL ELSE lease_until_ms END
WHERE id = ?1 AND fencing_token = ?2
