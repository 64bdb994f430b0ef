-- XDB system tables, version 13 (PostgreSQL): running-execution limits
-- (`maxRunningExecutions`). Additive only: services of version 5 keep working on it.

-- One row per (type, concurrency key) that ever had a limited start: locked by every
-- start and admission of that key, so that counting its running executions and taking
-- a slot are one step.
CREATE TABLE xdb_sys_run_slot_keys (
    process_type  VARCHAR(255) NOT NULL,
    slot_key      VARCHAR(255) NOT NULL,
    PRIMARY KEY (process_type, slot_key)
);

-- One row per execution of a limited type. `admitted` = 1: it holds a slot while its
-- execution is RUNNING (a closed one frees it by closing); 0: it waits, PENDING, in
-- `queued_at` order; 2: its execution closed, and the row is kept, set apart from the
-- counts, as the record of the key it was counted under (which a reset takes again).
CREATE TABLE xdb_sys_run_slots (
    process_execution_id UUID         PRIMARY KEY,
    process_type         VARCHAR(255) NOT NULL,
    slot_key             VARCHAR(255) NOT NULL,
    admitted             INTEGER      NOT NULL,
    queued_at            TIMESTAMPTZ  NOT NULL
);
CREATE INDEX xdb_sys_run_slots_by_key
    ON xdb_sys_run_slots (process_type, slot_key, admitted, queued_at);
-- The keys with executions waiting, for the async service's admissions.
CREATE INDEX xdb_sys_run_slots_waiting
    ON xdb_sys_run_slots (admitted, process_type, slot_key);
