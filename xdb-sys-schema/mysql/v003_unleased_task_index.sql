-- XDB system tables, version 3 (MySQL 8 / MariaDB): finding due work without walking
-- leases. Claiming and "when is the next task due" look for unleased tasks in fire_at
-- order; MySQL has no partial indexes, so unleased tasks are the `lease_owner IS NULL`
-- prefix of this one. Re-runnable: the installer takes "duplicate key name" for done.
CREATE INDEX xdb_sys_tasks_unleased_by_fire_at ON xdb_sys_tasks (lease_owner, fire_at);
-- Leases that ran out (their instance died), found without visiting the live ones.
CREATE INDEX xdb_sys_tasks_by_lease_expiry ON xdb_sys_tasks (lease_expires_at);
