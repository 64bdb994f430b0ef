//! Who the PostgreSQL server runs as.
//!
//! PostgreSQL refuses to run as root (`initdb` and `postgres` both exit). When `xdb dev`
//! is started by root, the server runs as an unprivileged user instead (`nobody`, or
//! the user `XDB_DEV_POSTGRES_USER` names): its cluster directory is handed to that
//! user, and the binaries and the data directory must be reachable by it, which is
//! checked up front so the failure names the directory to change.

use std::ffi::CString;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::Error;

/// Names the user a root-started server runs as.
pub const USER_ENV: &str = "XDB_DEV_POSTGRES_USER";
const DEFAULT_USER: &str = "nobody";

/// An unprivileged user to run the server as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

impl ServerUser {
    /// `None` when this process is not root (the server runs as this process's user);
    /// otherwise the user to switch to.
    pub fn for_this_process() -> Result<Option<ServerUser>, Error> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Ok(None);
        }
        let name = std::env::var(USER_ENV).unwrap_or_else(|_| DEFAULT_USER.to_string());
        Self::lookup(&name).map(Some)
    }

    fn lookup(name: &str) -> Result<ServerUser, Error> {
        let missing = || {
            Error::Config(format!(
                "PostgreSQL refuses to run as root, so xdb dev runs it as user `{name}`, \
                 which does not exist here; name another unprivileged user with {USER_ENV}"
            ))
        };
        let c_name = CString::new(name).map_err(|_| missing())?;
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut buffer = vec![0 as libc::c_char; 16 * 1024];
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call and the buffer's length is given.
        let status = unsafe {
            libc::getpwnam_r(
                c_name.as_ptr(),
                &mut entry,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut found,
            )
        };
        if status != 0 || found.is_null() {
            return Err(missing());
        }
        if entry.pw_uid == 0 {
            return Err(Error::Config(format!(
                "{USER_ENV} names `{name}`, which is root; PostgreSQL refuses to run as root"
            )));
        }
        Ok(ServerUser {
            name: name.to_string(),
            uid: entry.pw_uid,
            gid: entry.pw_gid,
        })
    }

    /// Fails, naming `setting`, unless this user can reach `path` (every directory on the
    /// way searchable by it).
    pub fn check_reachable(&self, path: &Path, setting: &str) -> Result<(), Error> {
        let absolute = std::path::absolute(path).map_err(Error::io("cannot resolve", path))?;
        for dir in absolute.ancestors().skip(1) {
            let Ok(metadata) = std::fs::metadata(dir) else {
                continue;
            };
            let mode = metadata.mode();
            let searchable = if metadata.uid() == self.uid {
                mode & 0o100 != 0
            } else if metadata.gid() == self.gid {
                mode & 0o010 != 0
            } else {
                mode & 0o001 != 0
            };
            if !searchable {
                return Err(Error::Config(format!(
                    "PostgreSQL refuses to run as root, so xdb dev runs it as user `{}`, \
                     who cannot reach {} ({} is not searchable by it). Choose a directory \
                     it can reach with {setting} (as root the default is under /var), or \
                     run xdb dev as a normal user",
                    self.name,
                    path.display(),
                    dir.display()
                )));
            }
        }
        Ok(())
    }

    /// Makes this user the owner of `path`.
    pub fn take_ownership(&self, path: &Path) -> Result<(), Error> {
        std::os::unix::fs::chown(path, Some(self.uid), Some(self.gid))
            .map_err(Error::io("cannot hand over", path))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn nobody() -> ServerUser {
        ServerUser {
            name: "nobody".into(),
            uid: 65534,
            gid: 65534,
        }
    }

    #[test]
    fn a_directory_closed_to_others_is_named() {
        let root = tempfile::tempdir().unwrap();
        let closed = root.path().join("closed");
        std::fs::create_dir(&closed).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let inside = closed.join("data");
        let error = nobody()
            .check_reachable(&inside, "--data-dir")
            .unwrap_err()
            .to_string();
        assert!(error.contains("--data-dir"), "{error}");
        assert!(error.contains(&closed.display().to_string()), "{error}");

        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o711)).unwrap();
        nobody().check_reachable(&inside, "--data-dir").unwrap();
    }

    #[test]
    fn root_is_never_the_server_user() {
        let error = ServerUser::lookup("root").unwrap_err().to_string();
        assert!(error.contains("refuses to run as root"), "{error}");
        let error = ServerUser::lookup("no-such-user-xdb")
            .unwrap_err()
            .to_string();
        assert!(error.contains(USER_ENV), "{error}");
    }
}
