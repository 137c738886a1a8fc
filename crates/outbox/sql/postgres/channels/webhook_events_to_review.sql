-- Incoming events received since $1 that did not become a sale (unmapped, invalid, conflict,
-- ignored), per source, status and reason code: what a person should look at.
SELECT source, status, (reason::jsonb ->> 'code') AS reason_code, COUNT(*) AS n, MAX(received_at_ms) AS last_ms
FROM webhook_events
WHERE status IN ('unmapped', 'invalid', 'conflict', 'ignored') AND received_at_ms >= $1
GROUP BY source, status, reason_code
ORDER BY source, status, reason_code NULLS FIRST
