//! The configuration reference, `docs/configuration.md`, generated from the settings
//! themselves so that it cannot drift: the sections are the loader's [`SECTIONS`], the
//! keys and defaults are [`Settings::default`] as serialized, and each key's type and
//! description come from its doc comment through the derived schema (`utoipa`).
//!
//! There is no second, hand-kept list: a key without a doc comment, or a section the
//! loader does not know, is an error naming it. `tests/configuration_docs.rs` compares
//! the page with this output. This module only renders text; it never reads a file.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::load::SECTIONS;
use crate::settings::Settings;

/// The command that rewrites the page, named wherever it is stale.
pub const REGENERATE_COMMAND: &str =
    "XDB_REGENERATE_DOCS=1 cargo test -p xdb-config --test configuration_docs";

/// `docs/configuration.md`, or every setting that cannot be documented (no doc
/// comment, a section the loader does not read).
pub fn configuration_markdown() -> Result<String, Vec<String>> {
    let sections = render_sections(&Settings::default(), &SECTIONS)?;
    Ok(format!("{}{sections}", intro()))
}

/// The page's opening: how settings are given, before the tables.
fn intro() -> String {
    format!(
        "# Configuration\n\
         \n\
         <!-- Generated from xdb-config/src/settings.rs; do not edit. \
         Regenerate: {REGENERATE_COMMAND} -->\n\
         \n\
         For operators: every setting of the XDB services, generated from the code that \
         reads them.\n\
         \n\
         `xdb-api-service`, `xdb-async-service` and `xdb-server` read one TOML file, \
         given with `--config FILE` or `XDB_CONFIG`. Every key is optional except \
         `database.url`. `deploy/xdb.example.toml` is a commented file with the \
         defaults.\n\
         \n\
         Layers, the last one wins:\n\
         \n\
         1. the defaults below;\n\
         2. the file;\n\
         3. environment variables `XDB_<SECTION>_<KEY>`;\n\
         4. flags. `--set section.key=value` sets any key. Some keys also have a flag of \
         their own: each binary's `--help` lists them.\n\
         \n\
         A list is one variable in TOML's inline syntax, for example \
         `XDB_SECURITY_API_TOKENS='[\"…\"]'` or \
         `XDB_SECURITY_TOKENS='[{{name=\"oncall\", token=\"…\", roles=[\"read\"]}}]'`. \
         Other `XDB_` variables are ignored.\n\
         \n\
         Start-up checks every setting at once. An unknown key, a wrong type or a value \
         out of bounds stops it, with a message naming each problem and where its value \
         came from. The database URL is never echoed.\n"
    )
}

/// One section per name of `sections`, in that order, each a table of its keys.
fn render_sections<T: ToSchema + Serialize>(
    defaults: &T,
    sections: &[&str],
) -> Result<String, Vec<String>> {
    let schemas = Schemas::of::<T>();
    let defaults = serde_json::to_value(defaults).expect("settings serialize to JSON");
    let defaults = defaults.as_object().cloned().unwrap_or_default();
    let root_properties = schemas.root.get("properties").and_then(Value::as_object);
    let mut problems = Vec::new();
    for name in defaults.keys() {
        if !sections.contains(&name.as_str()) {
            problems.push(format!(
                "[{name}] is not in the loader's SECTIONS, so XDB_{}_* variables would not \
                 set it",
                name.to_ascii_uppercase()
            ));
        }
    }
    let mut text = String::new();
    for &section in sections {
        let (Some(keys), Some(property)) = (
            defaults.get(section).and_then(Value::as_object),
            root_properties.and_then(|p| p.get(section)),
        ) else {
            problems.push(format!(
                "[{section}] is in the loader's SECTIONS but not a table of the settings"
            ));
            continue;
        };
        text.push_str(&render_section(
            section,
            property,
            keys,
            &schemas,
            &mut problems,
        ));
    }
    if problems.is_empty() {
        Ok(text)
    } else {
        Err(problems)
    }
}

