//! A Maven repository on 127.0.0.1 serving the embedded PostgreSQL jar from the
//! machine's cache, counting the jar's downloads; it can serve a tampered copy.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use xdb_embedded_postgres::{Platform, DEFAULT_REPOSITORY};

#[derive(Clone)]
struct Shared {
    root: PathBuf,
    jar_requests: Arc<AtomicUsize>,
    tampered: Arc<AtomicBool>,
}

pub struct Mirror {
    address: std::net::SocketAddr,
    shared: Shared,
}

impl Mirror {
    /// Serves `<machine cache>/maven`, fetching the jar from Maven Central into it first
    /// when missing (`XDB_DEV_CACHE_DIR`, else `xdb dev`'s default cache).
    pub async fn start() -> Mirror {
        let platform = Platform::current().expect("a platform with published binaries");
        let machine_cache = std::env::var_os(xdb_embedded_postgres::CACHE_DIR_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(xdb_embedded_postgres::default_cache_dir);
        let repository = std::env::var(xdb_embedded_postgres::REPOSITORY_ENV)
            .unwrap_or_else(|_| DEFAULT_REPOSITORY.to_string());
        xdb_embedded_postgres::cached_jar(&platform, &machine_cache, &repository)
            .await
            .unwrap_or_else(|e| panic!("the machine's copy of the PostgreSQL jar: {e}"));
        let shared = Shared {
            root: machine_cache.join("maven"),
            jar_requests: Arc::default(),
            tampered: Arc::default(),
        };
        let app = Router::new()
            .route("/{*path}", get(serve))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Mirror { address, shared }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    pub fn jar_requests(&self) -> usize {
        self.shared.jar_requests.load(Ordering::SeqCst)
    }

    /// From now on the jar's bytes are altered.
    pub fn tamper(&self) {
        self.shared.tampered.store(true, Ordering::SeqCst);
    }
}

async fn serve(
    State(shared): State<Shared>,
    Path(path): Path<String>,
) -> Result<Vec<u8>, StatusCode> {
    if path.split('/').any(|part| part == ".." || part.is_empty()) {
        return Err(StatusCode::BAD_REQUEST);
    }
    let mut bytes = tokio::fs::read(shared.root.join(&path))
        .await
        .map_err(|_| StatusCode::NOT_FOUND)?;
    if path.ends_with(".jar") {
        shared.jar_requests.fetch_add(1, Ordering::SeqCst);
        if shared.tampered.load(Ordering::SeqCst) {
            let last = bytes.len() - 1;
            bytes[last] ^= 0xff;
        }
    }
    Ok(bytes)
}
