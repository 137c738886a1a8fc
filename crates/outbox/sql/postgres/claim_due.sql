-- Claims up to $4 invoices for worker $1 in one statement: a lease until $3 and a new fencing
-- token. Claimable: pending rows that are due, and rows of any state whose cached verdict is
-- older than their facts (a late answer landed after the last verdict). A row whose lease
-- expired (its worker died) is claimable again. Rows another worker is claiming right now are
-- skipped (FOR UPDATE SKIP LOCKED), so workers never wait on each other; the row lock taken
-- here also re-checks the lease on the latest version of each row.
-- The claim defers its change notifications (migration 0019): `deferred` turns the setting on
-- for this statement's transaction before any row is updated (the triggers fire at its end),
-- and the claimer sends them after the commit (send_changes, store/postgres.rs).
WITH deferred AS MATERIALIZED (
    SELECT set_config('timbra.defer_notify', 'on', true) AS defer_notify),
due AS (
    SELECT id FROM invoices
    WHERE ((state = 'pending' AND next_try_at_ms <= $2) OR verdict_version < facts_version)
      AND (lease_until_ms IS NULL OR lease_until_ms <= $2)
    ORDER BY next_try_at_ms NULLS FIRST, id
    LIMIT $4
    FOR UPDATE SKIP LOCKED)
UPDATE invoices i
SET lease_owner = $1, lease_until_ms = $3, fencing_token = i.fencing_token + 1
FROM due, deferred
WHERE i.id = due.id AND deferred.defer_notify = 'on'
RETURNING i.id, i.fencing_token
