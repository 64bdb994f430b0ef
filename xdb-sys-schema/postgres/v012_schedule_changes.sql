-- XDB system tables, version 12 (PostgreSQL): the audit history of schedules, and the
-- schedules that definitions declare.
-- Additive only: services of version 5 keep working on it.

-- Every operator's change of a schedule, written in the transaction that makes it, kept
-- after the schedule is deleted. `before_info` and `after_info` are the protocol's
-- ScheduleInfo as JSON text.
CREATE TABLE xdb_sys_schedule_changes (
    change_id        BIGSERIAL    PRIMARY KEY,
    schedule_id      VARCHAR(255) NOT NULL,
    -- CREATED, UPDATED, PAUSED, RESUMED, TRIGGERED, BACKFILLED or DELETED.
    action           VARCHAR(16)  NOT NULL,
    before_info      TEXT,
    after_info       TEXT,
    detail           TEXT,
    changed_by       VARCHAR(600) NOT NULL,
    reason           TEXT,
    changed_at       TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX xdb_sys_schedule_changes_by_schedule
    ON xdb_sys_schedule_changes (schedule_id, change_id);

-- The process type whose definition declares a schedule (its registrations create,
-- change and delete it); NULL: an operator's.
ALTER TABLE xdb_sys_schedules ADD COLUMN declared_by VARCHAR(255);
CREATE INDEX xdb_sys_schedules_by_declarer ON xdb_sys_schedules (declared_by);
