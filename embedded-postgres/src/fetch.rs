//! Downloads the binaries' jar once into the cache and checks it against the pinned
//! SHA-256 before anything is unpacked from it.
//!
//! The jar is written to a temporary file beside its final name and renamed into place
//! only once its checksum matches, so an interrupted or tampered download never counts
//! as cached. The cache mirrors the repository's layout (`maven/<group>/<artifact>/…`).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use crate::error::Error;
use crate::platform::Platform;

/// The cached jar of `platform`, downloaded from `repository` when missing.
pub async fn cached_jar(
    platform: &Platform,
    cache_dir: &Path,
    repository: &str,
) -> Result<PathBuf, Error> {
    let jar = cache_dir.join("maven").join(platform.jar_path());
    if jar.is_file() {
        return Ok(jar);
    }
    let url = format!(
        "{}/{}",
        repository.trim_end_matches('/'),
        platform.jar_path()
    );
    let parent = jar.parent().expect("the jar path has a parent");
    tokio::fs::create_dir_all(parent)
        .await
        .map_err(Error::io("cannot create", parent))?;
    tracing::info!(%url, "downloading the PostgreSQL binaries (once)");
    let partial = parent.join(crate::staging_name("download"));
    let result = download(&url, cache_dir, &partial, platform.jar_sha256).await;
    if let Err(error) = result {
        let _ = tokio::fs::remove_file(&partial).await;
        return Err(error);
    }
    tokio::fs::rename(&partial, &jar)
        .await
        .map_err(Error::io("cannot move into place", &jar))?;
    Ok(jar)
}

async fn download(url: &str, cache: &Path, to: &Path, expected: &str) -> Result<(), Error> {
    let failed = |reason: String| Error::Download {
        url: url.to_string(),
        cache: cache.to_path_buf(),
        reason,
    };
    let client = reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(20))
        .build()
        .map_err(|e| failed(e.to_string()))?;
    let mut response = client
        .get(url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| failed(describe(&e)))?;
    let mut file = tokio::fs::File::create(to)
        .await
        .map_err(Error::io("cannot create", to))?;
    let mut hasher = Sha256::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| failed(describe(&e)))? {
        hasher.update(&chunk);
        file.write_all(&chunk)
            .await
            .map_err(Error::io("cannot write", to))?;
    }
    file.sync_all()
        .await
        .map_err(Error::io("cannot write", to))?;
    let actual = hex::encode(hasher.finalize());
    if actual != expected {
        return Err(Error::Checksum {
            url: url.to_string(),
            expected: expected.to_string(),
            actual,
        });
    }
    Ok(())
}

/// reqwest's error with its causes, which hold the useful part (refused, DNS, TLS).
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
