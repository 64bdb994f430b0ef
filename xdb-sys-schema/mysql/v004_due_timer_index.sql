-- XDB system tables, version 4 (MySQL 8 / MariaDB): due timers ahead of a backlog.
-- Claiming takes due timers and process timeouts before other due tasks: the others'
-- fire_at is when they were created, so under a backlog they all sort before a timer
-- that just came due. MySQL has no partial indexes: unleased timers are the
-- (NULL, type) prefixes of this one. Re-runnable: the installer takes "duplicate key
-- name" for done.
CREATE INDEX xdb_sys_tasks_unleased_by_type ON xdb_sys_tasks (lease_owner, task_type, fire_at);
