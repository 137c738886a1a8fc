UPDATE customers
SET rfc = $2, nombre = $3, cp = $4, regimen = $5, uso = $6, forma_pago = $7, metodo_pago = $8,
    emails = $9, updated_at_ms = $10, actor = $11, actor_role = $12
WHERE id = $1
