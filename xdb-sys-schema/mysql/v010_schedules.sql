-- XDB system tables, version 10 (MySQL 8 / MariaDB 10.10+): schedules.
-- Additive only: services of version 5 keep working on it. Re-runnable.

-- A schedule: what it starts, when (its spec), and the next firing to record.
CREATE TABLE IF NOT EXISTS xdb_sys_schedules (
    schedule_id             VARCHAR(255) NOT NULL,
    process_type            VARCHAR(255) NOT NULL,
    -- The request's spec and start template, as the protocol's JSON.
    spec                    JSON         NOT NULL,
    start_template          JSON         NOT NULL,
    -- SKIP, BUFFER_ONE, ALLOW_ALL or TERMINATE_PREVIOUS.
    overlap_policy          VARCHAR(32)  NOT NULL,
    catchup_window_seconds  INT          NOT NULL,
    paused                  BOOLEAN      NOT NULL DEFAULT FALSE,
    note                    TEXT         NULL,
    -- Why it was last paused or resumed.
    reason                  TEXT         NULL,
    -- The nominal time (ms since the epoch) of the next firing not recorded yet, and when
    -- it may start (nominal plus jitter) on the database's clock; NULL when the spec has
    -- no more fire times.
    next_nominal_ms         BIGINT       NULL,
    next_fire_at            DATETIME(6)  NULL,
    -- Bumped by every change, so a firing recorded from an older read cannot undo one.
    version                 BIGINT       NOT NULL DEFAULT 1,
    -- The async-service instance starting its open firings, until lease_until: one at a
    -- time, so two instances cannot both find the previous firing closed and overlap.
    lease_owner             VARCHAR(255) NULL,
    lease_until             DATETIME(6)  NULL,
    created_at              DATETIME(6)  NOT NULL DEFAULT UTC_TIMESTAMP(6),
    updated_at              DATETIME(6)  NOT NULL DEFAULT UTC_TIMESTAMP(6),
    PRIMARY KEY (schedule_id),
    -- Due schedules, soonest first (MySQL has no partial index: paused ones are read and
    -- passed over).
    KEY xdb_sys_schedules_due (next_fire_at),
    KEY xdb_sys_schedules_by_type (process_type, schedule_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;

-- A firing: one per schedule and nominal time, so it is recorded and started at most
-- once. Its process id is derived from both, and refused by the process table if started
-- twice.
CREATE TABLE IF NOT EXISTS xdb_sys_schedule_firings (
    schedule_id           VARCHAR(255) NOT NULL,
    nominal_ms            BIGINT       NOT NULL,
    process_id            VARCHAR(255) NOT NULL,
    -- SPEC, MANUAL or BACKFILL.
    fired_by              VARCHAR(16)  NOT NULL,
    -- The overlap policy it is started under (a trigger or backfill may name its own).
    overlap_policy        VARCHAR(32)  NOT NULL,
    -- PENDING, BUFFERED, STARTED, SKIPPED or FAILED.
    outcome               VARCHAR(16)  NOT NULL,
    -- When it may start: its nominal time plus jitter, on the database's clock.
    fire_at               DATETIME(6)  NOT NULL,
    process_execution_id  CHAR(36)     CHARACTER SET ascii COLLATE ascii_bin NULL,
    reason                TEXT         NULL,
    created_at            DATETIME(6)  NOT NULL DEFAULT UTC_TIMESTAMP(6),
    resolved_at           DATETIME(6)  NULL,
    PRIMARY KEY (schedule_id, nominal_ms),
    -- Firings to start or to start once their predecessor closes.
    KEY xdb_sys_schedule_firings_open (outcome, fire_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;
