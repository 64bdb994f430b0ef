//! The population: the executions and business rows the scenario measures on, written
//! with set-based SQL, and the check that they are the rows a start writes.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::json;

use super::api::{xdb_protocol_paths, Api};
use super::direct::Direct;
use super::{sql, FleetContext, Shape};
use crate::database::Dialect;

/// Executions written per population statement.
const CHUNK: u64 = 100_000;
/// Executions started through the API to check the population's rows against.
const CHECKED_STARTS: usize = 3;

/// Starts executions through the API, to hold the population's rows against; their
/// process ids.
pub(super) async fn start_checks(api: &Api<'_>, worker_url: &str) -> anyhow::Result<Vec<String>> {
    let mut checks = Vec::new();
    for i in 0..CHECKED_STARTS {
        let process_id = format!("fleet-check-{i}");
        api.call(
            xdb_protocol_paths::START,
            &json!({"processId": process_id, "processType": sql::PROCESS_TYPE,
                "workerUrl": worker_url}),
        )
        .await
        .context("starting an execution to check the population against")?;
        checks.push(process_id);
    }
    Ok(checks)
}

/// Writes `shape`'s executions (execution n started n ms after a minute before
/// `now_ms`) and their business rows, then has the database analyze them; how long
/// each took.
pub(super) async fn populate(
    direct: &mut Direct,
    context: &FleetContext<'_>,
    shape: Shape,
    now_ms: i64,
) -> anyhow::Result<(Duration, Duration)> {
    let dialect = direct.dialect();
    eprintln!(
        "xdb-bench: fleet: writing {} executions and business rows",
        shape.executions
    );
    let run = uuid::Uuid::new_v4().simple().to_string();
    // Execution n started n ms after base: the newest a minute ago.
    let base_ms = now_ms - 60_000 - shape.executions as i64;
    let began = Instant::now();
    let mut lo = 1;
    while lo <= shape.executions {
        let hi = (lo + CHUNK - 1).min(shape.executions);
        for statement in sql::populate(
            dialect,
            lo,
            hi,
            base_ms,
            &run[..6],
            context.worker_url,
            shape,
        ) {
            direct
                .execute(&statement)
                .await
                .with_context(|| format!("populating executions {lo}..={hi}"))?;
        }
        lo = hi + 1;
    }
    let population = began.elapsed();
    let began = Instant::now();
    match dialect {
        Dialect::Postgres => context.database.settle().await?,
        Dialect::MySql => {
            direct
                .execute(&format!(
                    "ANALYZE TABLE {}, xdb_sys_process_executions, \
                     xdb_sys_latest_process_executions",
                    sql::TABLE
                ))
                .await?
        }
    }
    let analyze = began.elapsed();
    eprintln!(
        "xdb-bench: fleet: populated in {:.1} s (analyze {:.1} s)",
        population.as_secs_f64(),
        analyze.as_secs_f64()
    );
    Ok((population, analyze))
}

