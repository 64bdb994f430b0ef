//! The topics of Pulsar CDC mode, named as Pulsar IO's Debezium sources name them
//! (`<database.server.name>.<schema or database>.<table>`; Debezium 2 calls the prefix
//! `topic.prefix`), plus XDB's own.

use xdb_config::PulsarSettings;

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
        let middle = if database_url.starts_with("mysql:") || database_url.starts_with("mariadb:") {
            database_name(database_url).ok_or_else(|| {
                anyhow::anyhow!("Pulsar mode needs the database name in database.url")
            })?
        } else {
            "public".to_string()
        };
        Ok(Self {
            tasks: format!("{namespace}/{prefix}.{middle}.xdb_sys_tasks"),
            timers: format!("{namespace}/{prefix}.xdb.task-timers"),
            dead_letters: format!("{namespace}/{prefix}.xdb.dead-letters"),
        })
    }
}

/// The path of a database URL: `mysql://user@host:3306/app?x=y` → `app`.
fn database_name(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let path = rest.split_once('/')?.1;
    let name = path.split(['?', '#']).next()?;
    (!name.is_empty()).then(|| name.to_string())
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
        assert!(Topics::new(&settings, "mysql://root@db:3306").is_err());
    }
}
