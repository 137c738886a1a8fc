-- The Bandeja's search and the Pagos list at real volumes (issue 29).
--
-- A part of the customer's name is found by no index: the search walks the recording-time
-- range newest first. This index is that walk with the columns it filters on beside each
-- entry, so a row is read from the table only when it matches (list_customer.sql names it).
CREATE INDEX invoices_by_created_customer ON invoices (created_at_ms, id, receptor_nombre, receptor_rfc, state, badge);

-- The Pagos list: payments newest first without walking every invoice.
CREATE INDEX invoices_payments_by_created ON invoices (created_at_ms, id) WHERE kind = 'pago';
