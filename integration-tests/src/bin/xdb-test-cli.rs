//! The `xdb` command-line tool, built as a binary of this package so that the suite
//! can run it as a process (see `tests/suite/cli.rs`).

fn main() -> std::process::ExitCode {
    xdb_cli::main()
}