/// `## [section]`, its description and the table of its keys.
fn render_section(
    section: &str,
    property: &Value,
    defaults: &Map<String, Value>,
    schemas: &Schemas,
    problems: &mut Vec<String>,
) -> String {
    let schema = schemas.resolve(property);
    // The field's own doc comment, else its type's.
    let about = description(property)
        .or_else(|| description(schema))
        .map(|about| sentence(strip_section_label(&about, section)))
        .unwrap_or_default();
    let mut text = format!("\n## `[{section}]`\n\n");
    if !about.is_empty() {
        text.push_str(&about);
        text.push_str("\n\n");
    }
    text.push_str("| Key | Environment variable | Type | Default | Description |\n");
    text.push_str("|---|---|---|---|---|\n");
    let properties = schema.get("properties").and_then(Value::as_object);
    let sorted: BTreeMap<&String, &Value> = defaults.iter().collect();
    for (key, default) in sorted {
        let Some(field) = properties.and_then(|p| p.get(key)) else {
            problems.push(format!(
                "{section}.{key} is missing from the settings' schema"
            ));
            continue;
        };
        let Some(about) = description(field) else {
            problems.push(format!(
                "{section}.{key} has no doc comment: document it where it is declared"
            ));
            continue;
        };
        text.push_str(&format!(
            "| `{key}` | `XDB_{}_{}` | {} | {} | {} |\n",
            section.to_ascii_uppercase(),
            key.to_ascii_uppercase(),
            type_name(field, schemas),
            default_text(default),
            cell(&about),
        ));
        // A list of tables: one row per field of its entries.
        if let Some(entry) = field.get("items").map(|items| schemas.resolve(items)) {
            text.push_str(&render_entry_fields(section, key, entry, schemas, problems));
        }
    }
    text
}

/// Rows for the fields of each entry of a list of tables (`security.tokens`), which are
/// set only as part of their list.
fn render_entry_fields(
    section: &str,
    key: &str,
    entry: &Value,
    schemas: &Schemas,
    problems: &mut Vec<String>,
) -> String {
    let Some(fields) = entry.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let required: Vec<&str> = entry
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut text = String::new();
    // Sorted here: the JSON map's order depends on serde_json's features in the build.
    let fields: BTreeMap<&String, &Value> = fields.iter().collect();
    for (name, field) in fields {
        let Some(about) = description(field) else {
            problems.push(format!("{section}.{key}[].{name} has no doc comment"));
            continue;
        };
        let default = if required.contains(&name.as_str()) {
            "required"
        } else {
            "none"
        };
        text.push_str(&format!(
            "| `{key}[].{name}` | (in `XDB_{}_{}`) | {} | {default} | {} |\n",
            section.to_ascii_uppercase(),
            key.to_ascii_uppercase(),
            type_name(field, schemas),
            cell(&about),
        ));
    }
    text
}

/// The derived schema of the settings: the root and every type it refers to, as JSON.
struct Schemas {
    root: Value,
    components: BTreeMap<String, Value>,
}

impl Schemas {
    fn of<T: ToSchema>() -> Self {
        let mut components = Vec::new();
        T::schemas(&mut components);
        let components = components
            .into_iter()
            .map(|(name, schema)| {
                let schema = serde_json::to_value(schema).expect("schemas serialize to JSON");
                (name, schema)
            })
            .collect();
        Self {
            root: serde_json::to_value(T::schema()).expect("schemas serialize to JSON"),
            components,
        }
    }

    /// The schema `value` refers to (`$ref`, directly or as the one `oneOf` of a
    /// documented field), or `value` itself.
    fn resolve<'a>(&'a self, value: &'a Value) -> &'a Value {
        let reference = value.get("$ref").or_else(|| {
            value
                .get("oneOf")
                .and_then(Value::as_array)
                .and_then(|one_of| one_of.first())
                .and_then(|first| first.get("$ref"))
        });
        reference
            .and_then(Value::as_str)
            .and_then(|path| path.rsplit('/').next())
            .and_then(|name| self.components.get(name))
            .unwrap_or(value)
    }
}

/// A field's doc comment: on the field, or on the `oneOf` wrapping a referenced type.
fn description(value: &Value) -> Option<String> {
    let text = value
        .get("description")
        .and_then(Value::as_str)
        .or_else(|| {
            value
                .get("oneOf")
                .and_then(Value::as_array)
                .and_then(|one_of| one_of.first())
                .and_then(|first| first.get("description"))
                .and_then(Value::as_str)
        })?;
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // Rustdoc links read as plain code on the page.
    let text = text.replace("[`", "`").replace("`]", "`");
    (!text.is_empty()).then_some(text)
}

