-- XDB system tables, version 15 (MySQL 8 / MariaDB): fairness keys. A start may name a
-- key (a tenant, a customer) and a weight; each task carries its execution's, so that a
-- claim shares each priority between keys, each served in turn. '' is the key every
-- start without one shares. Services of version 5 keep working on it: they write
-- keyless tasks, and their claims read the index below (which keeps its name, as they
-- name it in their index hints) with a sort.
ALTER TABLE xdb_sys_process_executions ADD COLUMN fairness_key VARCHAR(255) NOT NULL DEFAULT '';
ALTER TABLE xdb_sys_process_executions ADD COLUMN fairness_weight INTEGER NOT NULL DEFAULT 1;
ALTER TABLE xdb_sys_tasks ADD COLUMN fairness_key VARCHAR(255) NOT NULL DEFAULT '';
ALTER TABLE xdb_sys_tasks ADD COLUMN fairness_weight INTEGER NOT NULL DEFAULT 1;
-- Unleased tasks by priority, key and due time: the keyless tasks of a priority are one
-- range (key ''), read in due-time order as before; the keyed ones are walked one key
-- at a time. It replaces the index by priority and due time, so that a task's insert
-- and lease write no more indexes than before.
ALTER TABLE xdb_sys_tasks DROP INDEX xdb_sys_tasks_unleased_by_fire_at,
    ADD INDEX xdb_sys_tasks_unleased_by_fire_at (lease_owner, priority, fairness_key, fire_at);
