-- XDB system tables, version 15 (PostgreSQL): fairness keys. A start may name a key
-- (a tenant, a customer) and a weight; each task carries its execution's, so that a
-- claim shares each priority between keys, each served in turn. '' is the key every
-- start without one shares. Services of version 5 keep working on it: they write
-- keyless tasks, and their claims (which name no key) read unleased tasks through the
-- index of all tasks by fire_at, more slowly, until they are upgraded.
ALTER TABLE xdb_sys_process_executions
    ADD COLUMN IF NOT EXISTS fairness_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS fairness_weight INTEGER NOT NULL DEFAULT 1;
ALTER TABLE xdb_sys_tasks
    ADD COLUMN IF NOT EXISTS fairness_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS fairness_weight INTEGER NOT NULL DEFAULT 1;
-- The keyless tasks of each priority, as before (v014) but without the keyed ones, so
-- that no key's backlog is walked by a claim of keyless tasks. Each task is in one of
-- the three, as it was in one of the two they replace: a task's insert and lease write
-- no more index entries than before.
CREATE INDEX IF NOT EXISTS xdb_sys_tasks_unleased_keyless_default_by_fire_at
    ON xdb_sys_tasks (fire_at)
    WHERE lease_owner IS NULL AND priority = 3 AND fairness_key = '';
CREATE INDEX IF NOT EXISTS xdb_sys_tasks_unleased_keyless_by_priority
    ON xdb_sys_tasks (priority, fire_at)
    WHERE lease_owner IS NULL AND priority <> 3 AND fairness_key = '';
-- The keyed tasks, by priority, key and due time: a claim walks the keys with due tasks
-- one index probe a key, and reads each key's oldest.
CREATE INDEX IF NOT EXISTS xdb_sys_tasks_unleased_keyed
    ON xdb_sys_tasks (priority, fairness_key, fire_at)
    WHERE lease_owner IS NULL AND fairness_key <> '';
DROP INDEX IF EXISTS xdb_sys_tasks_unleased_default_by_fire_at;
DROP INDEX IF EXISTS xdb_sys_tasks_unleased_by_priority;
