-- Archives an emisor (or brings it back with NULL): hidden from the switcher, still drained.
UPDATE emisores SET archived_at_ms = $2 WHERE rfc = $1
