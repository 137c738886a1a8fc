-- Which invoice a CFDI (by UUID, any case) is recorded for.
SELECT invoice_id FROM cfdis WHERE uuid = upper($1)
