-- XDB system tables, version 10 (PostgreSQL): schedules.
-- Additive only: services of version 5 keep working on it.

-- A schedule: what it starts, when (its spec), and the next firing to record.
CREATE TABLE xdb_sys_schedules (
    schedule_id             VARCHAR(255) PRIMARY KEY,
    process_type            VARCHAR(255) NOT NULL,
    -- The request's spec and start template, as the protocol's JSON.
    spec                    JSONB        NOT NULL,
    start_template          JSONB        NOT NULL,
    -- SKIP, BUFFER_ONE, ALLOW_ALL or TERMINATE_PREVIOUS.
    overlap_policy          VARCHAR(32)  NOT NULL,
    catchup_window_seconds  INT          NOT NULL,
    paused                  BOOLEAN      NOT NULL DEFAULT FALSE,
    note                    TEXT,
    -- Why it was last paused or resumed.
    reason                  TEXT,
    -- The nominal time (ms since the epoch) of the next firing not recorded yet, and when
    -- it may start (nominal plus jitter) on the database's clock; NULL when the spec has
    -- no more fire times.
    next_nominal_ms         BIGINT,
    next_fire_at            TIMESTAMPTZ,
    -- Bumped by every change, so a firing recorded from an older read cannot undo one.
    version                 BIGINT       NOT NULL DEFAULT 1,
    -- The async-service instance starting its open firings, until lease_until: one at a
    -- time, so two instances cannot both find the previous firing closed and overlap.
    lease_owner             VARCHAR(255),
    lease_until             TIMESTAMPTZ,
    created_at              TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp(),
    updated_at              TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp()
);
-- Due schedules, soonest first; paused ones are left out.
CREATE INDEX xdb_sys_schedules_due ON xdb_sys_schedules (next_fire_at)
    WHERE NOT paused AND next_fire_at IS NOT NULL;
CREATE INDEX xdb_sys_schedules_by_type ON xdb_sys_schedules (process_type, schedule_id);

-- A firing: one per schedule and nominal time, so it is recorded and started at most
-- once. Its process id is derived from both, and refused by the process table if started
-- twice.
CREATE TABLE xdb_sys_schedule_firings (
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
    fire_at               TIMESTAMPTZ  NOT NULL,
    process_execution_id  UUID,
    reason                TEXT,
    created_at            TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp(),
    resolved_at           TIMESTAMPTZ,
    PRIMARY KEY (schedule_id, nominal_ms)
);
-- Firings to start or to start once their predecessor closes.
CREATE INDEX xdb_sys_schedule_firings_open ON xdb_sys_schedule_firings (fire_at)
    WHERE outcome IN ('PENDING', 'BUFFERED');
