-- XDB system tables, version 11 (PostgreSQL): flow limits.
-- Additive only: services of version 5 keep working on it.

-- The limits of a process type (state_id '') or of one of its states. `declared` is what
-- the type's last registered definition declared, `override_limits` an operator's
-- override, in force while override_set. Each is the protocol's FlowLimits as JSON text,
-- so a new kind of limit needs no migration.
CREATE TABLE xdb_sys_flow_limits (
    process_type     VARCHAR(255) NOT NULL,
    state_id         VARCHAR(255) NOT NULL,
    declared         TEXT,
    override_set     BOOLEAN      NOT NULL DEFAULT FALSE,
    override_limits  TEXT,
    updated_at       TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (process_type, state_id)
);

-- Every change of a declared limit or an override: the audit history.
CREATE TABLE xdb_sys_flow_limit_changes (
    change_id        BIGSERIAL    PRIMARY KEY,
    process_type     VARCHAR(255) NOT NULL,
    state_id         VARCHAR(255) NOT NULL,
    -- DEFINITION or OPERATOR.
    source           VARCHAR(16)  NOT NULL,
    before_limits    TEXT,
    after_limits     TEXT,
    changed_by       VARCHAR(600) NOT NULL,
    reason           TEXT,
    changed_at       TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX xdb_sys_flow_limit_changes_by_type
    ON xdb_sys_flow_limit_changes (process_type, change_id);

-- The places of worker calls running under a concurrency limit: one row per call, taken
-- before the call under the lock of its limit's row. A place counts only while its task
-- is still leased to the instance that took it: the transition that records the call's
-- outcome deletes the task (and with it the place, in the same transaction), a retry or
-- a takeover unleases it, so no place outlives its call. Rows left behind are removed by
-- the next call of the type.
CREATE TABLE xdb_sys_call_slots (
    task_id        BIGINT       PRIMARY KEY,
    process_type   VARCHAR(255) NOT NULL,
    state_id       VARCHAR(255) NOT NULL,
    owner          VARCHAR(255) NOT NULL,
    taken_at       TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX xdb_sys_call_slots_by_state ON xdb_sys_call_slots (process_type, state_id);
