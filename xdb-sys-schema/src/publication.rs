//! The PostgreSQL publication of Pulsar CDC mode (`xdb-sys-schema install --publication`):
//! the Debezium source's `publication.name`, made by the owner of the tables before the
//! source is registered, so that the connector uses it as it finds it.

use tokio_postgres::Client;

use crate::{connect_postgres, DatabaseUrl, Dialect, SchemaError};

/// The publication of only the changes that leave a task unleased, which are all the
/// async service acts on (`events::classify` in the async service). The claim of a task
/// and a continuation's task, created leased, are not published: a claim turns into a
/// delete (the old row passes the filter, the new one does not), which the source skips,
/// and a lease given back into an insert. Each claim event otherwise held the
/// connector's next batch back by a publish and an offset flush. A row filter on updates
/// needs the old row's columns: hence the full replica identity. `{name}` is a checked
/// [`publication_name`].
pub const FILTERED_PUBLICATION: &str = "ALTER TABLE public.xdb_sys_tasks REPLICA IDENTITY FULL;
CREATE PUBLICATION {name} FOR TABLE public.xdb_sys_tasks WHERE (lease_owner IS NULL)
    WITH (publish = 'insert, update');";

/// `name` when it can name a publication unquoted: lower-case letters, digits and `_`,
/// not starting with a digit, at most 63 bytes (PostgreSQL's identifier length).
pub fn publication_name(name: &str) -> Result<&str, SchemaError> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if valid {
        Ok(name)
    } else {
        Err(SchemaError::InvalidArgument(format!(
            "publication name {name:?}: use lower-case letters, digits and '_' (not first), \
             at most 63"
        )))
    }
}

/// Creates the publication `name` ([`FILTERED_PUBLICATION`]) unless one of that name
/// exists, which is left as it is. Returns whether it was created. Needs the XDB tables
/// (`install` first) and their owner's rights.
pub async fn create_cdc_publication(client: &Client, name: &str) -> Result<bool, SchemaError> {
    let name = publication_name(name)?;
    let exists = client
        .query("SELECT 1 FROM pg_publication WHERE pubname = $1", &[&name])
        .await?;
    if !exists.is_empty() {
        return Ok(false);
    }
    client
        .batch_execute(&FILTERED_PUBLICATION.replace("{name}", name))
        .await?;
    Ok(true)
}

/// Creates the publication of Pulsar CDC mode, `name`, in the PostgreSQL database at
/// `database_url` unless it exists ([`create_cdc_publication`]); returns whether it was
/// created. A MySQL database has none to create (its binary log has no row filter).
pub async fn install_cdc_publication(database_url: &str, name: &str) -> Result<bool, SchemaError> {
    let url = check_cdc_publication(database_url, name)?;
    let client = connect_postgres(&url).await?;
    create_cdc_publication(&client, name).await
}

/// Checks, without connecting, that the publication `name` can be made in the database
/// at `database_url`: a valid name, and a PostgreSQL database.
pub fn check_cdc_publication(database_url: &str, name: &str) -> Result<DatabaseUrl, SchemaError> {
    publication_name(name)?;
    let url = DatabaseUrl::parse(database_url)?;
    match url.dialect() {
        Dialect::Postgres => Ok(url),
        Dialect::MySql => Err(SchemaError::InvalidArgument(
            "a publication is for PostgreSQL: a MySQL binary log has none".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_need_quoting_are_refused() {
        assert_eq!(publication_name("xdb_cdc").unwrap(), "xdb_cdc");
        for bad in [
            "",
            "Xdb",
            "1xdb",
            "xdb-cdc",
            "xdb cdc",
            "x\"; DROP",
            &"a".repeat(64),
        ] {
            let error = publication_name(bad).unwrap_err().to_string();
            assert!(error.contains("publication name"), "{bad}: {error}");
        }
    }
}
