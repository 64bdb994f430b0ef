//! Several statements of one transaction sent together, answered in one round trip.
//!
//! tokio-postgres writes a request when its future is first polled and the server
//! answers requests in order, so futures polled in list order run in list order. Only
//! preparing could reorder them (a statement not prepared yet waits for its own round
//! trip before it is sent), so every statement is prepared before any is sent.

use std::borrow::Cow;

use deadpool_postgres::GenericClient;
use futures::future::try_join_all;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::StoreError;

/// A parameter owned by the pipeline until its statement is sent.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

/// Boxes a parameter value.
pub(crate) fn param<T: ToSql + Sync + Send + 'static>(value: T) -> Param {
    Box::new(value)
}

/// Statements to send in one go, in order.
#[derive(Default)]
pub(crate) struct Pipeline {
    statements: Vec<(Cow<'static, str>, Vec<Param>)>,
}

impl Pipeline {
    /// Adds a statement; [`Pipeline::run`] answers with its rows at this index.
    pub fn push(&mut self, sql: impl Into<Cow<'static, str>>, params: Vec<Param>) -> usize {
        self.statements.push((sql.into(), params));
        self.statements.len() - 1
    }

    /// Sends every statement and returns the rows of each, in order. The first failure
    /// is returned (the server aborts the transaction at it, so the rest fail too).
    pub async fn run(&self, client: &impl GenericClient) -> Result<Vec<Vec<Row>>, StoreError> {
        let prepared = try_join_all(
            self.statements
                .iter()
                .map(|(sql, _)| client.prepare_cached(sql)),
        )
        .await?;
        let answers = try_join_all(self.statements.iter().zip(&prepared).map(
            |((_, params), statement)| async move {
                let params: Vec<&(dyn ToSql + Sync)> = params
                    .iter()
                    .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                    .collect();
                client.query(statement, &params).await
            },
        ))
        .await?;
        Ok(answers)
    }
}
