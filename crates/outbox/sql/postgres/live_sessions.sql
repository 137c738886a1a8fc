-- Connections of Timbra processes (application_name 'timbra') to this database, this one included.
SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'timbra'
