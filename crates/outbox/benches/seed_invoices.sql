-- Seeds ?1 invoices for the query benchmarks: a sale, an invoice, attempt #1 (a small body)
-- and a timeline event each, one second apart from ?2 (ms). States and badges are spread
-- as a busy outbox would have them; stamped rows get a UUID; receptors repeat every 5,000.
-- Statements are separated by lines that read "-- next".
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
INSERT INTO sales (sale_id, kind, occurred_at, body, body_sha256, source, recorded_at_ms, actor, actor_role)
SELECT 'bench-' || printf('%07d', i), 'ingreso', '2026-11-29T12:00:00', ?3, 'x', 'bench', ?2 + i * 1000, 'bench', 'sistema'
FROM n;
-- next
INSERT INTO invoices (
    sale_ref, sale_id, kind, serie, folio, receptor_rfc, receptor_nombre, total, moneda, state, badge,
    current_attempt_no, attempts_count, tries_count, next_try_at_ms, uuid, fecha, fecha_deadline_ms, created_at_ms, updated_at_ms)
SELECT id, sale_id, 'ingreso', 'F', CAST(id AS TEXT), 'R' || printf('%011d', id % 5000), 'CLIENTE ' || (id % 5000), '116.00', 'MXN',
       CASE WHEN id % 10 < 7 THEN 'stamped' WHEN id % 10 < 9 THEN 'pending' ELSE 'held' END,
       CASE WHEN id % 10 < 7 THEN 'timbrada' WHEN id % 10 = 7 THEN 'pendiente' WHEN id % 10 = 8 THEN 'reanudar' ELSE 'reprocesar' END,
       1, 1, 1, recorded_at_ms,
       CASE WHEN id % 10 < 7 THEN printf('%08X-0000-4000-8000-%012d', id, id) END,
       '2026-11-29T12:00:00', recorded_at_ms + 259200000, recorded_at_ms, recorded_at_ms
FROM sales
WHERE source = 'bench';
-- next
INSERT INTO attempts (
    invoice_id, attempt_no, reason, pac, body_format, body, body_sha256, fecha, fecha_utc_ms, fecha_source,
    pac_idempotency_key, mapping_version, created_at_ms, actor, actor_role)
SELECT id, 1, 'initial', 'sandbox', 'xml', CAST('<cfdi/>' AS BLOB), 'x', fecha, created_at_ms, 'occurred_at',
       'bench-' || id, 1, created_at_ms, 'bench', 'sistema'
FROM invoices;
-- next
INSERT INTO timeline_events (invoice_id, attempt_id, kind, detail, at_ms, actor, actor_role)
SELECT invoice_id, id, 'sale_recorded', '{}', created_at_ms, 'bench', 'sistema'
FROM attempts;
