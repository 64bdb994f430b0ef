-- XDB system tables, version 14 (PostgreSQL): priorities. A start names a priority,
-- 1 (claimed first) to 5 (last), 3 when it names none; each task carries its
-- execution's, so that claims read due tasks priority by priority. Services of version
-- 5 keep working on it: they write the default, and their claims, which read unleased
-- tasks in fire_at order, are served by the index of all tasks by fire_at.
ALTER TABLE xdb_sys_process_executions ADD COLUMN IF NOT EXISTS priority INTEGER NOT NULL DEFAULT 3;
ALTER TABLE xdb_sys_tasks ADD COLUMN IF NOT EXISTS priority INTEGER NOT NULL DEFAULT 3;
-- Unleased tasks by due time, split by priority: a claim reads one range a priority,
-- each stopping at the tasks due now, so that neither a backlog nor the timers waiting
-- far ahead of one priority are walked on the way to the next. The default priority's
-- tasks (nearly all, where priorities are not used) have an index of their own, whose
-- predicate a claim's `priority = 3` matches outright, so that the planner never
-- prefers the index of all tasks (which walks tasks in flight); the others share one.
-- Each task is in one of the two, as it was in the index by due time they replace.
CREATE INDEX IF NOT EXISTS xdb_sys_tasks_unleased_default_by_fire_at
    ON xdb_sys_tasks (fire_at) WHERE lease_owner IS NULL AND priority = 3;
CREATE INDEX IF NOT EXISTS xdb_sys_tasks_unleased_by_priority
    ON xdb_sys_tasks (priority, fire_at) WHERE lease_owner IS NULL AND priority <> 3;
DROP INDEX IF EXISTS xdb_sys_tasks_unleased_by_fire_at;
