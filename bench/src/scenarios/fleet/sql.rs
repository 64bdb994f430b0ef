//! The SQL text of the fleet scenario: the set-based population of XDB's own rows and
//! of the business table, and the statements the service's queries are measured
//! against (written as the service renders them, see xdb-persistence's `query/render.rs`).
//!
//! Every value spliced into these texts is the bench's own (numbers, fixed names, the
//! loopback worker URL, quoted).

use crate::database::Dialect;

/// The process type of the fleet's executions.
pub const PROCESS_TYPE: &str = "FleetProcess";
/// The business table, keyed by process id.
pub const TABLE: &str = "fleet_orders";
/// Process ids (and business keys) are this and a number from 1.
pub const ID_PREFIX: &str = "fleet-";
/// Business rows per customer: the size of a first page (100) of one customer.
pub const ORDERS_PER_CUSTOMER: u64 = 100;
/// What a start with no start state writes as its `PROCESS_STARTED` event's details
/// (serde_json's compact text of `{"processType", "startStateId", "terminatedPrevious"}`).
pub fn started_details() -> String {
    format!(r#"{{"processType":"{PROCESS_TYPE}","startStateId":null,"terminatedPrevious":null}}"#)
}

/// How the fleet is laid out: execution `n` (1..=executions) has process id
/// `fleet-n`, and its business row customer `n % customers` and amount
/// `(n * 7919) % customers` (the same spread, scattered, and not indexed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub executions: u64,
    pub customers: u64,
}

impl Shape {
    pub fn new(executions: u64) -> Shape {
        Shape {
            executions,
            customers: (executions / ORDERS_PER_CUSTOMER).max(1),
        }
    }

    pub fn customer_of(&self, n: u64) -> u64 {
        n % self.customers
    }

    /// Executions whose customer is in `customers`, in order.
    pub fn executions_of(&self, customers: std::ops::Range<u64>) -> Vec<u64> {
        (1..=self.executions)
            .filter(|n| customers.contains(&self.customer_of(*n)))
            .collect()
    }

    /// The customers `[0, k)` that hold about `wanted` executions, at least one customer
    /// and at most `at_most` of them.
    pub fn customers_for(&self, wanted: u64, at_most: u64) -> u64 {
        let per = (self.executions / self.customers).max(1);
        wanted.div_ceil(per).clamp(1, at_most.max(1))
    }
}

/// A SQL string literal of `text`.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The rows `n` of `lo..=hi`, as a FROM clause whose number column is `n`.
fn numbers(dialect: Dialect, lo: u64, hi: u64) -> String {
    match dialect {
        Dialect::Postgres => format!("generate_series({lo}::bigint, {hi}::bigint) AS g(n)"),
        // MariaDB's Sequence engine; its column is `seq`.
        Dialect::MySql => format!("(SELECT seq AS n FROM seq_{lo}_to_{hi}) AS g"),
    }
}

/// The process id of row `n`.
fn process_id(dialect: Dialect) -> String {
    match dialect {
        Dialect::Postgres => format!("'{ID_PREFIX}' || n"),
        Dialect::MySql => format!("CONCAT('{ID_PREFIX}', n)"),
    }
}

/// The instant `base_ms + n` ms after the epoch, as the column type of the dialect's
/// start times (time-zone free on MySQL, whose DATETIME columns hold UTC).
fn instant(dialect: Dialect, base_ms: i64) -> String {
    match dialect {
        Dialect::Postgres => {
            format!("TIMESTAMPTZ 'epoch' + ({base_ms} + n) * INTERVAL '1 millisecond'")
        }
        Dialect::MySql => format!(
            "TIMESTAMPADD(MICROSECOND, ({base_ms} + n) * 1000, TIMESTAMP'1970-01-01 00:00:00')"
        ),
    }
}

/// A UUID of version 7's layout, as a start makes: the start's milliseconds in the
/// first 48 bits, then `7`, `run` (6 hex digits, the run's), `8`, and `n` in the last 48
/// bits, so ids are unique and ordered like the start times.
fn execution_id(dialect: Dialect, base_ms: i64, run: &str) -> String {
    let (hex_ms, hex_n) = match dialect {
        Dialect::Postgres => (
            format!("lpad(to_hex({base_ms} + n), 12, '0')"),
            "lpad(to_hex(n), 12, '0')".to_string(),
        ),
        Dialect::MySql => (
            format!("LPAD(LOWER(HEX({base_ms} + n)), 12, '0')"),
            "LPAD(LOWER(HEX(n)), 12, '0')".to_string(),
        ),
    };
    let text = format!(
        "CONCAT(SUBSTR({hex_ms}, 1, 8), '-', SUBSTR({hex_ms}, 9, 4), '-7{}-8{}-', {hex_n})",
        &run[..3],
        &run[3..6]
    );
    match dialect {
        Dialect::Postgres => format!("CAST({text} AS UUID)"),
        Dialect::MySql => text,
    }
}

