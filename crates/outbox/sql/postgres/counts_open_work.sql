-- What waits for the contador beside the badges: likeness candidates not decided yet, and
-- cancellation requests not final yet.
SELECT (SELECT COUNT(*) FROM duplicate_candidates d
        WHERE NOT EXISTS (SELECT 1 FROM decisions x WHERE x.group_key = 'candidate-' || d.id)) AS open_candidates,
       (SELECT COUNT(*) FROM cancellations WHERE state <> 'final') AS pending_cancellations
