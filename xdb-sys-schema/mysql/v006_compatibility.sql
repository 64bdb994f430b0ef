-- XDB system tables, version 6 (MySQL 8 / MariaDB): the schema says which services run
-- on it. With each version the installer records the oldest schema version whose
-- services still work on this one, and the release that installed it, so that during a
-- rolling upgrade services of the previous release keep running (and restart) on a
-- newer, additive schema, and refuse one that removed what they use (docs/upgrades.md).
-- Nullable columns, added in place without copying the table (ALGORITHM=INSTANT).
-- Re-runnable: the installer takes "duplicate column name" for done.
ALTER TABLE xdb_sys_schema_version ADD COLUMN oldest_compatible_version INT NULL;
ALTER TABLE xdb_sys_schema_version ADD COLUMN installed_by VARCHAR(64) NULL;

-- An async instance states how long a silence of its heartbeat means it is dead; its
-- peers release its leases after that. Rows without it (API instances, and async
-- instances of releases before this one, which heartbeat every 5 s) are never judged,
-- so a rolling upgrade does not take leases from old instances that are alive.
ALTER TABLE xdb_sys_service_instances ADD COLUMN liveness_timeout_ms INT NULL;
