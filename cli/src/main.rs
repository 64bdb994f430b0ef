//! `xdb`: the command-line client of the XDB service API (see `xdb --help`).

fn main() -> std::process::ExitCode {
    xdb_cli::main()
}
