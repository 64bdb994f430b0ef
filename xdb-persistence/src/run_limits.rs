//! Each process type's `maxRunningExecutions` as this instance knows it: read from the
//! flow limits at most once a second, so a start of an unlimited type costs no query.
//! A limit set or cleared applies to starts within about a second (at once through the
//! store that made the change).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use xdb_protocol::FlowLimits;

use crate::columns::ColumnReader;
use crate::flow_limit_store::{effective, WHOLE_TYPE};
use crate::sql::SqlConn;
use crate::tables::{Dialect, Lane};
use crate::StoreError;

/// How old the known limits may be before they are read again.
const MAX_AGE: Duration = Duration::from_secs(1);

/// A type's running-execution limit, by type.
pub(crate) type LimitsByType = Arc<HashMap<String, u32>>;

/// The limits last read, shared by a store's clones.
#[derive(Default)]
pub(crate) struct RunLimits {
    known: RwLock<Option<(Instant, LimitsByType)>>,
    /// One reader at a time; the others wait for its answer.
    reading: tokio::sync::Mutex<()>,
}

impl RunLimits {
    /// `process_type`'s limit, if it has one.
    pub(crate) async fn of<D: Dialect>(
        &self,
        store: &D,
        process_type: &str,
    ) -> Result<Option<u32>, StoreError> {
        Ok(self.current(store).await?.get(process_type).copied())
    }

    /// Every limited type's limit, at most [`MAX_AGE`] old.
    pub(crate) async fn current<D: Dialect>(&self, store: &D) -> Result<LimitsByType, StoreError> {
        if let Some(fresh) = self.fresh() {
            return Ok(fresh);
        }
        let _reading = self.reading.lock().await;
        if let Some(fresh) = self.fresh() {
            return Ok(fresh);
        }
        let read = Arc::new(read_limits(store).await?);
        *self.known.write().expect("run limits lock") = Some((Instant::now(), read.clone()));
        Ok(read)
    }

    /// Drops what was read, so that the next start reads the limits again: after a change
    /// made through this store.
    pub(crate) fn forget(&self) {
        *self.known.write().expect("run limits lock") = None;
    }

    fn fresh(&self) -> Option<LimitsByType> {
        let known = self.known.read().expect("run limits lock");
        known
            .as_ref()
            .filter(|(read_at, _)| read_at.elapsed() < MAX_AGE)
            .map(|(_, limits)| limits.clone())
    }
}

async fn read_limits<D: Dialect>(store: &D) -> Result<HashMap<String, u32>, StoreError> {
    let mut session = store.session(Lane::Main).await?;
    let rows = session
        .query(
            "SELECT process_type, declared, CASE WHEN override_set THEN 1 ELSE 0 END, \
               override_limits FROM xdb_sys_flow_limits WHERE state_id = ?",
            &[WHOLE_TYPE.into()],
        )
        .await?;
    let mut limits = HashMap::new();
    for row in &rows {
        let mut columns = D::Session::columns(row, 0);
        let process_type = columns.text()?;
        let declared = parse(columns.optional_text()?)?;
        let override_set = columns.int()? != 0;
        let override_text = parse(columns.optional_text()?)?;
        let override_limits = override_set.then(|| override_text.unwrap_or_default());
        if let Some(limit) = effective(&declared, &override_limits).max_running_executions {
            limits.insert(process_type, limit);
        }
    }
    Ok(limits)
}

fn parse(text: Option<String>) -> Result<Option<FlowLimits>, StoreError> {
    text.map(|text| {
        serde_json::from_str(&text)
            .map_err(|e| StoreError::Database(format!("unreadable flow limits {text:?}: {e}")))
    })
    .transpose()
}
