-- The emisores of this (home) database's directory, by RFC (the home itself is not listed).
SELECT rfc, nombre, place, created_at_ms, archived_at_ms
FROM emisores
ORDER BY rfc
