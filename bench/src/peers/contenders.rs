//! The peers started on this machine: Restate, DBOS Transact and Temporal, each with its
//! own data, ports and logs, beside the endpoint or app that runs the bench's workloads
//! (bench/peers/).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::generator::{HttpTarget, Target};
use super::install;
use super::process::PeerProcess;
use super::session::{
    database_server, database_url, wait_for_http, wait_for_port, Component, Session,
};
use super::Peer;
use crate::database::Dialect;
use crate::services::free_local_addr;

/// DBOS's system database, created fresh in the bench's PostgreSQL server.
pub const DBOS_DATABASE: &str = "xdb_bench_dbos";

/// Starts `peer`; `postgres_url` is the bench's PostgreSQL server (DBOS keeps its state
/// there).
pub async fn start(peer: Peer, postgres_url: &str) -> anyhow::Result<Session> {
    let dir = std::env::temp_dir().join(format!(
        "xdb-bench-{}-{}",
        peer.slug(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    eprintln!(
        "xdb-bench: {} data and logs in {}",
        peer.label(),
        dir.display()
    );
    let started = match peer {
        Peer::Restate => restate(&dir).await,
        Peer::Dbos => dbos(&dir, postgres_url).await,
        Peer::Temporal => temporal(&dir).await,
    };
    match started {
        Ok(mut session) => {
            session.temp_dirs.push(dir);
            Ok(session)
        }
        Err(error) => {
            // Its programs are stopped already (dropped); their logs go with the rest.
            let _ = std::fs::remove_dir_all(&dir);
            Err(error)
        }
    }
}

/// Restate's server (RocksDB under `dir`, its own ports) and the Node endpoint,
/// registered through the admin API; the bench calls the HTTP ingress.
async fn restate(dir: &Path) -> anyhow::Result<Session> {
    let (ingress, admin, fabric) = (free_local_addr()?, free_local_addr()?, free_local_addr()?);
    let mut server = Command::new(install::restate_server());
    server
        .args([
            "--base-dir".as_ref(),
            dir.join("data").as_os_str(),
            "--no-logo".as_ref(),
        ])
        .env("RESTATE_LISTEN_MODE", "tcp")
        .env("RESTATE_INGRESS__BIND_ADDRESS", ingress.to_string())
        .env("RESTATE_ADMIN__BIND_ADDRESS", admin.to_string())
        .env("RESTATE_BIND_ADDRESS", fabric.to_string())
        .env("RESTATE_ADVERTISED_ADDRESS", format!("http://{fabric}/"))
        .env("RESTATE_ADMIN__DISABLE_WEB_UI", "true")
        .env("RESTATE_DISABLE_TELEMETRY", "true")
        // As the XDB services run: warnings only.
        .env("RESTATE_LOG_FILTER", "warn");
    let mut server = PeerProcess::spawn("restate-server", server, dir)?;
    let admin_url = format!("http://{admin}");
    wait_for_http(&mut server, &format!("{admin_url}/health")).await?;
    let endpoint_addr = free_local_addr()?;
    let mut endpoint = Command::new("node");
    endpoint
        .arg(install::restate_endpoint())
        .env("PORT", endpoint_addr.port().to_string())
        .env("RESTATE_LOGGING", "WARN");
    let mut endpoint = PeerProcess::spawn("restate-endpoint", endpoint, dir)?;
    wait_for_port(&mut endpoint, endpoint_addr).await?;
    register_deployment(&admin_url, &format!("http://{endpoint_addr}")).await?;
    let target = HttpTarget::new(
        format!("http://{ingress}"),
        "/bench/twoStep",
        "/bench/sleep",
        false,
    );
    let mut session = Session::new(Peer::Restate.label(), Target::Http(target));
    session.components = vec![
        Component::tree("restate-server", server.pid()),
        Component::tree("Node endpoint", endpoint.pid()),
    ];
    session.processes = vec![server, endpoint];
    Ok(session)
}

/// `POST /deployments` on Restate's admin API until it accepts the endpoint.
async fn register_deployment(admin_url: &str, endpoint_url: &str) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = http
            .post(format!("{admin_url}/deployments"))
            .json(&serde_json::json!({ "uri": endpoint_url }))
            .send()
            .await;
        let error = match answer {
            Ok(r) if r.status().is_success() => return Ok(()),
            Ok(r) => format!("{}: {}", r.status(), r.text().await.unwrap_or_default()),
            Err(e) => e.to_string(),
        };
        anyhow::ensure!(
            Instant::now() < deadline,
            "Restate did not register {endpoint_url}: {error}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// DBOS's app, its system database [`DBOS_DATABASE`] fresh in the bench's PostgreSQL.
async fn dbos(dir: &Path, postgres_url: &str) -> anyhow::Result<Session> {
    let admin = crate::database::connect(postgres_url)
        .await
        .context("cannot reach PostgreSQL (start it with scripts/ensure-postgres.sh)")?;
    admin
        .batch_execute(&format!(
            "DROP DATABASE IF EXISTS {DBOS_DATABASE} WITH (FORCE)"
        ))
        .await
        .with_context(|| format!("dropping {DBOS_DATABASE}"))?;
    // A statement of its own: CREATE DATABASE cannot run in a transaction block.
    admin
        .batch_execute(&format!("CREATE DATABASE {DBOS_DATABASE}"))
        .await
        .with_context(|| format!("creating {DBOS_DATABASE}"))?;
    // SQLAlchemy knows the scheme as postgresql only.
    let system_url =
        database_url(postgres_url, DBOS_DATABASE).replacen("postgres://", "postgresql://", 1);
    let addr = free_local_addr()?;
    let (python, app) = install::python_app(Peer::Dbos);
    let mut command = Command::new(python);
    command
        .arg(app)
        .env("DBOS_SYSTEM_DATABASE_URL", system_url)
        .env("PORT", addr.port().to_string());
    let mut app = PeerProcess::spawn("dbos-app", command, dir)?;
    let mut session = Session::new(Peer::Dbos.label(), Target::Http(http_app(addr)));
    session.peer_database = Some((postgres_url.to_string(), DBOS_DATABASE.to_string()));
    wait_for_http(&mut app, &format!("http://{addr}/health")).await?;
    session.components = vec![
        Component::tree("DBOS app (Python)", app.pid()),
        database_server(Dialect::Postgres),
    ];
    session.processes = vec![app];
    Ok(session)
}

/// Temporal's dev server (SQLite file under `dir`, its own ports) and the Python app
/// that is both its worker and the bench's client.
async fn temporal(dir: &Path) -> anyhow::Result<Session> {
    let (grpc, http, metrics) = (free_local_addr()?, free_local_addr()?, free_local_addr()?);
    let db: PathBuf = dir.join("temporal.db");
    let mut server = Command::new(install::temporal_cli());
    server
        .args([
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--log-level",
            "warn",
        ])
        .args(["--port", &grpc.port().to_string()])
        .args(["--http-port", &http.port().to_string()])
        .args(["--metrics-port", &metrics.port().to_string()])
        .arg("--db-filename")
        .arg(&db);
    let mut server = PeerProcess::spawn("temporal-server", server, dir)?;
    wait_for_port(&mut server, grpc).await?;
    let addr = free_local_addr()?;
    let (python, app_path) = install::python_app(Peer::Temporal);
    // The gRPC port opens before the default namespace is there, and the app exits when
    // its client cannot connect: a few tries.
    let mut tries = 0;
    let app = loop {
        let mut command = Command::new(&python);
        command
            .arg(&app_path)
            .env("TEMPORAL_ADDRESS", grpc.to_string())
            .env("PORT", addr.port().to_string());
        let mut app = PeerProcess::spawn("temporal-app", command, dir)?;
        match wait_for_http(&mut app, &format!("http://{addr}/health")).await {
            Ok(()) => break app,
            Err(error) if tries >= 5 => return Err(error),
            Err(_) => tries += 1,
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let mut session = Session::new(Peer::Temporal.label(), Target::Http(http_app(addr)));
    session.components = vec![
        Component::tree("Temporal dev server", server.pid()),
        Component::tree("Python worker and client", app.pid()),
    ];
    session.processes = vec![server, app];
    Ok(session)
}

/// The HTTP entry of bench/peers' Python apps.
fn http_app(addr: std::net::SocketAddr) -> HttpTarget {
    HttpTarget::new(format!("http://{addr}"), "/two-step", "/sleep", true)
}
