-- XDB system tables, version 13 (MySQL 8 / MariaDB 10.10+): running-execution limits
-- (`maxRunningExecutions`). Additive only: services of version 5 keep working on it.

-- One row per (type, concurrency key) that ever had a limited start: locked by every
-- start and admission of that key, so that counting its running executions and taking
-- a slot are one step.
CREATE TABLE IF NOT EXISTS xdb_sys_run_slot_keys (
    process_type  VARCHAR(255) NOT NULL,
    slot_key      VARCHAR(255) NOT NULL,
    PRIMARY KEY (process_type, slot_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;

-- One row per execution of a limited type. `admitted` = 1: it holds a slot while its
-- execution is RUNNING (a closed one frees it by closing); 0: it waits, PENDING, in
-- `queued_at` order; 2: its execution closed, and the row is kept, set apart from the
-- counts, as the record of the key it was counted under (which a reset takes again).
CREATE TABLE IF NOT EXISTS xdb_sys_run_slots (
    process_execution_id CHAR(36)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    process_type         VARCHAR(255) NOT NULL,
    slot_key             VARCHAR(255) NOT NULL,
    admitted             INT          NOT NULL,
    queued_at            DATETIME(6)  NOT NULL,
    KEY xdb_sys_run_slots_by_key (process_type, slot_key, admitted, queued_at),
    -- The keys with executions waiting, for the async service's admissions.
    KEY xdb_sys_run_slots_waiting (admitted, process_type, slot_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;