/// `CREATE TABLE` of the business table and its index on `customer`.
pub fn create_table(dialect: Dialect) -> Vec<String> {
    let created_at = match dialect {
        Dialect::Postgres => "TIMESTAMP",
        Dialect::MySql => "DATETIME",
    };
    vec![
        format!(
            "CREATE TABLE {TABLE} (id VARCHAR(255) PRIMARY KEY, customer INT, amount INT, \
             created_at {created_at})"
        ),
        format!("CREATE INDEX {TABLE}_by_customer ON {TABLE} (customer)"),
    ]
}

/// The statements that write executions `lo..=hi` as starts with no start state would
/// (the execution row, the process id's latest-execution row, the `PROCESS_STARTED`
/// event) and their business rows; `base_ms + n` is execution `n`'s start.
pub fn populate(
    dialect: Dialect,
    lo: u64,
    hi: u64,
    base_ms: i64,
    run: &str,
    worker_url: &str,
    shape: Shape,
) -> Vec<String> {
    let from = numbers(dialect, lo, hi);
    let id = execution_id(dialect, base_ms, run);
    let pid = process_id(dialect);
    let at = instant(dialect, base_ms);
    let c = shape.customers;
    let created = match dialect {
        Dialect::Postgres => {
            format!("TIMESTAMP 'epoch' + ({base_ms} + n) * INTERVAL '1 millisecond'")
        }
        Dialect::MySql => at.clone(),
    };
    vec![
        format!(
            "INSERT INTO xdb_sys_process_executions (id, process_id, process_type, \
             worker_url, status, start_time, timeout_seconds, running_state_executions, \
             state_execution_sequences, global_attribute_config) \
             SELECT {id}, {pid}, '{PROCESS_TYPE}', {}, 'RUNNING', {at}, 0, 0, '{{}}', NULL \
             FROM {from}",
            literal(worker_url)
        ),
        format!(
            "INSERT INTO xdb_sys_latest_process_executions (process_id, process_execution_id) \
             SELECT {pid}, {id} FROM {from}"
        ),
        format!(
            "INSERT INTO xdb_sys_history_events (process_execution_id, event_time, \
             event_type, details) SELECT {id}, {at}, 'PROCESS_STARTED', {} FROM {from}",
            literal(&started_details())
        ),
        format!(
            "INSERT INTO {TABLE} (id, customer, amount, created_at) \
             SELECT {pid}, n % {c}, (n * 7919) % {c}, {created} FROM {from}"
        ),
    ]
}

/// The first page (`limit` rows: the page size and one more) of one customer's
/// executions, as the service renders `list` with `filter.processType` and
/// `where {column customer = ?}` on the business table `TABLE` keyed by `id`.
/// Parameters: the process type, the customer, the limit.
pub fn list_by_customer(dialect: Dialect) -> String {
    let columns = "p.id, p.process_id, p.process_type, p.status, p.start_time, p.close_time, \
        CASE WHEN p.status = 'RUNNING' AND p.paused IS NOT NULL THEN 1 ELSE 0 END, \
        CASE WHEN p.status = 'RUNNING' AND EXISTS (SELECT 1 FROM xdb_sys_tasks t \
          WHERE t.process_execution_id = p.id AND t.task_type IN ('WAIT_UNTIL', 'EXECUTE') \
            AND t.attempt > 1 AND t.lease_owner IS NULL) THEN 1 ELSE 0 END";
    match dialect {
        Dialect::Postgres => format!(
            "SELECT {columns} FROM xdb_sys_process_executions p \
             JOIN \"{TABLE}\" b ON b.\"id\" = p.process_id \
             WHERE (p.process_type = CAST($1 AS TEXT) AND b.\"customer\" = CAST($2 AS BIGINT)) \
             ORDER BY p.start_time DESC, p.id DESC LIMIT $3"
        ),
        Dialect::MySql => format!(
            "SELECT {columns} FROM xdb_sys_process_executions p \
             JOIN `{TABLE}` b ON b.`id` = CONVERT(p.process_id USING utf8mb4) COLLATE utf8mb4_bin \
               AND CONVERT(b.`id` USING utf8mb4) COLLATE utf8mb4_nopad_bin = p.process_id \
             WHERE (p.process_type = ? AND b.`customer` = ?) \
             ORDER BY p.start_time DESC, p.id DESC LIMIT ?"
        ),
    }
}

/// Executions per status, directly.
pub const COUNT_BY_STATUS: &str =
    "SELECT status, COUNT(*) FROM xdb_sys_process_executions GROUP BY status";
/// Every execution, counted directly.
pub const COUNT_ALL: &str = "SELECT COUNT(*) FROM xdb_sys_process_executions";

