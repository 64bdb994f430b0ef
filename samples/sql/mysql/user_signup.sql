-- The business table of the user sign-up sample (seed 003), MySQL 8 / MariaDB. XDB reads
-- and writes its columns as the process's global attributes; the row is keyed by user_id.
CREATE TABLE IF NOT EXISTS `user` (
    user_id VARCHAR(255) NOT NULL PRIMARY KEY,
    form    JSON,
    status  VARCHAR(16) CHECK (status IS NULL OR status IN ('waiting', 'verified')),
    source  VARCHAR(255)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
