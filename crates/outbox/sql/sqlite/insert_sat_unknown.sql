-- A *CFDI desconocido en el SAT* entry (nothing when its UUID is in the queue already).
INSERT INTO sat_unknown_cfdis (uuid, invoice_id, run_id, found_at_ms)
VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (uuid) DO NOTHING
RETURNING uuid
