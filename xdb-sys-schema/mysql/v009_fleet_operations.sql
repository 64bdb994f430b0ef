-- XDB system tables, version 9 (MySQL 8 / MariaDB 10.10+): idempotent requests and batch
-- operations. Additive only: services of version 5 keep working on it. Re-runnable.

-- What a request with a requestId did, written in the same transaction as its effect, so
-- the same request sent again answers the same without doing it again. A batch records
-- what it did to each execution here too (batch_id set, request_id derived from the
-- batch and the execution): at most once per batch, and its counts recomputable.
CREATE TABLE IF NOT EXISTS xdb_sys_request_receipts (
    request_id   VARCHAR(255) NOT NULL,
    -- The operation and a SHA-256 of the request's canonical JSON, hex: a different
    -- request under the same id is refused.
    operation    VARCHAR(32)  NOT NULL,
    body_hash    CHAR(64)     NOT NULL,
    -- The answer, as JSON text.
    answer       MEDIUMTEXT   NOT NULL,
    batch_id     CHAR(36)     CHARACTER SET ascii COLLATE ascii_bin NULL,
    -- A batch's items: DONE, SKIPPED or FAILED.
    outcome      VARCHAR(16)  NOT NULL,
    created_at   DATETIME(6)  NOT NULL DEFAULT UTC_TIMESTAMP(6),
    PRIMARY KEY (request_id),
    -- Expiry (batch_id IS NULL, oldest first) and a batch's items, in one index.
    KEY xdb_sys_request_receipts_by_batch (batch_id, created_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;

-- A batch operation: its request, progress and where its walk over the selection is.
CREATE TABLE IF NOT EXISTS xdb_sys_batches (
    batch_id         CHAR(36)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    operation        VARCHAR(32)  NOT NULL,
    request          JSON         NOT NULL,
    status           VARCHAR(16)  NOT NULL,
    rate_per_second  INT          NOT NULL,
    expected         BIGINT       NOT NULL,
    done             BIGINT       NOT NULL DEFAULT 0,
    skipped          BIGINT       NOT NULL DEFAULT 0,
    failed           BIGINT       NOT NULL DEFAULT 0,
    -- The list page token after the last page handled; NULL: from the start.
    walk_position    TEXT         NULL,
    error            TEXT         NULL,
    -- The async-service instance driving it, until lease_until.
    lease_owner      VARCHAR(255) NULL,
    lease_until      DATETIME(6)  NULL,
    created_at       DATETIME(6)  NOT NULL DEFAULT UTC_TIMESTAMP(6),
    closed_at        DATETIME(6)  NULL,
    PRIMARY KEY (batch_id),
    KEY xdb_sys_batches_by_status (status, created_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;
