-- One SAT request.
SELECT * FROM sat_requests WHERE id = ?1
