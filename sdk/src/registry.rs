//! `ProcessDefinition`: a registered process with its types erased, plus the rules that
//! turn user decisions into wire decisions (state configs, default loading policies).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use xdb_protocol as proto;
use xdb_protocol::{
    AsyncStateConfig, Context, EncodedObject, GlobalAttributeLoading, LocalAttributeLoading,
    LockType, StateMovement,
};

use crate::communication::Communication;
use crate::decision::{DecisionKind, NextState, StateDecision};
use crate::error::{InvokeError, XdbError};
use crate::persistence::Persistence;
use crate::process::Process;
use crate::rpc::{ErasedRpc, RpcOptions};
use crate::schema::{CommunicationSchema, PersistenceSchema};
use crate::state::ErasedState;

/// An RPC bound to its process instance, so the registry needs no process type parameter.
#[async_trait]
pub(crate) trait BoundRpc: Send + Sync {
    async fn invoke(
        &self,
        ctx: &Context,
        input: Option<&EncodedObject>,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> Result<Option<EncodedObject>, InvokeError>;
}

struct Bound<P> {
    process: Arc<P>,
    rpc: Arc<dyn ErasedRpc<P>>,
}

#[async_trait]
impl<P: Send + Sync + 'static> BoundRpc for Bound<P> {
    async fn invoke(
        &self,
        ctx: &Context,
        input: Option<&EncodedObject>,
        persistence: &mut Persistence,
        communication: &mut Communication,
    ) -> Result<Option<EncodedObject>, InvokeError> {
        self.rpc
            .invoke(&self.process, ctx, input, persistence, communication)
            .await
    }
}

pub(crate) struct RegisteredRpc {
    pub(crate) options: RpcOptions,
    pub(crate) rpc: Arc<dyn BoundRpc>,
}

/// Everything the worker and the client need to know about one process type.
pub struct ProcessDefinition {
    process_type: String,
    state_order: Vec<String>,
    states: HashMap<String, Arc<dyn ErasedState>>,
    starting_state: Option<String>,
    persistence: Arc<PersistenceSchema>,
    communication: Arc<CommunicationSchema>,
    rpcs: HashMap<String, RegisteredRpc>,
    versioning_policy: proto::VersioningPolicy,
    flow_limits: Option<proto::FlowLimits>,
    schedules: Vec<proto::ScheduleDeclaration>,
}

impl ProcessDefinition {
    /// Reads `process`'s schemas once and keeps the instance for its RPCs.
    ///
    /// # Panics
    /// When two states or two RPCs share an id, or the starting state is missing: these
    /// are definition bugs, best caught when the worker starts.
    pub fn new<P: Process>(process: P) -> Self {
        Self::from_arc(Arc::new(process))
    }

    /// Like [`ProcessDefinition::new`], sharing an existing instance.
    pub fn from_arc<P: Process>(process: Arc<P>) -> Self {
        let process_type = process.process_type();
        let schema = process.state_schema();
        let mut states = HashMap::new();
        let mut state_order = Vec::new();
        for state in schema.states {
            let id = state.id();
            assert!(
                states.insert(id.clone(), state).is_none(),
                "process {process_type}: state id {id:?} is registered twice"
            );
            state_order.push(id);
        }
        if let Some(start) = &schema.starting_state {
            assert!(
                states.contains_key(start),
                "process {process_type}: starting state {start:?} is not registered"
            );
        }
        let mut rpcs = HashMap::new();
        for entry in process.rpc_schema().rpcs {
            let bound = Bound {
                process: Arc::clone(&process),
                rpc: entry.rpc,
            };
            let registered = RegisteredRpc {
                options: entry.options,
                rpc: Arc::new(bound),
            };
            assert!(
                rpcs.insert(entry.name.clone(), registered).is_none(),
                "process {process_type}: rpc {:?} is registered twice",
                entry.name
            );
        }
        Self {
            versioning_policy: process.versioning_policy(),
            flow_limits: process.flow_limits(),
            schedules: process.schedules(),
            persistence: Arc::new(process.persistence_schema()),
            communication: Arc::new(process.communication_schema()),
            process_type,
            state_order,
            states,
            starting_state: schema.starting_state,
            rpcs,
        }
    }

