-- The business table of the site-creation sample (seed 004), MySQL 8 / MariaDB: the
-- seed's "site status object". `status` drives the process; each step records itself in
-- its own *_status column ('done'), so every business write can be checked.
CREATE TABLE IF NOT EXISTS site (
    site_id          VARCHAR(255) NOT NULL PRIMARY KEY,
    name             VARCHAR(255),
    status           VARCHAR(16) NOT NULL
                     CHECK (status IN ('creating', 'created', 'deleting', 'deleted')),
    metadata_status  VARCHAR(16),
    fs_status        VARCHAR(16),
    db_status        VARCHAR(16),
    bootstrap_status VARCHAR(16),
    -- XDB writes only the declared columns; the column keeps its own time.
    updated_at       DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
                     ON UPDATE CURRENT_TIMESTAMP(6)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
