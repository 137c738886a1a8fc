-- Where cancellation $1 stands, fenced by $7; releases the lease.
UPDATE cancellations
SET state = $2, outcome = $3, outcome_detail = $4, next_try_at_ms = $5, updated_at_ms = $6,
    lease_owner = NULL, lease_until_ms = NULL
WHERE id = $1 AND fencing_token = $7 AND state <> 'final'
RETURNING cfdi_id, motivo