    pub fn process_type(&self) -> &str {
        &self.process_type
    }

    pub fn starting_state_id(&self) -> Option<&str> {
        self.starting_state.as_deref()
    }

    /// State ids in registration order.
    pub fn state_ids(&self) -> &[String] {
        &self.state_order
    }

    pub fn persistence_schema(&self) -> &Arc<PersistenceSchema> {
        &self.persistence
    }

    pub fn communication_schema(&self) -> &Arc<CommunicationSchema> {
        &self.communication
    }

    /// Options of RPC `name`, if registered.
    pub fn rpc_options(&self, name: &str) -> Option<&RpcOptions> {
        self.rpcs.get(name).map(|r| &r.options)
    }

    pub fn has_rpc(&self, name: &str) -> bool {
        self.rpcs.contains_key(name)
    }

    pub(crate) fn state(&self, state_id: &str) -> Option<&Arc<dyn ErasedState>> {
        self.states.get(state_id)
    }

    pub(crate) fn rpc(&self, name: &str) -> Option<&RegisteredRpc> {
        self.rpcs.get(name)
    }

    /// The config XDB receives for `state_id`: the state's own options, its waitUntil
    /// flag, and the process's default loading policies where the state sets none.
    pub fn state_config(&self, state_id: &str) -> Result<AsyncStateConfig, XdbError> {
        let state = self
            .state(state_id)
            .ok_or_else(|| self.unknown_state(state_id))?;
        let mut config = state.options();
        config.skip_wait_until = !state.has_wait_until();
        apply_default_loading(&self.persistence, &mut config);
        if let Some(recovery) = config.state_failure_recovery_options.as_mut() {
            if let (Some(id), None) = (
                &recovery.state_failure_proceed_state_id,
                &recovery.state_failure_proceed_state_config,
            ) {
                // XDB needs the recovery state's config to start it. Its own recovery
                // options are left as declared: filling them too could loop when two
                // states recover into each other.
                let state = self.state(id).ok_or_else(|| self.unknown_state(id))?;
                let mut nested = state.options();
                nested.skip_wait_until = !state.has_wait_until();
                apply_default_loading(&self.persistence, &mut nested);
                recovery.state_failure_proceed_state_config = Some(Box::new(nested));
            }
        }
        Ok(config)
    }

    /// The wire form of a move to another state of this process.
    pub fn state_movement(&self, next: &NextState) -> Result<StateMovement, XdbError> {
        let state_config = self.state_config(&next.state_id)?;
        Ok(StateMovement {
            state_id: next.state_id.clone(),
            state_input: next.input.clone()?,
            state_config: Some(state_config),
        })
    }

    /// The wire form of a decision, with every next state checked and configured.
    pub fn state_decision(
        &self,
        decision: &StateDecision,
    ) -> Result<proto::StateDecision, XdbError> {
        match &decision.kind {
            DecisionKind::NextStates(states) => Ok(proto::StateDecision {
                next_states: states
                    .iter()
                    .map(|s| self.state_movement(s))
                    .collect::<Result<_, _>>()?,
                thread_close_decision: None,
            }),
            DecisionKind::Close { close_type, output } => Ok(proto::StateDecision {
                next_states: Vec::new(),
                thread_close_decision: Some(proto::ThreadCloseDecision {
                    close_type: *close_type,
                    output: output.clone()?,
                }),
            }),
        }
    }

