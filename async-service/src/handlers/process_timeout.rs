use xdb_engine::Task;
use xdb_persistence::{Applied, StoreError};

use super::HandlerContext;

pub(super) async fn handle(context: &HandlerContext, task: &Task) -> Result<Applied, StoreError> {
    context.store.timeout_process(task, &context.owner).await
}
