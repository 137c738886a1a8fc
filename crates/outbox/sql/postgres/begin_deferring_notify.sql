-- The drain's group transaction (store/postgres/group_commit.rs), in one round trip: its
-- triggers record the invoices it changes in the setting timbra.changed instead of notifying
-- (migration 0019); the writer sends them after the COMMIT (send_changes).
BEGIN; SET LOCAL timbra.defer_notify = 'on'
