-- XDB system tables, version 1 (PostgreSQL).
-- They live in the user's own database beside the business tables, so that a state
-- transition and the business-row write commit in one transaction.

-- One row per process id: which execution is the latest. Concurrent starts of one
-- process id serialize on this row.
CREATE TABLE xdb_sys_latest_process_executions (
    process_id           VARCHAR(255) PRIMARY KEY,
    process_execution_id UUID         NOT NULL
);

CREATE TABLE xdb_sys_process_executions (
    id                        UUID          PRIMARY KEY,
    process_id                VARCHAR(255)  NOT NULL,
    process_type              VARCHAR(255)  NOT NULL,
    worker_url                VARCHAR(2048) NOT NULL,
    -- RUNNING, COMPLETED, FAILED, TIMEOUT, TERMINATED
    status                    VARCHAR(16)   NOT NULL,
    start_time                TIMESTAMPTZ   NOT NULL,
    close_time                TIMESTAMPTZ,
    timeout_seconds           INT           NOT NULL DEFAULT 0,
    -- State executions not finished yet: the running threads.
    running_state_executions  INT           NOT NULL DEFAULT 0,
    -- A thread decided graceful completion; the process completes when none runs.
    graceful_completion       JSONB,
    -- stateId -> the last execution number handed out for it.
    state_execution_sequences JSONB         NOT NULL DEFAULT '{}',
    -- GlobalAttributeConfig of the start request (table, primary key).
    global_attribute_config   JSONB,
    result                    JSONB,
    failure                   JSONB
);
CREATE INDEX xdb_sys_process_executions_by_start
    ON xdb_sys_process_executions (start_time DESC, id DESC);
CREATE INDEX xdb_sys_process_executions_by_status
    ON xdb_sys_process_executions (status, start_time DESC, id DESC);
CREATE INDEX xdb_sys_process_executions_by_type
    ON xdb_sys_process_executions (process_type, start_time DESC, id DESC);
CREATE INDEX xdb_sys_process_executions_by_process_id
    ON xdb_sys_process_executions (process_id, start_time DESC, id DESC);

CREATE TABLE xdb_sys_async_state_executions (
    process_execution_id   UUID         NOT NULL,
    state_id               VARCHAR(255) NOT NULL,
    state_execution_number INT          NOT NULL,
    -- WAIT_UNTIL_RUNNING, WAITING_COMMANDS, EXECUTE_RUNNING, COMPLETED, FAILED, ABORTED
    status                 VARCHAR(24)  NOT NULL,
    -- Bumped by every update: guards against a stale task acting twice.
    version                INT          NOT NULL DEFAULT 1,
    input                  JSONB,
    config                 JSONB,
    command_request        JSONB,
    command_results        JSONB,
    last_failure           JSONB,
    created_at             TIMESTAMPTZ  NOT NULL DEFAULT now(),
    PRIMARY KEY (process_execution_id, state_id, state_execution_number)
);

-- The work queue and the seed's timer tasks in one table: a task is due at fire_at
-- (now, for immediate work). Async-service instances claim due tasks with a lease and
-- delete them in the transaction that records their effect.
CREATE TABLE xdb_sys_tasks (
    id                     BIGSERIAL    PRIMARY KEY,
    -- WAIT_UNTIL, EXECUTE, TIMER, PROCESS_TIMEOUT
    task_type              VARCHAR(24)  NOT NULL,
    fire_at                TIMESTAMPTZ  NOT NULL,
    process_execution_id   UUID         NOT NULL,
    state_id               VARCHAR(255),
    state_execution_number INT,
    -- TIMER: the index of the timer command in the command request.
    timer_index            INT,
    attempt                INT          NOT NULL DEFAULT 1,
    first_attempt_at       TIMESTAMPTZ,
    lease_owner            VARCHAR(255),
    lease_expires_at       TIMESTAMPTZ,
    -- W3C trace context and other per-task details.
    info                   JSONB
);
CREATE INDEX xdb_sys_tasks_by_fire_at ON xdb_sys_tasks (fire_at);
CREATE INDEX xdb_sys_tasks_by_execution ON xdb_sys_tasks (process_execution_id);

CREATE TABLE xdb_sys_local_queue_messages (
    process_execution_id UUID         NOT NULL,
    queue_name           VARCHAR(255) NOT NULL,
    sequence_id          BIGSERIAL,
    dedup_id             VARCHAR(255) NOT NULL,
    payload              JSONB,
    -- The state execution (`stateId-number`) that consumed the message; NULL while queued.
    consumed_by          VARCHAR(300),
    created_at           TIMESTAMPTZ  NOT NULL DEFAULT now(),
    PRIMARY KEY (process_execution_id, queue_name, sequence_id),
    UNIQUE (process_execution_id, queue_name, dedup_id)
);

CREATE TABLE xdb_sys_local_attributes (
    process_execution_id UUID         NOT NULL,
    key                  VARCHAR(255) NOT NULL,
    value                JSONB        NOT NULL,
    PRIMARY KEY (process_execution_id, key)
);

-- Debugging history: append-only, one row per event, no read-modify-write.
CREATE TABLE xdb_sys_history_events (
    id                   BIGSERIAL    PRIMARY KEY,
    process_execution_id UUID         NOT NULL,
    event_time           TIMESTAMPTZ  NOT NULL DEFAULT now(),
    event_type           VARCHAR(64)  NOT NULL,
    details              JSONB        NOT NULL
);
CREATE INDEX xdb_sys_history_events_by_execution
    ON xdb_sys_history_events (process_execution_id, id);
