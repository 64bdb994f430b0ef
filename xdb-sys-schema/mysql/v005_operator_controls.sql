-- XDB system tables, version 5 (MySQL 8 / MariaDB): operators' controls.
-- An execution can be paused (its tasks set aside until it resumes), and a task whose
-- transition the database refuses again and again is parked instead of looping. Set-aside
-- tasks leave xdb_sys_tasks, so claiming never looks at them; retry-now and resume put
-- them back under their own ids. Additive only: services of version 4 keep working on it.
-- Re-runnable: the installer takes "duplicate column name" and "duplicate key name" for
-- done.
ALTER TABLE xdb_sys_process_executions ADD COLUMN paused JSON NULL;
-- The gauge of paused running executions reads this index alone (no partial indexes
-- here; an execution keeps its pause when it closes, hence the status). Stored, not
-- virtual: indexed virtual columns would keep later table rebuilds from running online.
-- Adding it copies the table once, blocking writes to it meanwhile.
ALTER TABLE xdb_sys_process_executions ADD COLUMN is_paused TINYINT AS (paused IS NOT NULL) STORED;
CREATE INDEX xdb_sys_process_executions_by_paused ON xdb_sys_process_executions (is_paused, status);

CREATE TABLE IF NOT EXISTS xdb_sys_parked_tasks (
    id                     BIGINT       NOT NULL,
    task_type              VARCHAR(24)  NOT NULL,
    fire_at                DATETIME(6)  NOT NULL,
    process_execution_id   CHAR(36)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    state_id               VARCHAR(255) NULL,
    state_execution_number INT          NULL,
    timer_index            INT          NULL,
    attempt                INT          NOT NULL,
    first_attempt_at       DATETIME(6)  NULL,
    info                   JSON         NULL,
    -- PAUSED: its execution is paused. REFUSED: the database refused its transition.
    reason                 VARCHAR(16)  NOT NULL,
    error                  TEXT         NULL,
    parked_at              DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    KEY xdb_sys_parked_tasks_by_execution (process_execution_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;