/// The type as an operator writes it.
fn type_name(field: &Value, schemas: &Schemas) -> String {
    let schema = schemas.resolve(field);
    if let Some(values) = enum_values(schema) {
        return format!("one of {values}");
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        // `["string", "null"]`: an optional value, whose default says "none".
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|kind| *kind != "null")
            .unwrap_or("null"),
        _ => "",
    };
    match kind {
        "string" => match schema.get("format").and_then(Value::as_str) {
            Some(format) => format!("string (`{format}`)"),
            None => "string".into(),
        },
        "array" => {
            let items = schema.get("items").map(|items| schemas.resolve(items));
            match items {
                Some(items) if items.get("properties").is_some() => "list of tables".into(),
                Some(items) => match enum_values(items) {
                    Some(values) => format!("list of {values}"),
                    None => format!("list of {}s", type_name(items, schemas)),
                },
                None => "list".into(),
            }
        }
        "" => "value".into(),
        other => other.into(),
    }
}

/// The values of an enumeration, as `a`, `b`.
fn enum_values(schema: &Value) -> Option<String> {
    let values: Vec<String> = schema
        .get("enum")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .map(|value| format!("`{value}`"))
        .collect();
    Some(values.join(", "))
}

/// A default as it would be written in the file; `none` for an unset optional value.
fn default_text(value: &Value) -> String {
    match value {
        Value::Null => "none".into(),
        other => format!("`{other}`"),
    }
}

/// `[section]: the rest` → `the rest`, so the heading is not repeated.
fn strip_section_label<'a>(about: &'a str, section: &str) -> &'a str {
    let label = format!("`[{section}]`");
    about
        .strip_prefix(&label)
        .map(|rest| rest.trim_start_matches(':').trim_start())
        .unwrap_or(about)
}

/// `text` with its first letter in upper case.
fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `text` safe inside a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    /// `[demo]`: a section of the test settings.
    #[derive(Serialize, Deserialize, ToSchema)]
    struct Demo {
        /// Worker calls at once.
        pool_size: usize,
        /// Where to listen.
        #[schema(value_type = String, format = "host:port")]
        listen: String,
        /// Off, or a name.
        name: Option<String>,
        undocumented: bool,
    }

    #[derive(Serialize, Deserialize, ToSchema)]
    struct Root {
        demo: Demo,
    }

    fn root() -> Root {
        Root {
            demo: Demo {
                pool_size: 16,
                listen: "127.0.0.1:1".into(),
                name: None,
                undocumented: true,
            },
        }
    }

    #[test]
    fn a_key_without_a_doc_comment_is_refused_by_name() {
        let problems = render_sections(&root(), &["demo"]).unwrap_err();
        assert_eq!(
            problems,
            ["demo.undocumented has no doc comment: document it where it is declared"]
        );
    }

    #[test]
    fn sections_must_be_the_loader_s() {
        let problems = render_sections(&root(), &["demo", "other"]).unwrap_err();
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("[other] is in the loader's SECTIONS")),
            "{problems:?}"
        );
        let problems = render_sections(&root(), &[]).unwrap_err();
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("[demo] is not in the loader's SECTIONS")),
            "{problems:?}"
        );
    }

    #[test]
    fn each_key_has_its_variable_type_default_and_description() {
        let page = configuration_markdown().unwrap();
        let row = |key: &str| {
            page.lines()
                .find(|line| line.starts_with(&format!("| `{key}` |")))
                .unwrap_or_else(|| panic!("no row for {key}"))
                .to_string()
        };
        assert!(page.contains("\n## `[async]`\n\nThe async service.\n"));
        assert_eq!(
            row("lease_seconds"),
            "| `lease_seconds` | `XDB_ASYNC_LEASE_SECONDS` | number | `30.0` | How long a \
             claimed task stays this instance's without renewal; renewed every third of it \
             while the call runs. |"
        );
        assert!(row("format").contains("| one of `text`, `json` | `\"text\"` |"));
        assert!(row("url").contains("| string | none |"));
        assert!(row("tokens").contains("| list of tables | `[]` |"));
        assert!(page.contains("| `tokens[].roles` | (in `XDB_SECURITY_TOKENS`) |"));
        assert!(row("worker_url_prefixes").contains("| list of strings | `[]` |"));
    }
}
