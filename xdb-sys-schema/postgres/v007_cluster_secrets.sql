-- XDB system tables, version 7 (PostgreSQL): the secret the services sign their calls to
-- each other with (MySQL's wake-ups; see docs/security.md). Every instance reads it at
-- start-up unless `security.internal_secret` is configured; whoever can read this table
-- can read every execution already, so keeping it beside them gives nothing away.
CREATE TABLE xdb_sys_cluster_secrets (
    name       VARCHAR(64)  PRIMARY KEY,
    secret     VARCHAR(128) NOT NULL,
    created_at TIMESTAMPTZ  NOT NULL DEFAULT clock_timestamp()
);

-- 244 random bits: gen_random_uuid() draws from the server's strong random source.
INSERT INTO xdb_sys_cluster_secrets (name, secret)
VALUES ('internal', replace(gen_random_uuid()::text, '-', '')
                    || replace(gen_random_uuid()::text, '-', ''));