    /// What the service is told of this process type when the worker registers it
    /// (`Client::register_definitions`): states with their configs, queues, RPCs with
    /// the loading they get when a caller names none, the table and attributes. Rust
    /// types carry no JSON Schema, so inputs are not declared.
    pub fn wire_definition(&self) -> proto::ProcessDefinition {
        let states = self
            .state_order
            .iter()
            .map(|id| proto::StateDefinition {
                id: id.clone(),
                has_wait_until: self.states[id].has_wait_until(),
                config: self.state_config(id).ok(),
                input_schema: None,
                flow_limits: self.states[id].flow_limits(),
            })
            .collect();
        let mut rpcs: Vec<proto::RpcDefinition> = self
            .rpcs
            .iter()
            .map(|(name, rpc)| proto::RpcDefinition {
                name: name.clone(),
                global_attribute_loading: rpc
                    .options
                    .global_attribute_loading
                    .clone()
                    .or_else(|| default_global_loading(&self.persistence)),
                local_attribute_loading: rpc
                    .options
                    .local_attribute_loading
                    .clone()
                    .or_else(|| default_local_loading(&self.persistence)),
                input_schema: None,
            })
            .collect();
        rpcs.sort_by(|a, b| a.name.cmp(&b.name));
        let any = |name: &String| proto::AttributeDefinition {
            name: name.clone(),
            attribute_type: proto::AttributeType::Any,
        };
        proto::ProcessDefinition {
            process_type: self.process_type.clone(),
            states,
            start_states: Vec::new(),
            local_queues: self.communication.local_queues().to_vec(),
            rpcs,
            global_attributes: self.persistence.table().map(|table| {
                proto::GlobalAttributesDefinition {
                    table_name: table.table_name.clone(),
                    primary_key_column: table.primary_key_column.clone(),
                    columns: self
                        .persistence
                        .global_attributes()
                        .iter()
                        .map(any)
                        .collect(),
                }
            }),
            local_attributes: self
                .persistence
                .local_attributes()
                .iter()
                .map(any)
                .collect(),
            versioning_policy: self.versioning_policy,
            flow_limits: self.flow_limits.clone(),
            schedules: self.schedules.clone(),
        }
    }

    fn unknown_state(&self, state_id: &str) -> XdbError {
        XdbError::UnknownState {
            process_type: self.process_type.clone(),
            state_id: state_id.to_string(),
        }
    }
}

impl std::fmt::Debug for ProcessDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut rpcs: Vec<&String> = self.rpcs.keys().collect();
        rpcs.sort();
        f.debug_struct("ProcessDefinition")
            .field("process_type", &self.process_type)
            .field("states", &self.state_order)
            .field("starting_state", &self.starting_state)
            .field("persistence", &self.persistence)
            .field("communication", &self.communication)
            .field("rpcs", &rpcs)
            .finish()
    }
}

/// Fills loading policies a state left unset: every declared global-attribute column and
/// every declared local key, without a lock, so user code can read whatever the process
/// declares unless a state narrows it (or asks for a lock).
pub fn apply_default_loading(schema: &PersistenceSchema, config: &mut AsyncStateConfig) {
    if config.global_attribute_loading.is_none() {
        config.global_attribute_loading = default_global_loading(schema);
    }
    if config.local_attribute_loading.is_none() {
        config.local_attribute_loading = default_local_loading(schema);
    }
}

/// All declared columns, `NO_LOCK`; `None` when the process has no global attributes.
pub fn default_global_loading(schema: &PersistenceSchema) -> Option<GlobalAttributeLoading> {
    (schema.table().is_some() && !schema.global_attributes().is_empty()).then(|| {
        GlobalAttributeLoading {
            columns: schema.global_attributes().to_vec(),
            lock_type: LockType::NoLock,
        }
    })
}

/// All declared keys, `NO_LOCK`; `None` when the process declares none.
pub fn default_local_loading(schema: &PersistenceSchema) -> Option<LocalAttributeLoading> {
    (!schema.local_attributes().is_empty()).then(|| LocalAttributeLoading {
        keys: schema.local_attributes().to_vec(),
        lock_type: LockType::NoLock,
    })
}
