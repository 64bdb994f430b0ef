//! Restarts the database server under a test, as an operator or a crash would: every
//! connection of every service breaks, and the services must recover by themselves.
//!
//! Only for the machines the suite runs on (root, servers installed as
//! `scripts/ensure-postgres.sh` and `scripts/ensure-mariadb.sh` leave them).

use std::process::Command;

use crate::Database;

/// Restarts the server of `database` and returns once it accepts connections again.
pub fn restart(database: Database) {
    let scripts = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts");
    let script = match database {
        // A fast shutdown ends every session at once, like a crash of the clients' view.
        Database::Postgres => format!(
            "set -e; v=$(ls /etc/postgresql | sort -V | tail -1); \
             pg_ctlcluster --skip-systemctl-redirect \"$v\" main restart -m fast; \
             {scripts}/ensure-postgres.sh >/dev/null"
        ),
        // The shutdown command returns before the server has exited; starting it again
        // meanwhile would find it "running" and wait for it in vain. The wait is for this
        // server's own process (another MariaDB may run on the machine).
        Database::MySql => format!(
            "set -e; \
             pid=$(cat \"$(mariadb -h 127.0.0.1 -u root -N -B -e 'SELECT @@pid_file')\"); \
             mariadb-admin -h 127.0.0.1 -u root shutdown; \
             for _ in $(seq 1 300); do kill -0 \"$pid\" 2>/dev/null || break; sleep 0.1; done; \
             {scripts}/ensure-mariadb.sh >/dev/null"
        ),
    };
    let status = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .status()
        .expect("run the restart script");
    assert!(status.success(), "restarting {database:?} failed: {script}");
}
