-- An operator acts on an invoice: a new fencing token fences out any worker still on it.
UPDATE invoices
SET fencing_token = fencing_token + 1, lease_owner = NULL, lease_until_ms = NULL, updated_at_ms = $2
WHERE id = $1
RETURNING fencing_token
