//! What `xdb dev` prints once everything is up: where things are and what to try.

use std::net::SocketAddr;
use std::time::Duration;

/// The last line of the banner; scripts wait for it.
pub const READY_LINE: &str = "Ctrl-C stops everything.";

/// Where the running pieces are.
#[derive(Debug, Clone)]
pub struct Running {
    pub api: SocketAddr,
    pub worker: SocketAddr,
    /// The database URL, its password redacted.
    pub database: String,
    /// "embedded PostgreSQL 15.19.0, data in …" or "your database".
    pub database_note: String,
    pub started_in: Duration,
}

/// The banner's text, one line per entry, ending with [`READY_LINE`].
pub fn banner(running: &Running) -> String {
    let api = format!("http://{}", running.api);
    let worker = format!("http://{}", running.worker);
    let mut lines = vec![
        format!(
            "xdb dev is ready in {:.1} s ({})",
            running.started_in.as_secs_f64(),
            running.database_note
        ),
        String::new(),
        format!("  Console   {api}/ui"),
        format!("  API       {api}/api/v1/xdb  (OpenAPI: {api}/api/v1/xdb/openapi.json)"),
        format!("  Worker    {worker}  (samples: UserSignupProcess, SiteCreationProcess)"),
        format!("  Database  {}", running.database),
        String::new(),
        "Try, in another terminal:".to_string(),
    ];
    if running.api.to_string() != "127.0.0.1:8801" {
        lines.push(format!("  export XDB_URL={api}"));
    }
    lines.extend(next_commands(&worker).into_iter().map(|c| format!("  {c}")));
    lines.push(String::new());
    lines.push(READY_LINE.to_string());
    lines.join("\n") + "\n"
}

/// Start a sign-up, verify it by RPC, wait for it to complete.
pub fn next_commands(worker_url: &str) -> [String; 3] {
    [
        format!(
            "xdb start user-signup-ann --type UserSignupProcess --state SubmitState \
             --skip-wait-until --worker-url {worker_url} --load-global form,status,source --table user \
             --key user_id=ann --attr 'form={{\"email\":\"ann@example.com\"}}' --attr status=waiting"
        ),
        "xdb rpc user-signup-ann verify --input '\"cli\"' --load-global form,status,source --lock exclusive"
            .to_string(),
        "xdb wait user-signup-ann --timeout 30s".to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(api: &str) -> Running {
        Running {
            api: api.parse().unwrap(),
            worker: "127.0.0.1:8803".parse().unwrap(),
            database: "postgres://postgres@127.0.0.1:5999/xdb".into(),
            database_note: "embedded PostgreSQL".into(),
            started_in: Duration::from_millis(1234),
        }
    }

    #[test]
    fn the_banner_names_every_url_and_ends_with_the_ready_line() {
        let text = banner(&running("127.0.0.1:8801"));
        assert!(
            text.starts_with("xdb dev is ready in 1.2 s (embedded PostgreSQL)"),
            "{text}"
        );
        assert!(
            text.contains("Console   http://127.0.0.1:8801/ui"),
            "{text}"
        );
        assert!(
            text.contains("Database  postgres://postgres@127.0.0.1:5999/xdb"),
            "{text}"
        );
        assert!(
            text.contains("--worker-url http://127.0.0.1:8803 "),
            "{text}"
        );
        assert!(
            !text.contains("XDB_URL"),
            "the default URL needs no export: {text}"
        );
        assert!(text.ends_with(&format!("{READY_LINE}\n")), "{text}");
    }

    #[test]
    fn another_api_address_is_exported_for_the_commands() {
        let text = banner(&running("127.0.0.1:9901"));
        assert!(
            text.contains("  export XDB_URL=http://127.0.0.1:9901\n"),
            "{text}"
        );
    }
}
