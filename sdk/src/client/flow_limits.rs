//! Flow limits: how fast the async service may call a process type's worker, per type or
//! per state. A definition declares them at registration; an operator overrides them here,
//! and every change is kept in an audit history.

use xdb_protocol::paths;
use xdb_protocol::*;

use super::retry::Repeat;
use super::{Client, ClientError};

impl Client {
    /// Sets (`override_limits: Some(..)`) or clears (`None`) an operator's override of a
    /// process type's or a state's limits; answers the entry as it now is. An override
    /// of `FlowLimits::default()` is no limit, whatever is declared. A bad limit, an
    /// unknown state of a registered type or a too-long reason is an `INVALID_REQUEST`
    /// naming the field, and changes nothing. Sending the same request twice leaves the
    /// same override, so it is sent again like a read.
    pub async fn flow_limits_set(
        &self,
        request: &FlowLimitsSetRequest,
    ) -> Result<FlowLimitsEntry, ClientError> {
        self.call(paths::FLOW_LIMITS_SET, request, Repeat::Safe)
            .await
    }

    /// The limits declared, overridden and in force, by process type and state.
    pub async fn flow_limits_list(
        &self,
        request: &FlowLimitsListRequest,
    ) -> Result<FlowLimitsListResponse, ClientError> {
        self.call(paths::FLOW_LIMITS_LIST, request, Repeat::Safe)
            .await
    }

    /// The changes of limits, by registrations and operators, newest first, a page at a
    /// time.
    pub async fn flow_limits_history(
        &self,
        request: &FlowLimitsHistoryRequest,
    ) -> Result<FlowLimitsHistoryResponse, ClientError> {
        self.call(paths::FLOW_LIMITS_HISTORY, request, Repeat::Safe)
            .await
    }
}
