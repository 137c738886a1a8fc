-- Every product, by SKU.
SELECT id, sku, descripcion, clave_prod_serv, clave_unidad, unidad, valor_unitario, objeto_imp,
       iva, ieps_tasa, ret_isr_tasa, ret_iva_tasa, created_at_ms, updated_at_ms, actor, actor_role
FROM products
ORDER BY sku, id
