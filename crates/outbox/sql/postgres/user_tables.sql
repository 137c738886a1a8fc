-- The tables in this database's search path (a database with tables but no _sqlx_migrations
-- belongs to someone else).
SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename
