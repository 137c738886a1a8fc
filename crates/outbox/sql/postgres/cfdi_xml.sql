-- The stamped XML of a CFDI, by UUID (any case).
SELECT xml FROM cfdis WHERE uuid = upper($1)
