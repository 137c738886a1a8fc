-- Give up a reservation this owner holds (validation failed after reserving).
DELETE FROM intake_keys
WHERE idempotency_key = $1 AND state = 'reserved' AND lease_owner = $2
