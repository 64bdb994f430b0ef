-- XDB system tables, version 1 (MySQL 8 / MariaDB 10.6+). The same tables, columns and
-- indexes as postgres/v001_initial.sql, in the user's own database beside the business
-- tables, so that a state transition and the business-row write commit in one transaction.
--
-- Dialect choices:
-- - UUIDs are CHAR(36) in ASCII, lower-case and hyphenated: readable in a SQL shell and in
--   CDC events, and they sort like PostgreSQL's UUID type (byte order), so list paging
--   orders rows the same way in both dialects.
-- - Timestamps are DATETIME(6), always UTC (the store sets the session time zone to
--   +00:00 and writes UTC_TIMESTAMP(6)): microseconds, no implicit time-zone conversion.
-- - JSON columns are JSON (MariaDB: LONGTEXT with a json_valid check).
-- - Text compares byte for byte and without trailing-space padding, like PostgreSQL:
--   XDB_BINARY_COLLATION is replaced by the installer with the server's no-pad binary
--   collation (MariaDB utf8mb4_nopad_bin, MySQL utf8mb4_0900_bin).
--
-- MySQL commits DDL implicitly, so this file cannot run in one transaction. Every
-- statement is re-runnable instead (CREATE TABLE IF NOT EXISTS, indexes inside the table
-- definition), the installer checks the resulting columns, and the version row is
-- written last: a crash part-way leaves the old version recorded and a re-run completes it.

-- One row per process id: which execution is the latest. Concurrent starts of one
-- process id serialize on this row.
CREATE TABLE IF NOT EXISTS xdb_sys_latest_process_executions (
    process_id           VARCHAR(255) NOT NULL,
    process_execution_id CHAR(36)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    PRIMARY KEY (process_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;

CREATE TABLE IF NOT EXISTS xdb_sys_process_executions (
    id                        CHAR(36)      CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    process_id                VARCHAR(255)  NOT NULL,
    process_type              VARCHAR(255)  NOT NULL,
    worker_url                VARCHAR(2048) NOT NULL,
    -- RUNNING, COMPLETED, FAILED, TIMEOUT, TERMINATED
    status                    VARCHAR(16)   NOT NULL,
    start_time                DATETIME(6)   NOT NULL,
    close_time                DATETIME(6)   NULL,
    timeout_seconds           INT           NOT NULL DEFAULT 0,
    -- State executions not finished yet: the running threads.
    running_state_executions  INT           NOT NULL DEFAULT 0,
    -- A thread decided graceful completion; the process completes when none runs.
    graceful_completion       JSON          NULL,
    -- stateId -> the last execution number handed out for it.
    state_execution_sequences JSON          NOT NULL DEFAULT ('{}'),
    -- GlobalAttributeConfig of the start request (table, primary key).
    global_attribute_config   JSON          NULL,
    result                    JSON          NULL,
    failure                   JSON          NULL,
    PRIMARY KEY (id),
    KEY xdb_sys_process_executions_by_start (start_time DESC, id DESC),
    KEY xdb_sys_process_executions_by_status (status, start_time DESC, id DESC),
    KEY xdb_sys_process_executions_by_type (process_type, start_time DESC, id DESC),
    KEY xdb_sys_process_executions_by_process_id (process_id, start_time DESC, id DESC)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;

CREATE TABLE IF NOT EXISTS xdb_sys_async_state_executions (
    process_execution_id   CHAR(36)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    state_id               VARCHAR(255) NOT NULL,
    state_execution_number INT          NOT NULL,
    -- WAIT_UNTIL_RUNNING, WAITING_COMMANDS, EXECUTE_RUNNING, COMPLETED, FAILED, ABORTED
    status                 VARCHAR(24)  NOT NULL,
    -- Bumped by every update: guards against a stale task acting twice.
    version                INT          NOT NULL DEFAULT 1,
    input                  JSON         NULL,
    config                 JSON         NULL,
    command_request        JSON         NULL,
    command_results        JSON         NULL,
    last_failure           JSON         NULL,
    created_at             DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (process_execution_id, state_id, state_execution_number)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;

-- The work queue and the seed's timer tasks in one table: a task is due at fire_at
-- (now, for immediate work). Async-service instances claim due tasks with a lease and
-- delete them in the transaction that records their effect.
CREATE TABLE IF NOT EXISTS xdb_sys_tasks (
    id                     BIGINT       NOT NULL AUTO_INCREMENT,
    -- WAIT_UNTIL, EXECUTE, TIMER, PROCESS_TIMEOUT
    task_type              VARCHAR(24)  NOT NULL,
    fire_at                DATETIME(6)  NOT NULL,
    process_execution_id   CHAR(36)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    state_id               VARCHAR(255) NULL,
    state_execution_number INT          NULL,
    -- TIMER: the index of the timer command in the command request.
    timer_index            INT          NULL,
    attempt                INT          NOT NULL DEFAULT 1,
    first_attempt_at       DATETIME(6)  NULL,
    lease_owner            VARCHAR(255) NULL,
    lease_expires_at       DATETIME(6)  NULL,
    -- W3C trace context and other per-task details.
    info                   JSON         NULL,
    PRIMARY KEY (id),
    KEY xdb_sys_tasks_by_fire_at (fire_at),
    KEY xdb_sys_tasks_by_execution (process_execution_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;

CREATE TABLE IF NOT EXISTS xdb_sys_local_queue_messages (
    process_execution_id CHAR(36)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    queue_name           VARCHAR(255) NOT NULL,
    sequence_id          BIGINT       NOT NULL AUTO_INCREMENT,
    dedup_id             VARCHAR(255) NOT NULL,
    payload              JSON         NULL,
    -- The state execution (`stateId-number`) that consumed the message; NULL while queued.
    consumed_by          VARCHAR(300) NULL,
    created_at           DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (process_execution_id, queue_name, sequence_id),
    UNIQUE KEY xdb_sys_local_queue_messages_dedup (process_execution_id, queue_name, dedup_id),
    -- InnoDB needs an index that starts with the AUTO_INCREMENT column.
    KEY xdb_sys_local_queue_messages_by_sequence (sequence_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;

CREATE TABLE IF NOT EXISTS xdb_sys_local_attributes (
    process_execution_id CHAR(36)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    `key`                VARCHAR(255) NOT NULL,
    value                JSON         NOT NULL,
    PRIMARY KEY (process_execution_id, `key`)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;

-- Debugging history: append-only, one row per event, no read-modify-write.
CREATE TABLE IF NOT EXISTS xdb_sys_history_events (
    id                   BIGINT       NOT NULL AUTO_INCREMENT,
    process_execution_id CHAR(36)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    event_time           DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    event_type           VARCHAR(64)  NOT NULL,
    details              JSON         NOT NULL,
    PRIMARY KEY (id),
    KEY xdb_sys_history_events_by_execution (process_execution_id, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;
