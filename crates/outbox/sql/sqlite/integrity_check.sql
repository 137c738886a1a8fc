PRAGMA integrity_check(100)
