SELECT (EXISTS (SELECT 1 FROM cancellations WHERE state <> 'final' AND next_try_at_ms < $1))::int::bigint
