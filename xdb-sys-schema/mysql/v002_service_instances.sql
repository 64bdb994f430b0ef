-- XDB system tables, version 2 (MySQL 8 / MariaDB 10.6+): the running service instances.
-- Services wake each other over their internal API where the database cannot push
-- notifications; this table is how they find each other. Re-runnable, like v001.
CREATE TABLE IF NOT EXISTS xdb_sys_service_instances (
    instance_id  VARCHAR(255)  NOT NULL,
    -- API or ASYNC
    service      VARCHAR(16)   NOT NULL,
    notify_url   VARCHAR(2048) NOT NULL,
    heartbeat_at DATETIME(6)   NOT NULL,
    PRIMARY KEY (instance_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = XDB_BINARY_COLLATION;
