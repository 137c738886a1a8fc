-- A cancellation's tries, each with the answer its evidence row recorded (none: it left and
-- nothing came back).
SELECT t.id, t.try_no, t.operation, t.started_at_ms,
       (SELECT NULLIF(e.detail::jsonb -> 'answer', 'null'::jsonb)::text FROM evidence e
        WHERE e.invoice_id = c.invoice_id AND e.kind = 'cancellation'
          AND (e.detail::jsonb ->> 'cancellation_try_id') = t.id::text
        ORDER BY e.id DESC LIMIT 1) AS answer
FROM cancellation_tries t
JOIN cancellations c ON c.id = t.cancellation_id
WHERE t.cancellation_id = $1
ORDER BY t.try_no
