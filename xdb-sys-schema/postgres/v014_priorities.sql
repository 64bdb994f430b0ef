-- XDB system tables, version 14 (PostgreSQL): priorities. A start names a priority,
-- 1 (claimed first) to 5 (last), 3 when it names none; each task carries its
-- execution's, so that claims read due tasks priority by priority. Services of version
-- 5 keep working on it: they write the default, and their claims, which read unleased
-- tasks in fire_at order, are served by the new index with a sort.
ALTER TABLE xdb_sys_process_executions ADD COLUMN IF NOT EXISTS priority INTEGER NOT NULL DEFAULT 3;
ALTER TABLE xdb_sys_tasks ADD COLUMN IF NOT EXISTS priority INTEGER NOT NULL DEFAULT 3;
-- Unleased tasks by priority, then due time: a claim reads one range a priority, each
-- stopping at the tasks due now, so neither a backlog nor the timers waiting far ahead
-- of one priority are walked on the way to the next. It replaces the index by due time
-- alone, so that a task's insert and lease write no more indexes than before.
CREATE INDEX IF NOT EXISTS xdb_sys_tasks_unleased_by_priority
    ON xdb_sys_tasks (priority, fire_at) WHERE lease_owner IS NULL;
DROP INDEX IF EXISTS xdb_sys_tasks_unleased_by_fire_at;
