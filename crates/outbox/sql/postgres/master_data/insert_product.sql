INSERT INTO products (sku, descripcion, clave_prod_serv, clave_unidad, unidad, valor_unitario, objeto_imp,
                      iva, ieps_tasa, ret_isr_tasa, ret_iva_tasa, created_at_ms, updated_at_ms, actor, actor_role)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13, $14)
RETURNING id
