-- Turn this owner's reservation into a recorded key pointing at its sale (fenced by owner).
UPDATE intake_keys
SET state = 'recorded', sale_ref = $3, lease_owner = NULL, lease_until_ms = NULL
WHERE idempotency_key = $1 AND state = 'reserved' AND lease_owner = $2
