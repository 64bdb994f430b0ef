//! `docs/configuration.md` is generated from the settings (`configuration_markdown`):
//! this test fails when the committed page differs, naming the command that rewrites it.
//! It also holds `deploy/xdb.example.toml` to its promise that its values are the
//! defaults.

use std::path::PathBuf;

use figment::providers::{Format, Toml};
use figment::Figment;
use xdb_config::{configuration_markdown, Settings, REGENERATE_COMMAND};

fn repository_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

#[test]
fn the_configuration_page_is_generated_from_the_settings() {
    let generated = configuration_markdown().unwrap_or_else(|problems| {
        panic!(
            "settings that cannot be documented:\n  - {}",
            problems.join("\n  - ")
        )
    });
    let page = repository_file("docs/configuration.md");
    if std::env::var_os("XDB_REGENERATE_DOCS").is_some() {
        std::fs::write(&page, &generated).expect("docs/configuration.md is writable");
        return;
    }
    let committed = std::fs::read_to_string(&page).unwrap_or_default();
    if committed != generated {
        let first_difference = committed
            .lines()
            .zip(generated.lines())
            .position(|(old, new)| old != new)
            .map_or_else(
                || "one page is a prefix of the other".to_string(),
                |line| format!("first difference at line {}", line + 1),
            );
        panic!(
            "docs/configuration.md does not match the settings ({first_difference}); \
             regenerate it with: {REGENERATE_COMMAND}"
        );
    }
}

#[test]
fn the_example_file_holds_the_defaults() {
    let example = repository_file("deploy/xdb.example.toml");
    let settings: Settings = Figment::new()
        .merge(Toml::file_exact(&example))
        .extract()
        .expect("deploy/xdb.example.toml parses as the settings");
    assert_eq!(
        settings,
        Settings::default(),
        "deploy/xdb.example.toml says its values are the defaults"
    );
}
