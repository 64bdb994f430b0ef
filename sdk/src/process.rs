//! The `Process` trait: a process type's states, schemas and RPCs.

use std::sync::Arc;

use crate::rpc::RpcSchema;
use crate::schema::{CommunicationSchema, PersistenceSchema};
use crate::state::{short_type_name, AsyncState, ErasedState, TypedState};

/// A process definition, hosted by a worker and started by clients.
///
/// ```text
/// impl Process for UserSignupProcess {
///     fn state_schema(&self) -> StateSchema {
///         StateSchema::with_starting_state(SubmitState::new(..)).state(VerifyState::new(..))
///     }
///     fn persistence_schema(&self) -> PersistenceSchema {
///         PersistenceSchema::with_table("user", "user_id").global_attribute("status")
///     }
///     fn rpc_schema(&self) -> RpcSchema<Self> {
///         RpcSchema::new().rpc("verify", Self::verify)
///     }
/// }
/// ```
pub trait Process: Send + Sync + Sized + 'static {
    /// The process type name, unique within a worker; the type's short name by default.
    fn process_type(&self) -> String {
        short_type_name::<Self>()
    }

    /// Whether running executions stay on the deployment they started on when another
    /// deployment of this type becomes current (`Pinned`, the default), or move to it at
    /// their next call (`MoveToCurrent`). Applies once the worker registers its
    /// definitions ([`crate::WorkerService::register_with`]).
    fn versioning_policy(&self) -> xdb_protocol::VersioningPolicy {
        xdb_protocol::VersioningPolicy::Pinned
    }

    /// Limits on the worker calls of all this type's states together, across all async
    /// instances: `max_calls_per_second` (a rate) and `max_concurrent_calls` (at most so
    /// many calls running at once); and `max_running_executions`, at most so many
    /// executions running per concurrency key (the rest wait `PENDING`); any of them;
    /// and `priority`, that of the type's starts that name none. Declared at
    /// registration, and an operator may override them. See `docs/flow-limits.md`.
    fn flow_limits(&self) -> Option<xdb_protocol::FlowLimits> {
        None
    }

    /// Schedules that start this process type, owned by this code: each registration
    /// creates, changes and deletes them to match, and each firing calls the registering
    /// deployment. Operators may pause, resume and trigger them. See `docs/schedules.md`.
    fn schedules(&self) -> Vec<xdb_protocol::ScheduleDeclaration> {
        Vec::new()
    }

    /// The states, and which one (if any) runs when the process starts.
    fn state_schema(&self) -> StateSchema;

    /// Global-attribute table and columns, and local-attribute keys.
    fn persistence_schema(&self) -> PersistenceSchema {
        PersistenceSchema::new()
    }

    /// Local queues.
    fn communication_schema(&self) -> CommunicationSchema {
        CommunicationSchema::new()
    }

    /// RPC methods, callable by clients while an execution runs.
    fn rpc_schema(&self) -> RpcSchema<Self> {
        RpcSchema::new()
    }
}

/// The states of a process, with an optional starting state.
#[derive(Default)]
pub struct StateSchema {
    pub(crate) states: Vec<Arc<dyn ErasedState>>,
    pub(crate) starting_state: Option<String>,
}

impl StateSchema {
    /// A process that starts with no state running (work begins with RPCs).
    pub fn new() -> Self {
        Self::default()
    }

    /// A process that runs `state` first when started.
    pub fn with_starting_state<S: AsyncState>(state: S) -> Self {
        Self {
            states: vec![Arc::new(TypedState::new(state))],
            starting_state: Some(S::id()),
        }
    }

    /// Registers another state.
    pub fn state<S: AsyncState>(mut self, state: S) -> Self {
        self.states.push(Arc::new(TypedState::new(state)));
        self
    }

    /// Ids of the registered states, in registration order.
    pub fn state_ids(&self) -> Vec<String> {
        self.states.iter().map(|s| s.id()).collect()
    }

    pub fn starting_state_id(&self) -> Option<&str> {
        self.starting_state.as_deref()
    }
}

impl std::fmt::Debug for StateSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSchema")
            .field("states", &self.state_ids())
            .field("starting_state", &self.starting_state)
            .finish()
    }
}
