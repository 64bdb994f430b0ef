//! The topics of Pulsar CDC mode, named as Pulsar IO's Debezium sources name them
//! (`<database.server.name>.<schema or database>.<table>`; Debezium 2 calls the prefix
//! `topic.prefix`), plus XDB's own.

use xdb_config::{DatabaseUrl, Dialect, PulsarSettings};

/// The topics one async service consumes and produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Topics {
    /// Change events of `xdb_sys_tasks`, from Debezium.
    pub tasks: String,
    /// XDB's own delayed messages: tasks due later ([`super::timer::TaskTimer`]).
    pub timers: String,
    /// Messages that failed `pulsar.max_deliveries` deliveries.
    pub dead_letters: String,
}

impl Topics {
    /// The topics for the database at `database_url`: Debezium names PostgreSQL topics
    /// after the schema (`public`) and MySQL ones after the database.
    pub fn new(settings: &PulsarSettings, database_url: &str) -> anyhow::Result<Self> {
        let namespace = format!("persistent://{}/{}", settings.tenant, settings.namespace);
        let prefix = &settings.topic_prefix;
        let url = DatabaseUrl::parse(database_url)
            .map_err(|error| anyhow::anyhow!("database.url: {error}"))?;
        let middle = match url.dialect() {
            Dialect::MySql => url
                .require_database()
                .map_err(|error| anyhow::anyhow!("Pulsar mode, database.url: {error}"))?,
            Dialect::Postgres => "public",
        };
        Ok(Self {
            tasks: format!("{namespace}/{prefix}.{middle}.xdb_sys_tasks"),
            timers: format!("{namespace}/{prefix}.xdb.task-timers"),
            dead_letters: format!("{namespace}/{prefix}.xdb.dead-letters"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_follow_debezium_naming_per_dialect() {
        let settings = PulsarSettings {
            topic_prefix: "xdb".into(),
            ..PulsarSettings::default()
        };
        let pg = Topics::new(&settings, "postgres://u:p@db:5432/app").unwrap();
        assert_eq!(
            pg.tasks,
            "persistent://public/default/xdb.public.xdb_sys_tasks"
        );
        assert_eq!(pg.timers, "persistent://public/default/xdb.xdb.task-timers");
        let my = Topics::new(&settings, "mysql://root@db:3306/shop?ssl-mode=disabled").unwrap();
        assert_eq!(
            my.tasks,
            "persistent://public/default/xdb.shop.xdb_sys_tasks"
        );
        let maria = Topics::new(&settings, "MariaDB://root@db/shop").unwrap();
        assert_eq!(maria.tasks, my.tasks);
        let error = Topics::new(&settings, "mysql://root:secret@db:3306")
            .unwrap_err()
            .to_string();
        assert!(error.contains("must name the database"), "{error}");
        assert!(!error.contains("secret"), "{error}");
    }
}
