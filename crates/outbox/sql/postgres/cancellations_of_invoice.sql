SELECT id, decision_id, invoice_id, cfdi_id, uuid, pac, motivo, folio_sustitucion, needs_acceptance, prediction, state,
       outcome, outcome_detail, fencing_token, next_try_at_ms, tries_count, created_at_ms, updated_at_ms
FROM cancellations
WHERE invoice_id = $1
ORDER BY id
