-- XDB system tables, version 9 (PostgreSQL): idempotent requests and batch operations.
-- Additive only: services of version 5 keep working on it.

-- What a request with a requestId did, written in the same transaction as its effect, so
-- the same request sent again answers the same without doing it again. A batch records
-- what it did to each execution here too (batch_id set, request_id derived from the
-- batch and the execution): at most once per batch, and its counts recomputable.
CREATE TABLE xdb_sys_request_receipts (
    request_id   VARCHAR(255) PRIMARY KEY,
    -- The operation and a SHA-256 of the request's canonical JSON, hex: a different
    -- request under the same id is refused.
    operation    VARCHAR(32)  NOT NULL,
    body_hash    CHAR(64)     NOT NULL,
    -- The answer, as JSON text.
    answer       TEXT         NOT NULL,
    batch_id     UUID,
    -- A batch's items: DONE, SKIPPED or FAILED.
    outcome      VARCHAR(16)  NOT NULL,
    created_at   TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp()
);
-- Expiry (batch_id IS NULL, oldest first) and a batch's items, in one index.
CREATE INDEX xdb_sys_request_receipts_by_batch
    ON xdb_sys_request_receipts (batch_id, created_at);

-- A batch operation: its request, progress and where its walk over the selection is.
CREATE TABLE xdb_sys_batches (
    batch_id         UUID         PRIMARY KEY,
    operation        VARCHAR(32)  NOT NULL,
    request          JSONB        NOT NULL,
    status           VARCHAR(16)  NOT NULL,
    rate_per_second  INT          NOT NULL,
    expected         BIGINT       NOT NULL,
    done             BIGINT       NOT NULL DEFAULT 0,
    skipped          BIGINT       NOT NULL DEFAULT 0,
    failed           BIGINT       NOT NULL DEFAULT 0,
    -- The list page token after the last page handled; NULL: from the start.
    walk_position    TEXT,
    error            TEXT,
    -- The async-service instance driving it, until lease_until.
    lease_owner      VARCHAR(255),
    lease_until      TIMESTAMPTZ,
    created_at       TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp(),
    closed_at        TIMESTAMPTZ
);
CREATE INDEX xdb_sys_batches_by_status ON xdb_sys_batches (status, created_at);
