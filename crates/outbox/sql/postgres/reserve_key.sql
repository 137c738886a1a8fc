-- Reserve an idempotency key for $4 until $5: a new key, or a reservation whose lease has
-- expired at $6. Returns a row only when the reservation was granted.
INSERT INTO intake_keys (idempotency_key, sale_id, request_sha256, state, lease_owner, lease_until_ms, sale_ref, created_at_ms)
VALUES ($1, $2, $3, 'reserved', $4, $5, NULL, $6)
ON CONFLICT (idempotency_key) DO UPDATE SET
    sale_id = excluded.sale_id,
    request_sha256 = excluded.request_sha256,
    lease_owner = excluded.lease_owner,
    lease_until_ms = excluded.lease_until_ms,
    created_at_ms = excluded.created_at_ms
WHERE intake_keys.state = 'reserved' AND intake_keys.lease_until_ms <= $6
RETURNING lease_owner
