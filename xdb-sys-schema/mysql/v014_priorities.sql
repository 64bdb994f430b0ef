-- XDB system tables, version 14 (MySQL 8 / MariaDB): priorities. A start names a
-- priority, 1 (claimed first) to 5 (last), 3 when it names none; each task carries its
-- execution's, so that claims read due tasks priority by priority. Services of version
-- 5 keep working on it: they write the default, and their claims read the index below
-- (which keeps its name, as they name it in their index hints) with a sort.
ALTER TABLE xdb_sys_process_executions ADD COLUMN priority INTEGER NOT NULL DEFAULT 3;
ALTER TABLE xdb_sys_tasks ADD COLUMN priority INTEGER NOT NULL DEFAULT 3;
-- Unleased tasks (the `lease_owner IS NULL` prefix) by priority, then due time: a claim
-- reads one range a priority, each stopping at the tasks due now. It replaces the index
-- by due time alone, so that a task's insert and lease write no more indexes than
-- before.
ALTER TABLE xdb_sys_tasks DROP INDEX xdb_sys_tasks_unleased_by_fire_at,
    ADD INDEX xdb_sys_tasks_unleased_by_fire_at (lease_owner, priority, fire_at);
