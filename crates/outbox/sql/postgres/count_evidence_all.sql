SELECT COUNT(*) FROM evidence
