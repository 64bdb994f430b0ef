-- XDB system tables, version 2 (PostgreSQL): the running service instances.
-- Where the database cannot push notifications (MySQL), services wake each other over
-- their internal API; this table is how they find each other. Rows whose heartbeat is
-- old belong to instances that died and are ignored (and swept by the live ones).
CREATE TABLE xdb_sys_service_instances (
    instance_id  VARCHAR(255)  PRIMARY KEY,
    -- API or ASYNC
    service      VARCHAR(16)   NOT NULL,
    notify_url   VARCHAR(2048) NOT NULL,
    heartbeat_at TIMESTAMPTZ   NOT NULL
);

-- Lease renewal and release look tasks up by owner; only leased tasks are indexed, so
-- waiting timers cost the index nothing.
CREATE INDEX xdb_sys_tasks_by_lease_owner ON xdb_sys_tasks (lease_owner)
    WHERE lease_owner IS NOT NULL;