/// A select of every column of `table` but `skip`, each as text (NULL stays NULL), for
/// the rows matching `condition` (one `?`/`$1` parameter), in `order`.
pub fn columns_as_text(
    dialect: Dialect,
    table: &str,
    columns: &[String],
    skip: &[&str],
    condition: &str,
    order: &str,
) -> String {
    let cast = |c: &str| match dialect {
        Dialect::Postgres => format!("CAST(\"{c}\" AS TEXT)"),
        Dialect::MySql => format!("CAST(`{c}` AS CHAR)"),
    };
    let selected: Vec<String> = columns
        .iter()
        .filter(|c| !skip.contains(&c.as_str()))
        .map(|c| cast(c))
        .collect();
    let condition = match dialect {
        Dialect::Postgres => condition.replace('?', "$1"),
        Dialect::MySql => condition.to_string(),
    };
    format!(
        "SELECT {} FROM {table} WHERE {condition} ORDER BY {order}",
        selected.join(", ")
    )
}

/// `part / whole`, `None` when `whole` is not positive.
pub fn ratio(part: f64, whole: f64) -> Option<f64> {
    (whole > 0.0).then(|| part / whole)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shape_gives_each_customer_a_page() {
        let shape = Shape::new(1_000_000);
        assert_eq!(shape.customers, 10_000);
        assert_eq!(shape.customers_for(100_000, 5_000), 1_000);
        assert_eq!(shape.customers_for(20_000, 9_000), 200);
        assert_eq!(shape.customers_for(100_000, 10), 10);
        let small = Shape::new(1_000);
        assert_eq!(small.customers, 10);
        let first = small.executions_of(0..2);
        assert_eq!(first.len(), 200);
        assert!(first.iter().all(|n| n % 10 < 2));
        assert_eq!(Shape::new(5).customers, 1);
    }

    #[test]
    fn population_writes_the_rows_a_start_writes() {
        let statements = populate(
            Dialect::Postgres,
            1,
            10,
            1_700_000_000_000,
            "abcdef",
            "http://127.0.0.1:1/w'x",
            Shape::new(1_000),
        );
        assert_eq!(statements.len(), 4);
        assert!(statements[0].starts_with("INSERT INTO xdb_sys_process_executions"));
        assert!(statements[0].contains("'http://127.0.0.1:1/w''x'"));
        assert!(statements[0].contains("-7abc-8def-"));
        assert!(statements[0].contains("generate_series(1::bigint, 10::bigint)"));
        assert!(statements[1].starts_with("INSERT INTO xdb_sys_latest_process_executions"));
        assert!(statements[2].contains(
            r#"'PROCESS_STARTED', '{"processType":"FleetProcess","startStateId":null,"terminatedPrevious":null}'"#
        ));
        assert!(statements[3].contains("n % 10, (n * 7919) % 10"));
        let mysql = populate(Dialect::MySql, 11, 20, 0, "abcdef", "u", Shape::new(1_000));
        assert!(mysql[0].contains("FROM (SELECT seq AS n FROM seq_11_to_20) AS g"));
        assert!(mysql[0].contains("LPAD(LOWER(HEX(n)), 12, '0')"));
        assert!(!mysql[0].contains("UUID"));
    }

    #[test]
    fn the_direct_list_is_the_services_statement() {
        let pg = list_by_customer(Dialect::Postgres);
        assert!(pg.contains("JOIN \"fleet_orders\" b ON b.\"id\" = p.process_id"));
        assert!(pg.ends_with("ORDER BY p.start_time DESC, p.id DESC LIMIT $3"));
        let my = list_by_customer(Dialect::MySql);
        assert!(my.contains("CONVERT(p.process_id USING utf8mb4) COLLATE utf8mb4_bin"));
        assert_eq!(my.matches('?').count(), 3);
    }

    #[test]
    fn columns_are_compared_as_text() {
        let columns = vec!["id".to_string(), "status".to_string(), "result".to_string()];
        assert_eq!(
            columns_as_text(
                Dialect::Postgres,
                "t",
                &columns,
                &["id"],
                "process_id = ?",
                "id"
            ),
            "SELECT CAST(\"status\" AS TEXT), CAST(\"result\" AS TEXT) FROM t \
             WHERE process_id = $1 ORDER BY id"
        );
        assert_eq!(
            columns_as_text(Dialect::MySql, "t", &columns, &[], "x = ?", "id"),
            "SELECT CAST(`id` AS CHAR), CAST(`status` AS CHAR), CAST(`result` AS CHAR) \
             FROM t WHERE x = ? ORDER BY id"
        );
    }

    #[test]
    fn ratios_need_a_positive_whole() {
        assert_eq!(ratio(3.0, 2.0), Some(1.5));
        assert_eq!(ratio(1.0, 0.0), None);
    }
}
