-- XDB system tables, version 8 (MySQL 8 / MariaDB 10.10+): process definitions
-- registered by worker deployments. One row per revision of a process type: the newest
-- revision is the current definition, the older ones are the history of its changes
-- (never updated or deleted). Re-runnable.
CREATE TABLE IF NOT EXISTS xdb_sys_process_definitions (
    process_type       VARCHAR(255)  NOT NULL,
    revision           BIGINT        NOT NULL,
    -- SHA-256 of the definition's canonical JSON, hex: equal content, equal hash.
    content_hash       CHAR(64)      NOT NULL,
    deployment_name    VARCHAR(255)  NOT NULL,
    deployment_version VARCHAR(255)  NOT NULL,
    worker_url         VARCHAR(2048) NOT NULL,
    definition         JSON          NOT NULL,
    registered_at      DATETIME(6)   NOT NULL DEFAULT UTC_TIMESTAMP(6),
    PRIMARY KEY (process_type, revision)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;
