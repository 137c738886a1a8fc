-- One bulk-intake record in one statement (PostgreSQL only: data-modifying CTEs), writing what
-- `record_sale_in`'s statements write — the key (reserved and settled at once, or this owner's
-- reservation settled), the sale, its serie-folio, the invoice, attempt #1 and its event — or
-- nothing. Every write hangs on `new_sale`, which is written only when the statement's snapshot
-- shows the key, the sale_id and the folio all free for this record (the checks those
-- statements make). The row returned says which check failed, or, when the sale was written,
-- whether the key and the folio were written too: a concurrent writer can take either between
-- the snapshot and the write, and then the caller must undo the whole transaction.
--
-- $1 idempotency key, $2 sale_id, $3 the sale's body_sha256, $4 reservation owner,
-- $5 claim the key here (bulk intake) or settle a reservation made before, $6 the claim's now,
-- $7 folio use ('none', 'held', 'brought'), $8 serie, $9 folio, $10 its hold owner,
-- $11 kind, $12 occurred_at, $13 body, $14 source, $15 at_ms, $16 actor, $17 actor_role,
-- $18–$29 the invoice (serie, folio, receptor_rfc, receptor_nombre, total, moneda, state, badge,
-- attempt_no, next_try_at_ms, fecha, fecha_deadline_ms), $30–$42 attempt #1 (reason,
-- previous_attempt_id, pac, body_format, body, body_sha256, fecha, fecha_utc_ms, fecha_source,
-- pac_idempotency_key, mapping_version, emisor_settings_id, no_certificado), $43 its
-- pac_identity, $44 the event's kind, $45 its detail.
WITH
key_ok AS (
    SELECT CASE WHEN $5 THEN NOT EXISTS (
                    SELECT 1 FROM intake_keys
                    WHERE idempotency_key = $1 AND (state = 'reserved' AND lease_until_ms <= $6) IS NOT TRUE)
                ELSE EXISTS (
                    SELECT 1 FROM intake_keys
                    WHERE idempotency_key = $1 AND state = 'reserved' AND lease_owner = $4)
           END AS ok
),
sale_free AS (
    SELECT NOT EXISTS (SELECT 1 FROM sales WHERE sale_id = $2) AS ok
),
folio_ok AS (
    SELECT CASE $7
               WHEN 'held' THEN EXISTS (
                   SELECT 1 FROM folios
                   WHERE serie = $8 AND folio = $9 AND hold_owner = $10 AND sale_ref IS NULL)
               WHEN 'brought' THEN NOT EXISTS (
                   SELECT 1 FROM folios
                   WHERE serie = $8 AND folio = $9 AND (sale_ref IS NULL AND hold_until_ms <= $15) IS NOT TRUE)
               ELSE TRUE
           END AS ok
),
new_sale AS (
    INSERT INTO sales (sale_id, kind, occurred_at, body, body_sha256, source, recorded_at_ms, actor, actor_role)
    SELECT $2, $11, $12, $13, $3, $14, $15, $16, $17
    FROM key_ok, sale_free, folio_ok
    WHERE key_ok.ok AND sale_free.ok AND folio_ok.ok
    ON CONFLICT (sale_id) DO NOTHING
    RETURNING id
),
claimed_key AS (
    INSERT INTO intake_keys (idempotency_key, sale_id, request_sha256, state, lease_owner, lease_until_ms, sale_ref, created_at_ms)
    SELECT $1, $2, $3, 'recorded', NULL, NULL, new_sale.id, $6
    FROM new_sale
    WHERE $5
    ON CONFLICT (idempotency_key) DO UPDATE SET
        sale_id = excluded.sale_id,
        request_sha256 = excluded.request_sha256,
        state = 'recorded',
        lease_owner = NULL,
        lease_until_ms = NULL,
        sale_ref = excluded.sale_ref,
        created_at_ms = excluded.created_at_ms
    WHERE intake_keys.state = 'reserved' AND intake_keys.lease_until_ms <= $6
    RETURNING 1
),
settled_key AS (
    UPDATE intake_keys
    SET state = 'recorded', sale_ref = new_sale.id, lease_owner = NULL, lease_until_ms = NULL
    FROM new_sale
    WHERE NOT $5 AND intake_keys.idempotency_key = $1 AND intake_keys.state = 'reserved' AND intake_keys.lease_owner = $4
    RETURNING 1
),
held_folio AS (
    UPDATE folios SET sale_ref = new_sale.id, hold_owner = NULL, hold_until_ms = NULL
    FROM new_sale
    WHERE $7 = 'held' AND folios.serie = $8 AND folios.folio = $9 AND folios.hold_owner = $10 AND folios.sale_ref IS NULL
    RETURNING 1
),
brought_folio AS (
    INSERT INTO folios (serie, folio, number, sale_ref)
    SELECT $8, $9, CASE WHEN $9 ~ '^[0-9]{1,15}$' THEN $9::BIGINT END, new_sale.id
    FROM new_sale
    WHERE $7 = 'brought'
    ON CONFLICT (serie, folio) DO UPDATE SET sale_ref = excluded.sale_ref, hold_owner = NULL, hold_until_ms = NULL
    WHERE folios.sale_ref IS NULL AND folios.hold_until_ms <= $15
    RETURNING 1
),
new_invoice AS (
    INSERT INTO invoices (
        sale_ref, sale_id, kind, serie, folio, receptor_rfc, receptor_nombre, total, moneda,
        state, badge, state_reason, current_attempt_no, attempts_count, tries_count, next_try_at_ms,
        fecha, fecha_deadline_ms, created_at_ms, updated_at_ms)
    SELECT new_sale.id, $2, $11, $18, $19, $20, $21, $22, $23, $24, $25, NULL, $26, 1, 0, $27, $28, $29, $15, $15
    FROM new_sale
    RETURNING id
),
new_attempt AS (
    INSERT INTO attempts (
        invoice_id, attempt_no, reason, previous_attempt_id, pac, body_format, body, body_sha256,
        fecha, fecha_utc_ms, fecha_source, pac_idempotency_key, mapping_version, emisor_settings_id,
        no_certificado, created_at_ms, actor, actor_role, pac_identity)
    SELECT new_invoice.id, $26, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $15, $16, $17, $43
    FROM new_invoice
    RETURNING id
),
new_event AS (
    INSERT INTO timeline_events (invoice_id, attempt_id, kind, detail, at_ms, actor, actor_role)
    SELECT new_invoice.id, new_attempt.id, $44, $45, $15, $16, $17
    FROM new_invoice, new_attempt
    RETURNING 1
)
SELECT key_ok.ok AS key_ok,
       sale_free.ok AS sale_free,
       folio_ok.ok AS folio_ok,
       (SELECT id FROM new_sale) AS sale_ref,
       (SELECT COUNT(*) FROM claimed_key) + (SELECT COUNT(*) FROM settled_key) AS keys_written,
       (SELECT COUNT(*) FROM held_folio) + (SELECT COUNT(*) FROM brought_folio) AS folios_written,
       (SELECT id FROM new_invoice) AS invoice_id,
       (SELECT id FROM new_attempt) AS attempt_id,
       (SELECT COUNT(*) FROM new_event) AS events_written
FROM key_ok, sale_free, folio_ok
