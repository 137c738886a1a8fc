SELECT id, rfc, nombre, cp, regimen, uso, forma_pago, metodo_pago, emails,
       created_at_ms, updated_at_ms, actor, actor_role
FROM customers
WHERE id = $1
