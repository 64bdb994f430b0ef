-- XDB system tables, version 7 (MySQL 8 / MariaDB 10.10+): the secret the services sign
-- their calls to each other with (the wake-ups over their internal API; see
-- docs/security.md). Every instance reads it at start-up unless
-- `security.internal_secret` is configured; whoever can read this table can read every
-- execution already, so keeping it beside them gives nothing away. Re-runnable.
CREATE TABLE IF NOT EXISTS xdb_sys_cluster_secrets (
    name       VARCHAR(64)  NOT NULL,
    secret     VARCHAR(128) NOT NULL,
    created_at DATETIME(6)  NOT NULL DEFAULT UTC_TIMESTAMP(6),
    PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;

-- 256 random bits from the server's cryptographic generator; a re-run keeps the first.
INSERT IGNORE INTO xdb_sys_cluster_secrets (name, secret)
VALUES ('internal', LOWER(HEX(RANDOM_BYTES(32))));
