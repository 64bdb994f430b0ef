-- The business table of the site-creation sample (seed 004): the seed's "site status
-- object". XDB reads and writes its columns as the process's global attributes; the row
-- is keyed by site_id. `status` drives the process; each step records itself in its own
-- *_status column ('done'), so every business write can be checked.
CREATE TABLE IF NOT EXISTS site (
    site_id          TEXT PRIMARY KEY,
    name             TEXT,
    status           TEXT NOT NULL
                     CHECK (status IN ('creating', 'created', 'deleting', 'deleted')),
    metadata_status  TEXT,
    fs_status        TEXT,
    db_status        TEXT,
    bootstrap_status TEXT,
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- XDB writes only the declared columns, so the row's own trigger keeps updated_at.
CREATE OR REPLACE FUNCTION site_touch_updated_at() RETURNS trigger AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS site_touch_updated_at ON site;
CREATE TRIGGER site_touch_updated_at BEFORE UPDATE ON site
    FOR EACH ROW EXECUTE FUNCTION site_touch_updated_at();
