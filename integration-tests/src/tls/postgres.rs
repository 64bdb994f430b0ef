//! A PostgreSQL 15 server of the test's own that takes TLS connections only.

use std::path::PathBuf;

use super::{chown, fresh_dir, run, Issued, TestCa};

const BIN: &str = "/usr/lib/postgresql/15/bin";

/// The role that logs in by client certificate (`cert` authentication) only.
pub const CERT_USER: &str = "xdb_cert";

/// A PostgreSQL server on 127.0.0.1 and a free port with `ssl = on` and a `pg_hba.conf`
/// of `hostssl` lines only: `trust` for every role but [`CERT_USER`], which must show a
/// client certificate of the test CA. Stopped and removed when dropped.
pub struct TlsPostgres {
    dir: PathBuf,
    port: u16,
}

impl TlsPostgres {
    /// Starts a server presenting `server` (signed by `ca`, which also vouches for
    /// client certificates).
    pub fn start(ca: &TestCa, server: &Issued) -> Self {
        assert!(
            std::path::Path::new(BIN).join("initdb").exists(),
            "PostgreSQL 15 is not installed ({BIN}); run scripts/ensure-postgres.sh as root"
        );
        let dir = fresh_dir("tls-postgres");
        let data = dir.join("data");
        let port = xdb_test_util::free_local_port();
        // The server reads its key only when the postgres user owns it, mode 0600.
        for (name, text) in [
            ("server.pem", server.cert_pem.as_str()),
            ("server.key", server.key_pem.as_str()),
        ] {
            std::fs::write(dir.join(name), text).expect("write the server's TLS files");
        }
        std::fs::copy(ca.ca_file(), dir.join("ca.pem")).expect("copy the CA certificate");
        chown("postgres", &dir);
        set_mode(&dir.join("server.key"), 0o600);
        run(
            Some("postgres"),
            &format!("{BIN}/initdb"),
            &[
                "-D",
                &data.display().to_string(),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
            ],
        );
        let settings = format!(
            "port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{dir}'\n\
             max_connections = 100\nshared_buffers = 16MB\nfsync = off\n\
             ssl = on\nssl_cert_file = '{dir}/server.pem'\nssl_key_file = '{dir}/server.key'\n\
             ssl_ca_file = '{dir}/ca.pem'\n",
            dir = dir.display()
        );
        append(&data.join("postgresql.conf"), &settings);
        std::fs::write(
            data.join("pg_hba.conf"),
            format!(
                "local all all trust\n\
                 hostssl all {CERT_USER} 127.0.0.1/32 cert\n\
                 hostssl all all 127.0.0.1/32 trust\n"
            ),
        )
        .expect("write pg_hba.conf");
        let server = Self { dir, port };
        run(
            Some("postgres"),
            &format!("{BIN}/pg_ctl"),
            &[
                "-D",
                &data.display().to_string(),
                "-l",
                &server.dir.join("server.log").display().to_string(),
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        server.sql(&format!("CREATE ROLE {CERT_USER} LOGIN SUPERUSER"));
        server
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://postgres@<host>:<port>/postgres?<tls>`: the superuser over TCP.
    pub fn url(&self, host: &str, tls: &str) -> String {
        let query = if tls.is_empty() {
            String::new()
        } else {
            format!("?{tls}")
        };
        format!("postgres://postgres@{host}:{}/postgres{query}", self.port)
    }

    /// Runs `sql` as the superuser over the server's Unix socket (no TLS there).
    pub fn sql(&self, sql: &str) -> String {
        run(
            Some("postgres"),
            "psql",
            &[
                "-h",
                &self.dir.display().to_string(),
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-XAtq",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ],
        )
    }

    /// Makes the server present `server` from now on (new connections), as an operator
    /// rotating certificates would: the files replaced, the configuration reloaded.
    pub fn present(&self, server: &Issued) {
        std::fs::write(self.dir.join("server.pem"), &server.cert_pem)
            .expect("replace the certificate");
        std::fs::write(self.dir.join("server.key"), &server.key_pem).expect("replace the key");
        self.sql("SELECT pg_reload_conf()");
    }

    /// Turns TLS off (new connections): the server answers "no TLS here".
    pub fn turn_tls_off(&self) {
        self.sql("ALTER SYSTEM SET ssl = off");
        self.sql("SELECT pg_reload_conf()");
    }
}

impl Drop for TlsPostgres {
    fn drop(&mut self) {
        let _ = std::process::Command::new("runuser")
            .args(["-u", "postgres", "--", &format!("{BIN}/pg_ctl"), "-D"])
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn append(path: &std::path::Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open the server's configuration");
    file.write_all(text.as_bytes())
        .expect("append to the configuration");
}

fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}
