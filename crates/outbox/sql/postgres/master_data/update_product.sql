UPDATE products
SET sku = $2, descripcion = $3, clave_prod_serv = $4, clave_unidad = $5, unidad = $6, valor_unitario = $7,
    objeto_imp = $8, iva = $9, ieps_tasa = $10, ret_isr_tasa = $11, ret_iva_tasa = $12,
    updated_at_ms = $13, actor = $14, actor_role = $15
WHERE id = $1