/// Holds the rows the population wrote for `fleet-1` against those of the executions
/// `checks` started through the API: every column of the execution row but its id,
/// process id and start time; the latest-execution row pointing at it; its history
/// events but their ids and times (and whether the event's time is the start time);
/// and how many rows each other table keyed by execution holds for it. Fails, naming
/// the difference, when they differ. Describe and history answer for it too.
pub(super) async fn check_population(
    direct: &mut Direct,
    api: &Api<'_>,
    checks: &[String],
) -> anyhow::Result<usize> {
    let dialect = direct.dialect();
    let generated = format!("{}1", sql::ID_PREFIX);
    let executions = direct.columns("xdb_sys_process_executions").await?;
    let history = direct.columns("xdb_sys_history_events").await?;
    let by_execution = direct.tables_by_execution().await?;
    const EXECUTION_SKIP: [&str; 3] = ["id", "process_id", "start_time"];
    // A condition on an execution id given as text (`?`: the one parameter).
    let by_id = match dialect {
        Dialect::Postgres => "process_execution_id = CAST(CAST(? AS TEXT) AS UUID)",
        Dialect::MySql => "process_execution_id = ?",
    };
    let one = |query: String| match dialect {
        Dialect::Postgres => query.replace('?', "$1"),
        Dialect::MySql => query,
    };
    let text = match dialect {
        Dialect::Postgres => "TEXT",
        Dialect::MySql => "CHAR",
    };
    let mut snapshots = Vec::new();
    for process_id in std::iter::once(generated.clone()).chain(checks.iter().cloned()) {
        let select = |table: &str, columns: &[String], skip: &[&str], condition: &str, order| {
            sql::columns_as_text(dialect, table, columns, skip, condition, order)
        };
        let row = direct
            .text_rows(
                &select(
                    "xdb_sys_process_executions",
                    &executions,
                    &EXECUTION_SKIP,
                    "process_id = ?",
                    "id",
                ),
                &process_id,
            )
            .await?;
        anyhow::ensure!(row.len() == 1, "{process_id}: {} execution rows", row.len());
        let ids = direct
            .text_rows(
                &select(
                    "xdb_sys_process_executions",
                    &["id".to_string()],
                    &[],
                    "process_id = ?",
                    "id",
                ),
                &process_id,
            )
            .await?;
        let id = ids[0][0].clone().unwrap_or_default();
        let latest = direct
            .text_rows(
                &select(
                    "xdb_sys_latest_process_executions",
                    &["process_execution_id".to_string()],
                    &[],
                    "process_id = ?",
                    "process_id",
                ),
                &process_id,
            )
            .await?;
        anyhow::ensure!(
            latest.len() == 1 && latest[0][0].as_deref() == Some(id.as_str()),
            "{process_id}: the latest-execution row {latest:?} does not name {id}"
        );
        let events = direct
            .text_rows(
                &select(
                    "xdb_sys_history_events",
                    &history,
                    &["id", "process_execution_id", "event_time"],
                    by_id,
                    "id",
                ),
                &id,
            )
            .await?;
        let timed = direct
            .text_rows(
                &one(
                    "SELECT CASE WHEN h.event_time = p.start_time THEN 'same' ELSE 'other' END \
                     FROM xdb_sys_history_events h JOIN xdb_sys_process_executions p \
                     ON p.id = h.process_execution_id WHERE p.process_id = ? ORDER BY h.id"
                        .to_string(),
                ),
                &process_id,
            )
            .await?;
        let mut counts = Vec::new();
        for table in &by_execution {
            let count = direct
                .text_rows(
                    &one(format!(
                        "SELECT CAST(COUNT(*) AS {text}) FROM {table} WHERE {by_id}"
                    )),
                    &id,
                )
                .await?;
            counts.push((table.clone(), count[0][0].clone()));
        }
        snapshots.push((process_id, row, events, timed, counts));
    }
    let names: Vec<&String> = executions
        .iter()
        .filter(|c| !EXECUTION_SKIP.contains(&c.as_str()))
        .collect();
    let (_, row, events, timed, counts) = &snapshots[0];
    for (process_id, other_row, other_events, other_timed, other_counts) in &snapshots[1..] {
        for (i, name) in names.iter().enumerate() {
            anyhow::ensure!(
                row[0][i] == other_row[0][i],
                "the population's execution row differs from a start's ({process_id}) in \
                 column {name}: {:?} against {:?}",
                row[0][i],
                other_row[0][i]
            );
        }
        anyhow::ensure!(
            events == other_events && timed == other_timed,
            "the population's history differs from a start's ({process_id}): {events:?} \
             {timed:?} against {other_events:?} {other_timed:?}"
        );
        anyhow::ensure!(
            counts == other_counts,
            "the population's rows by execution differ from a start's ({process_id}): \
             {counts:?} against {other_counts:?}"
        );
    }
    api.call(
        xdb_protocol_paths::DESCRIBE,
        &json!({"processId": generated}),
    )
    .await
    .context("describe of a populated execution")?;
    let history = api
        .call(
            xdb_protocol_paths::HISTORY,
            &json!({"processId": generated}),
        )
        .await
        .context("history of a populated execution")?;
    anyhow::ensure!(
        history.to_string().contains("PROCESS_STARTED"),
        "the history of a populated execution lacks its start: {history}"
    );
    Ok(snapshots.len() - 1)
}
