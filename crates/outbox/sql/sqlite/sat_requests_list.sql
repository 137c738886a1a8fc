-- Every SAT request, the oldest first.
SELECT * FROM sat_requests ORDER BY id
