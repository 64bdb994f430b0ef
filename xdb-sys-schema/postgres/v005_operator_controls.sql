-- XDB system tables, version 5 (PostgreSQL): operators' controls.
-- An execution can be paused (its tasks set aside until it resumes), and a task whose
-- transition the database refuses again and again is parked instead of looping. Set-aside
-- tasks leave xdb_sys_tasks, so claiming never looks at them; retry-now and resume put
-- them back under their own ids. Additive only: services of version 4 keep working on it.
ALTER TABLE xdb_sys_process_executions ADD COLUMN paused JSONB;
-- Paused executions are few: the gauge of paused running executions reads them from
-- this index alone (an execution keeps its pause when it closes, hence the status).
CREATE INDEX xdb_sys_process_executions_paused ON xdb_sys_process_executions (status)
    WHERE paused IS NOT NULL;

CREATE TABLE xdb_sys_parked_tasks (
    id                     BIGINT       PRIMARY KEY,
    task_type              VARCHAR(24)  NOT NULL,
    fire_at                TIMESTAMPTZ  NOT NULL,
    process_execution_id   UUID         NOT NULL,
    state_id               VARCHAR(255),
    state_execution_number INT,
    timer_index            INT,
    attempt                INT          NOT NULL,
    first_attempt_at       TIMESTAMPTZ,
    info                   JSONB,
    -- PAUSED: its execution is paused. REFUSED: the database refused its transition.
    reason                 VARCHAR(16)  NOT NULL,
    error                  TEXT,
    parked_at              TIMESTAMPTZ  NOT NULL
);
CREATE INDEX xdb_sys_parked_tasks_by_execution ON xdb_sys_parked_tasks (process_execution_id);
