-- XDB system tables, version 3 (PostgreSQL): finding due work without walking leases.
-- Claiming and "when is the next task due" look for unleased tasks in fire_at order; on
-- the fire_at index they had to step over every task in flight (its lease is held)
-- first, a cost that grew with the work in flight. This index holds unleased tasks only.
CREATE INDEX xdb_sys_tasks_unleased_by_fire_at ON xdb_sys_tasks (fire_at)
    WHERE lease_owner IS NULL;
-- Leases that ran out (their instance died), found without visiting the live ones.
CREATE INDEX xdb_sys_tasks_leased_by_expiry ON xdb_sys_tasks (lease_expires_at)
    WHERE lease_owner IS NOT NULL;

-- The task table is a queue: every row is inserted, updated and deleted within moments.
-- Vacuum it after a fixed number of dead rows, not a share of a table that is usually
-- near empty, so index scans do not step over dead entries.
ALTER TABLE xdb_sys_tasks SET (
    autovacuum_vacuum_scale_factor = 0.0,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_analyze_scale_factor = 0.0,
    autovacuum_analyze_threshold = 1000
);
