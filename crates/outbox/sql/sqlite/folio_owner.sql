-- The sale that has folio ?2 of serie ?1 (none while it is only held).
SELECT s.sale_id FROM folios f JOIN sales s ON s.id = f.sale_ref WHERE f.serie = ?1 AND f.folio = ?2
