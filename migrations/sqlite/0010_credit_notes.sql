-- Timbra outbox, SQLite dialect: credit notes (egreso, TipoRelacion 01) linked to the invoices
-- they credit, so the saldo of a PPD invoice subtracts them (crates/cfdi/src/payment.rs says
-- the rule; the balance itself is computed from the stamped XMLs, these rows find the notes and
-- let the "PPD con saldo" list filter count them).
--
-- One row per credit note and invoice it names that this database holds, written in the note's
-- intake transaction. credit_total_minor is the note's total in the invoice currency's minor
-- units when the note names that invoice alone in its currency (then it is applied to the
-- saldo), NULL otherwise (a note naming several invoices does not say how much is whose).
-- invoice_total_minor is the credited invoice's total, for the list filter. Append-only.

CREATE TABLE credit_note_documents (
    id                  INTEGER PRIMARY KEY,
    credit_invoice_id   INTEGER NOT NULL REFERENCES invoices (id),
    invoice_id          INTEGER NOT NULL REFERENCES invoices (id),
    invoice_uuid        TEXT NOT NULL,
    credit_total_minor  INTEGER CHECK (credit_total_minor IS NULL OR credit_total_minor > 0),
    invoice_total_minor INTEGER CHECK (invoice_total_minor IS NULL OR invoice_total_minor > 0),
    created_at_ms       INTEGER NOT NULL,
    UNIQUE (credit_invoice_id, invoice_id),
    CHECK (credit_invoice_id <> invoice_id)
);

CREATE INDEX credit_note_documents_by_invoice ON credit_note_documents (invoice_id, id);

CREATE TRIGGER credit_note_documents_no_update BEFORE UPDATE ON credit_note_documents
BEGIN
    SELECT RAISE(ABORT, 'append-only: credit note documents are never updated');
END;

CREATE TRIGGER credit_note_documents_no_delete BEFORE DELETE ON credit_note_documents
BEGIN
    SELECT RAISE(ABORT, 'append-only: credit note documents are never deleted');
END;

-- Credit notes recorded before this migration: every egreso sale whose relacionados of
-- TipoRelacion 01 name a CFDI held here. Totals in minor units for the two-decimal currencies
-- the notes and invoices are written in (MXN, USD, EUR); otherwise NULL (the balance, read from
-- the XMLs, still applies the note; only the list filter does not count it).
INSERT OR IGNORE INTO credit_note_documents (credit_invoice_id, invoice_id, invoice_uuid, credit_total_minor, invoice_total_minor, created_at_ms)
SELECT n.id, c.invoice_id, c.uuid,
       CASE WHEN n.moneda = i.moneda AND n.moneda IN ('MXN', 'USD', 'EUR')
             AND (SELECT COUNT(*) FROM json_each(s.body, '$.relacionados') r2, json_each(r2.value, '$.uuids') u2
                  WHERE json_extract(r2.value, '$.tipo_relacion') = '01') = 1
            THEN CAST(ROUND(CAST(n.total AS REAL) * 100) AS INTEGER) END,
       CASE WHEN i.moneda IN ('MXN', 'USD', 'EUR') THEN CAST(ROUND(CAST(i.total AS REAL) * 100) AS INTEGER) END,
       n.created_at_ms
FROM invoices n
JOIN sales s ON s.id = n.sale_ref
JOIN json_each(s.body, '$.relacionados') r
JOIN json_each(r.value, '$.uuids') u
JOIN cfdis c ON c.uuid = upper(u.value)
JOIN invoices i ON i.id = c.invoice_id
WHERE n.kind = 'egreso' AND json_extract(r.value, '$.tipo_relacion') = '01' AND c.invoice_id <> n.id
  AND CAST(n.total AS REAL) > 0 AND CAST(i.total AS REAL) > 0;
