//! The services' memory allocator, one choice for every XDB binary that serves.
//!
//! mimalloc: under load the services allocate per request and per statement, and glibc
//! malloc's functions were about 5% of all CPU samples on the machine (14% of the Rust
//! processes' samples) in a profile of the benchmark's load.
//!
//! Transparent huge pages off: mimalloc asks for huge pages on the arenas it reserves,
//! and a 2 MiB page is resident as soon as one byte of it is touched. Under the bench's
//! load they cost each service 4 to 19 MB (the API service on MariaDB peaked at 101–109
//! MB with them, 90–93 MB without); a memory limit in Kubernetes counts every such page.

pub use mimalloc::MiMalloc as Allocator;

/// mimalloc's own setting for huge pages: when the environment sets it, mimalloc
/// decides and this crate leaves the process as it is.
const MIMALLOC_ALLOW_THP: &str = "MIMALLOC_ALLOW_THP";

/// Turns transparent huge pages off for this process (Linux), unless
/// `MIMALLOC_ALLOW_THP` is set. Call it first in `main`: pages already huge stay so.
pub fn keep_pages_small() {
    if std::env::var_os(MIMALLOC_ALLOW_THP).is_some() {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE only sets a flag on this process's memory map.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn huge_pages_are_off_after_the_call() {
        super::keep_pages_small();
        // SAFETY: PR_GET_THP_DISABLE only reads the flag.
        let disabled = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        let expected = i32::from(std::env::var_os(super::MIMALLOC_ALLOW_THP).is_none());
        assert_eq!(disabled, expected);
    }
}
