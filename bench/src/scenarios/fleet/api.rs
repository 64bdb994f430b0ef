//! The service API as the scenario calls it: its paths, and JSON POSTs to them.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{json, Value};

use super::{sql, PAGE_SIZE};

/// The paths of the service API the scenario calls.
pub(super) mod xdb_protocol_paths {
    pub const START: &str = "/api/v1/xdb/service/process-execution/start";
    pub const STOP: &str = "/api/v1/xdb/service/process-execution/stop";
    pub const DESCRIBE: &str = "/api/v1/xdb/service/process-execution/describe";
    pub const HISTORY: &str = "/api/v1/xdb/service/process-execution/history";
    pub const LIST: &str = "/api/v1/xdb/service/process-execution/list";
    pub const COUNT: &str = "/api/v1/xdb/service/process-execution/count";
    pub const BATCH_START: &str = "/api/v1/xdb/service/batch/start";
    pub const BATCH_DESCRIBE: &str = "/api/v1/xdb/service/batch/describe";
}

/// The first page of the fleet's executions whose business `column` equals `value`.
pub(super) fn list_request(column: &str, value: i64) -> Value {
    json!({
        "filter": {"processType": sql::PROCESS_TYPE},
        "where": {"column": column, "op": "=", "value": value},
        "businessTable": business_table(),
        "pageSize": PAGE_SIZE,
    })
}

pub(super) fn business_table() -> Value {
    json!({"tableName": sql::TABLE, "primaryKeyColumn": "id"})
}

/// JSON calls to the service API.
pub(super) struct Api<'a> {
    pub(super) http: &'a reqwest::Client,
    pub(super) base: &'a str,
}

impl Api<'_> {
    /// POSTs `body` to `path`; the answer's JSON, or an error with its status and body.
    pub(super) async fn call(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let (status, text) = post(self.http, self.base, path, body).await?;
        read_answer(path, status, text)
    }

    /// [`Api::call`], timed from the request's start to the answer's last byte. The
    /// JSON is read after the clock stops, as the direct statements are timed to their
    /// rows' arrival, not to their values' decoding.
    pub(super) async fn timed_call(
        &self,
        path: &str,
        body: &Value,
    ) -> (Duration, anyhow::Result<Value>) {
        let began = Instant::now();
        let answer = post(self.http, self.base, path, body).await;
        let elapsed = began.elapsed();
        let answer = answer.and_then(|(status, text)| read_answer(path, status, text));
        (elapsed, answer)
    }
}

/// The JSON of a successful answer; an error with the status and body of another.
fn read_answer(path: &str, status: reqwest::StatusCode, text: String) -> anyhow::Result<Value> {
    anyhow::ensure!(status.is_success(), "{path}: {status}: {text}");
    if text.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(&text).with_context(|| format!("{path}: {text}"))
}

pub(super) async fn post(
    http: &reqwest::Client,
    base: &str,
    path: &str,
    body: &Value,
) -> anyhow::Result<(reqwest::StatusCode, String)> {
    let answer = http
        .post(format!("{base}{path}"))
        .json(body)
        .timeout(Duration::from_secs(120))
        .send()
        .await?;
    let status = answer.status();
    Ok((status, answer.text().await?))
}
