//! Unpacks the jar's `.txz` into the cache, once per release and platform.
//!
//! It is unpacked into a temporary directory and renamed into place when complete, so a
//! half-unpacked installation is never used; two `xdb dev` starting at once each unpack
//! and the second rename finds the first one's result. Everything is made readable by
//! others, since a root-started `xdb dev` runs the server as an unprivileged user.

use std::fs::File;
use std::io::BufReader;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::platform::Platform;

/// The unpacked installation (the directory holding `bin/`), unpacking `jar` if needed.
pub fn installation(platform: &Platform, cache_dir: &Path, jar: &Path) -> Result<PathBuf, Error> {
    let target = cache_dir.join(platform.install_name());
    if target.join("bin").join("postgres").is_file() {
        return Ok(target);
    }
    let staging = cache_dir.join(crate::staging_name("unpack"));
    let _ = std::fs::remove_dir_all(&staging);
    let unpacked = unpack(platform, jar, &staging).and_then(|()| {
        match std::fs::rename(&staging, &target) {
            Ok(()) => Ok(()),
            // Another xdb dev unpacked it first.
            Err(_) if target.join("bin").join("postgres").is_file() => Ok(()),
            Err(e) => Err(Error::io("cannot move into place", &target)(e)),
        }
    });
    let _ = std::fs::remove_dir_all(&staging);
    unpacked.map(|()| target)
}

fn unpack(platform: &Platform, jar: &Path, into: &Path) -> Result<(), Error> {
    let failed = |reason: String| Error::Unpack {
        archive: jar.to_path_buf(),
        reason,
    };
    let file = File::open(jar).map_err(Error::io("cannot open", jar))?;
    let mut archive =
        zip::ZipArchive::new(BufReader::new(file)).map_err(|e| failed(e.to_string()))?;
    let entry = archive
        .by_name(platform.archive_entry)
        .map_err(|e| failed(format!("{}: {e}", platform.archive_entry)))?;
    let xz = liblzma::read::XzDecoder::new(BufReader::new(entry));
    let mut tar = tar::Archive::new(xz);
    tar.set_preserve_permissions(true);
    tar.unpack(into).map_err(|e| failed(e.to_string()))?;
    readable_by_others(into)
}

/// Adds read (and, where the owner has it, execute) permission for group and others.
fn readable_by_others(root: &Path) -> Result<(), Error> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let metadata = std::fs::symlink_metadata(&path).map_err(Error::io("cannot read", &path))?;
        if metadata.file_type().is_symlink() {
            continue;
        }
        let mode = metadata.permissions().mode();
        let wanted = mode | 0o044 | if mode & 0o100 != 0 { 0o011 } else { 0 };
        if wanted != mode {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(wanted))
                .map_err(Error::io("cannot change the permissions of", &path))?;
        }
        if metadata.is_dir() {
            for entry in std::fs::read_dir(&path).map_err(Error::io("cannot read", &path))? {
                stack.push(entry.map_err(Error::io("cannot read", &path))?.path());
            }
        }
    }
    Ok(())
}
