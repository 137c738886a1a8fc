-- The cancellations of an invoice with the decision each carries out, oldest first.
SELECT c.id, c.uuid, c.pac, c.motivo, c.folio_sustitucion, c.prediction, c.state, c.outcome, c.outcome_detail,
       c.tries_count, c.next_try_at_ms, c.created_at_ms, c.updated_at_ms, d.note, d.actor, d.actor_role
FROM cancellations c
JOIN decisions d ON d.id = c.decision_id
WHERE c.invoice_id = $1
ORDER BY c.id
