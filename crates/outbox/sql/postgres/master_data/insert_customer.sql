INSERT INTO customers (rfc, nombre, cp, regimen, uso, forma_pago, metodo_pago, emails,
                       created_at_ms, updated_at_ms, actor, actor_role)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11)
RETURNING id
