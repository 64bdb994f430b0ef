//! A MariaDB server of the test's own that takes TLS connections only.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{chown, fresh_dir, run, Issued, TestCa};

const SERVER: &str = "/usr/sbin/mariadbd";

/// A `mariadbd` on 127.0.0.1 and a free port, with its own data directory and socket,
/// the test CA's certificate and `require_secure_transport = ON`; `root` logs in over
/// TCP without a password. Stopped and removed when dropped.
pub struct TlsMariaDb {
    dir: PathBuf,
    port: u16,
    child: Child,
}

impl TlsMariaDb {
    /// Starts a server presenting `server` (signed by `ca`).
    pub fn start(ca: &TestCa, server: &Issued) -> Self {
        assert!(
            std::path::Path::new(SERVER).exists(),
            "MariaDB is not installed ({SERVER}); run scripts/ensure-mariadb.sh as root"
        );
        let dir = fresh_dir("tls-mariadb");
        let data = dir.join("data");
        let port = xdb_test_util::free_local_port();
        std::fs::write(dir.join("server.pem"), &server.cert_pem).expect("write the certificate");
        std::fs::write(dir.join("server.key"), &server.key_pem).expect("write the key");
        std::fs::copy(ca.ca_file(), dir.join("ca.pem")).expect("copy the CA certificate");
        std::fs::create_dir_all(&data).expect("create the data directory");
        chown("mysql", &dir);
        run(
            None,
            "mariadb-install-db",
            &[
                "--no-defaults",
                &format!("--datadir={}", data.display()),
                "--user=mysql",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
        );
        let path = |name: &str| dir.join(name).display().to_string();
        let child = Command::new(SERVER)
            .args([
                "--no-defaults",
                "--user=mysql",
                &format!("--datadir={}", data.display()),
                &format!("--port={port}"),
                "--bind-address=127.0.0.1",
                &format!("--socket={}", path("mysqld.sock")),
                &format!("--pid-file={}", path("mysqld.pid")),
                &format!("--log-error={}", path("error.log")),
                &format!("--ssl-ca={}", path("ca.pem")),
                &format!("--ssl-cert={}", path("server.pem")),
                &format!("--ssl-key={}", path("server.key")),
                "--require-secure-transport=ON",
                "--innodb-buffer-pool-size=32M",
                "--innodb-flush-log-at-trx-commit=2",
                "--max-connections=200",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {SERVER}: {error}"));
        let mut server = Self { dir, port, child };
        server.wait_ready();
        // Over the socket: a client's TCP login from 127.0.0.1 is root@127.0.0.1.
        server.sql(
            "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY ''; \
             GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
        );
        server
    }

    /// `mysql://root@<host>:<port>/mysql?<tls>`.
    pub fn url(&self, host: &str, tls: &str) -> String {
        let query = if tls.is_empty() {
            String::new()
        } else {
            format!("?{tls}")
        };
        format!("mysql://root@{host}:{}/mysql{query}", self.port)
    }

    /// Runs `sql` as root over the server's socket (TLS is not required there).
    pub fn sql(&self, sql: &str) -> String {
        run(
            None,
            "mariadb",
            &[
                "--no-defaults",
                &format!("--socket={}", self.dir.join("mysqld.sock").display()),
                "-uroot",
                "-N",
                "-B",
                "-e",
                sql,
            ],
        )
    }

    /// Makes the server present `server` from now on (new connections): the files
    /// replaced, then `FLUSH SSL`.
    pub fn present(&self, server: &Issued) {
        std::fs::write(self.dir.join("server.pem"), &server.cert_pem)
            .expect("replace the certificate");
        std::fs::write(self.dir.join("server.key"), &server.key_pem).expect("replace the key");
        self.sql("FLUSH SSL");
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let socket = self.dir.join("mysqld.sock");
        loop {
            if let Some(status) = self.child.try_wait().expect("poll mariadbd") {
                let log = std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default();
                panic!("mariadbd exited ({status}) before it was ready:\n{log}");
            }
            let ready = socket.exists()
                && Command::new("mariadb-admin")
                    .args(["--no-defaults", &format!("--socket={}", socket.display())])
                    .args(["-uroot", "ping"])
                    .output()
                    .is_ok_and(|output| output.status.success());
            if ready {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "mariadbd not ready within 60 s; see {}",
                self.dir.join("error.log").display()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for TlsMariaDb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
