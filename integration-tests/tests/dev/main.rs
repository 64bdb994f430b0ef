//! `xdb dev` run as a process, as a new user runs it: from an empty cache it fetches
//! the PostgreSQL binaries (once), starts, runs the sign-up sample through the very
//! commands it prints, and stops on Ctrl-C; a second start reuses the cache and the
//! data. PostgreSQL programs placed first on PATH are never run, and a download that is
//! missing or not the published archive stops it with the URL, caching nothing.
//!
//! The cold path runs every time without the network: the jar is served over HTTP on
//! 127.0.0.1 from the machine's cache (filled from Maven Central the first time, as
//! `xdb dev` itself would), and each test's own cache starts empty.
//!
//! Its own test binary: each test starts an embedded PostgreSQL.

mod mirror;
mod run;

use std::path::Path;
use std::time::Duration;

use run::{free_port, DevRun, SAMPLE_COMMANDS};
use xdb_cli::dev::banner::READY_LINE;

#[tokio::test(flavor = "multi_thread")]
async fn from_an_empty_cache_it_starts_runs_the_sample_stops_and_restarts_on_its_data() {
    let mirror = mirror::Mirror::start().await;
    let cache = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let decoys = run::Decoys::new();

    // Cold: nothing cached; the jar is fetched once, checked and unpacked.
    let first = DevRun::start(&mirror.url(), cache.path(), Some(data.path()), &decoys).await;
    let banner = first.banner();
    assert_eq!(mirror.jar_requests(), 1, "one download: {banner}");
    assert!(
        banner.contains(&format!("data in {}", data.path().display())),
        "{banner}"
    );
    assert!(
        banner.contains(&format!("Console   {}/ui", first.api_url())),
        "{banner}"
    );
    let commands = first.printed_commands();
    assert_eq!(commands.len(), SAMPLE_COMMANDS, "{banner}");
    let mut outputs = Vec::new();
    for command in &commands {
        outputs.push(first.run_printed(command).await);
    }
    let waited = outputs.last().unwrap();
    assert!(waited.contains("COMPLETED"), "xdb wait: {waited}");
    first.stop().await;
    decoys.assert_never_run();

    // Warm: the cache only (the repository is unreachable now) and the same data.
    let second = DevRun::start(
        "http://127.0.0.1:9",
        cache.path(),
        Some(data.path()),
        &decoys,
    )
    .await;
    let (ready, postgres) = second.start_times();
    assert!(
        ready - postgres <= Duration::from_secs(1),
        "a second start takes at most a second beyond PostgreSQL's own ({postgres:?}): {ready:?}\n{}",
        second.banner()
    );
    let described = second
        .xdb(&["describe", "user-signup-ann", "-o", "json"])
        .await;
    assert!(
        described.contains("\"COMPLETED\""),
        "kept across restarts: {described}"
    );
    second.stop().await;
    decoys.assert_never_run();
    assert_eq!(
        mirror.jar_requests(),
        1,
        "the second start downloaded nothing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_or_tampered_download_stops_it_with_the_url_and_caches_nothing() {
    let mirror = mirror::Mirror::start().await;
    let decoys = run::Decoys::new();

    let cache = tempfile::tempdir().unwrap();
    let unreachable = format!("http://127.0.0.1:{}", free_port());
    let (code, output) = run::dev_until_exit(&unreachable, cache.path(), &decoys).await;
    assert_ne!(code, 0, "{output}");
    assert!(
        output.contains("cannot download the PostgreSQL binaries from http://127.0.0.1:"),
        "{output}"
    );
    assert!(output.contains("XDB_DEV_MAVEN_REPOSITORY"), "{output}");
    assert_cached_nothing(cache.path());

    mirror.tamper();
    let cache = tempfile::tempdir().unwrap();
    let (code, output) = run::dev_until_exit(&mirror.url(), cache.path(), &decoys).await;
    assert_ne!(code, 0, "{output}");
    assert!(
        output.contains("is not the published archive (SHA-256"),
        "{output}"
    );
    assert!(!output.contains(READY_LINE), "{output}");
    assert_cached_nothing(cache.path());
    decoys.assert_never_run();
}

fn assert_cached_nothing(cache: &Path) {
    let files: Vec<_> = walk(cache)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jar") || p.ends_with("bin/postgres"))
        .collect();
    assert!(files.is_empty(), "cached: {files:?}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}
