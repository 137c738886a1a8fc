-- A new SAT request, not sent yet ('nueva'); the partial unique index refuses a second live one
-- with the same parameters, and a trigger any after SAT answered 5002 or 5005 for them.
INSERT INTO sat_requests (parent_id, direction, tipo, desde, hasta, params_key, state, next_try_at_ms, created_at_ms, updated_at_ms,
    actor, actor_role)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'nueva', ?7, ?7, ?7, ?8, ?9)
RETURNING id
