-- After a restore: every serie-folio the database moved aside gave a sale (it may have been
-- stamped after the backup, so it exists at SAT) is never handed out again in the restored
-- one. Run with the file moved aside attached as `antes`; ?1 is now. A folio the restored
-- database has as a sale's is left alone; one it has free or held is held for good.
INSERT INTO folios (serie, folio, number, hold_owner, hold_until_ms)
SELECT COALESCE(i.serie, ''), i.folio,
       CASE WHEN i.folio <> '' AND i.folio NOT GLOB '*[^0-9]*' AND length(i.folio) <= 15 THEN CAST(i.folio AS INTEGER) END,
       'restauracion', 9223372036854775807
FROM antes.invoices i
JOIN antes.sales s ON s.id = i.sale_ref
WHERE i.folio IS NOT NULL AND json_extract(s.body, '$.ticket') IS NOT 1
ON CONFLICT (serie, folio) DO UPDATE SET hold_owner = 'restauracion', hold_until_ms = 9223372036854775807
WHERE folios.sale_ref IS NULL
