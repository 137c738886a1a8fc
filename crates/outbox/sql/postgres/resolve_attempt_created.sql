-- The attempt produced a CFDI: its resolution (the one mutable part of an attempt) says so.
UPDATE attempts SET resolution = 'created', resolved_at_ms = $2 WHERE id = $1 AND resolution <> 'created'
