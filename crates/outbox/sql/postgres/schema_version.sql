-- The newest migration this database has applied.
SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success
