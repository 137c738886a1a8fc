-- Every shared setting (the diagnostic ZIP lists them, redacted).
SELECT key, value FROM settings ORDER BY key
