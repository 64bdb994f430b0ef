-- XDB system tables, version 12 (MySQL 8 / MariaDB 10.10+): the audit history of
-- schedules, and the schedules that definitions declare. Additive only: services of
-- version 5 keep working on it.

-- Every operator's change of a schedule, written in the transaction that makes it, kept
-- after the schedule is deleted. `before_info` and `after_info` are the protocol's
-- ScheduleInfo as JSON text.
CREATE TABLE IF NOT EXISTS xdb_sys_schedule_changes (
    change_id        BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    schedule_id      VARCHAR(255) NOT NULL,
    -- CREATED, UPDATED, PAUSED, RESUMED, TRIGGERED, BACKFILLED or DELETED.
    action           VARCHAR(16)  NOT NULL,
    before_info      MEDIUMTEXT   NULL,
    after_info       MEDIUMTEXT   NULL,
    detail           TEXT         NULL,
    changed_by       VARCHAR(600) NOT NULL,
    reason           TEXT         NULL,
    changed_at       DATETIME(6)  NOT NULL DEFAULT UTC_TIMESTAMP(6),
    KEY xdb_sys_schedule_changes_by_schedule (schedule_id, change_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;

-- The process type whose definition declares a schedule (its registrations create,
-- change and delete it); NULL: an operator's.
ALTER TABLE xdb_sys_schedules ADD COLUMN declared_by VARCHAR(255) NULL;
CREATE INDEX xdb_sys_schedules_by_declarer ON xdb_sys_schedules (declared_by);
