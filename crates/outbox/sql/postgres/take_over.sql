-- An operator acts on an invoice: a new fencing token fences out any worker still on it, and
-- the row is leased to the action (owner $3, until $4) so that no drain claims it before the
-- action's closing verdict releases it.
UPDATE invoices
SET fencing_token = fencing_token + 1, lease_owner = $3, lease_until_ms = $4, updated_at_ms = $2
WHERE id = $1
RETURNING fencing_token
