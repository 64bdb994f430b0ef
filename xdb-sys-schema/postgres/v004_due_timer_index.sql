-- XDB system tables, version 4 (PostgreSQL): due timers ahead of a backlog.
-- Claiming takes due timers and process timeouts before other due tasks: the others'
-- fire_at is when they were created, so under a backlog they all sort before a timer
-- that just came due. This index holds unleased timers only, so finding the due ones
-- never steps over the backlog.
CREATE INDEX xdb_sys_tasks_unleased_timers_by_fire_at ON xdb_sys_tasks (fire_at)
    WHERE lease_owner IS NULL AND task_type IN ('TIMER', 'PROCESS_TIMEOUT');
