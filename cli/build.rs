//! Names the commit `xdb --version` was built from (`XDB_COMMIT`): its short hash, or
//! `unknown` outside a git checkout (a source tarball).

use std::process::Command;

fn main() {
    let git = |args: &[&str]| -> Option<String> {
        let output = Command::new("git").args(args).output().ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    let commit = match git(&["rev-parse", "--short=10", "HEAD"]) {
        Some(hash) if !hash.is_empty() => hash,
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=XDB_COMMIT={commit}");
    // Built again when HEAD moves: a checkout, or a commit on the current branch.
    if let Some(file) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={file}");
    }
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(file) = git(&["rev-parse", "--git-path", &reference]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
}
