//! What a state's loading policy reads, and the lock a business-row write takes first.

use xdb_engine::{ProcessExecution, StateExecution};
use xdb_protocol::{GlobalAttributeConfig, GlobalAttributeValue, LoadedAttributes, LockType};

use crate::tables::AttributeRows;
use crate::StoreError;

/// The attributes `state`'s loading policy asks for.
pub(crate) async fn load_attributes(
    rows: &mut impl AttributeRows,
    process: &ProcessExecution,
    state: &StateExecution,
) -> Result<LoadedAttributes, StoreError> {
    let mut attributes = LoadedAttributes::default();
    let loading = (state.config.global_attribute_loading.as_ref())
        .filter(|loading| !loading.columns.is_empty());
    if let (Some(config), Some(loading)) = (&process.global_attribute_config, loading) {
        attributes.global_attributes = rows
            .read_business_row(config, &loading.columns, loading.lock_type)
            .await?;
    }
    if let Some(loading) = state
        .config
        .local_attribute_loading
        .as_ref()
        .filter(|l| !l.keys.is_empty())
    {
        attributes.local_attributes = rows
            .read_local_attributes(process.id, &loading.keys, LockType::NoLock)
            .await?;
    }
    Ok(attributes)
}

/// Locks the business row that `writes` change before the process row is locked, so
/// every transaction takes the two in the same order (an RPC holding the row lock across
/// its worker call then locks the process row): without it, an RPC and a state decision
/// could deadlock.
pub(crate) async fn lock_business_row_first(
    rows: &mut impl AttributeRows,
    config: Option<&GlobalAttributeConfig>,
    writes: &[GlobalAttributeValue],
) -> Result<(), StoreError> {
    if let (Some(config), false) = (config, writes.is_empty()) {
        rows.read_business_row(
            config,
            std::slice::from_ref(&config.primary_key.column),
            LockType::ExclusiveLock,
        )
        .await?;
    }
    Ok(())
}
