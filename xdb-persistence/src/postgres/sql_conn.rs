//! [`SqlConn`] on PostgreSQL: statements prepared once per connection, parameters in
//! their PostgreSQL types, BEGIN sent with the first statement.

use deadpool_postgres::{Client, GenericClient};
use tokio_postgres::types::{Json, ToSql, Type};
use tokio_postgres::{Row, Statement};

use super::rows::Columns;
use super::tables::PgRows;
use crate::columns::ColumnReader;
use crate::sql::{numbered_placeholders, Param, SqlConn, SqlKind};
use crate::StoreError;

/// `param` as the PostgreSQL value of its column's type.
fn postgres_value<'a>(param: &'a Param<'a>) -> Box<dyn ToSql + Sync + Send + 'a> {
    match param {
        Param::Uuid(id) => Box::new(*id),
        Param::OptionalUuid(id) => Box::new(*id),
        Param::Text(text) => Box::new(*text),
        Param::OwnedText(text) => Box::new(text.as_str()),
        Param::Int(value) => Box::new(*value),
        Param::BigInt(value) => Box::new(*value),
        Param::Time(time) => Box::new(*time),
        Param::Bool(value) => Box::new(*value),
        Param::Double(value) => Box::new(*value),
        Param::Json(value) => Box::new(value.as_ref().map(Json)),
        Param::JsonRef(value) => Box::new(value.map(Json)),
        Param::Cell(value, _) => Box::new(Json(*value)),
    }
}

/// Statements a connection keeps prepared before [`SqlConn::query_once`] stops adding
/// to them: every statement of XDB's own, and a few hundred filter shapes.
const MAX_CACHED_STATEMENTS: usize = 512;

/// The PostgreSQL type `param` binds as; `None` for a business cell, whose type is its
/// column's.
fn postgres_type(param: &Param<'_>) -> Option<Type> {
    Some(match param {
        Param::Uuid(_) | Param::OptionalUuid(_) => Type::UUID,
        Param::Text(_) | Param::OwnedText(_) => Type::TEXT,
        Param::Int(_) => Type::INT4,
        Param::BigInt(_) => Type::INT8,
        Param::Time(_) => Type::TIMESTAMPTZ,
        Param::Bool(_) => Type::BOOL,
        Param::Double(_) => Type::FLOAT8,
        Param::Json(_) | Param::JsonRef(_) => Type::JSONB,
        Param::Cell(..) => return None,
    })
}

/// Runs `sql` on `client` (a connection or transaction outside [`PgRows`]); the rows it
/// matched.
pub(super) async fn execute_on(
    client: &impl GenericClient,
    sql: &str,
    params: &[Param<'_>],
) -> Result<u64, StoreError> {
    let statement = client.prepare_cached(&numbered_placeholders(sql)).await?;
    let values: Vec<_> = params.iter().map(postgres_value).collect();
    let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| &**v as _).collect();
    Ok(client.execute(&statement, &refs).await?)
}

/// How [`SqlConn::query_once`] sends a statement: its parse done, or to be done in the
/// same round trip as its run.
pub(super) enum OnceForm {
    Prepared(Statement),
    /// An unnamed statement with its parameters' types: parsed, bound and run at once.
    Typed(String, Vec<Type>),
}

/// Readies `sql` for one run on `client`. Prepared and kept (planned once, then its plan
/// reused) while the connection keeps few statements; past that an unnamed statement,
/// so that filters of ever new shapes cannot grow the cache.
pub(super) async fn once_form(
    client: &Client,
    sql: &str,
    params: &[Param<'_>],
) -> Result<OnceForm, StoreError> {
    let sql = numbered_placeholders(sql);
    let types: Option<Vec<Type>> = params.iter().map(postgres_type).collect();
    Ok(match types {
        _ if client.statement_cache.size() < MAX_CACHED_STATEMENTS => {
            OnceForm::Prepared(client.prepare_cached(&sql).await?)
        }
        Some(types) => OnceForm::Typed(sql.into_owned(), types),
        None => OnceForm::Prepared(client.prepare(&sql).await?),
    })
}

/// Runs a statement readied by [`once_form`]. Its request is written when the future
/// is first polled, so that statements joined with it keep their order on the wire.
pub(super) async fn run_once(
    client: &Client,
    form: &OnceForm,
    params: &[Param<'_>],
) -> Result<Vec<Row>, StoreError> {
    let values: Vec<_> = params.iter().map(postgres_value).collect();
    match form {
        OnceForm::Prepared(statement) => {
            let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| &**v as _).collect();
            Ok(client.query(statement, &refs).await?)
        }
        OnceForm::Typed(sql, types) => {
            let typed: Vec<(&(dyn ToSql + Sync), Type)> = values
                .iter()
                .zip(types)
                .map(|(v, ty)| (&**v as _, ty.clone()))
                .collect();
            Ok(client.query_typed(sql, &typed).await?)
        }
    }
}

/// [`SqlConn::query_once`] on `client`.
async fn query_once_on(
    client: &Client,
    sql: &str,
    params: &[Param<'_>],
) -> Result<Vec<Row>, StoreError> {
    let form = once_form(client, sql, params).await?;
    run_once(client, &form, params).await
}

impl SqlConn for PgRows {
    type Row = Row;
    const KIND: SqlKind = SqlKind::Postgres;

    async fn query(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, StoreError> {
        let sql = numbered_placeholders(sql);
        let values: Vec<_> = params.iter().map(postgres_value).collect();
        self.on_client(|client| async move {
            let statement = client.prepare_cached(&sql).await?;
            let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| &**v as _).collect();
            Ok(client.query(&statement, &refs).await?)
        })
        .await
    }

    async fn query_once(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<Row>, StoreError> {
        self.on_client(|client| query_once_on(client, sql, params))
            .await
    }

    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        self.on_client(|client| execute_on(client, sql, params))
            .await
    }

    fn columns(row: &Row, at: usize) -> impl ColumnReader + '_ {
        Columns { row, at }
    }

    async fn insert_numbered(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        _rows: usize,
    ) -> Result<Vec<i64>, StoreError> {
        let rows = self.query(&format!("{sql} RETURNING id"), params).await?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    fn tells_inserted_ids(&self) -> bool {
        true
    }
}
