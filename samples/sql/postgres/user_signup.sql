-- The business table of the user sign-up sample (seed 003). XDB reads and writes its
-- columns as the process's global attributes; the row is keyed by user_id.
CREATE TABLE IF NOT EXISTS "user" (
    user_id TEXT PRIMARY KEY,
    form    JSONB,
    status  TEXT CHECK (status IS NULL OR status IN ('waiting', 'verified')),
    source  TEXT
);
