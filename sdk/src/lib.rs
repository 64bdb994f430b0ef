//! Rust SDK for XDB.
//!
//! - Define a process: implement [`Process`] and [`AsyncState`]; register RPCs in an
//!   [`RpcSchema`]; read and write attributes through [`Persistence`] and publish through
//!   [`Communication`].
//! - Host it: [`WorkerService::new`]`().register(process).router()` gives an axum router
//!   serving the worker API, to mount in your own app.
//! - Drive it: [`Client`] calls the XDB service (start, RPC, wait, ...).

pub mod client;
pub mod command;
pub mod communication;
pub mod decision;
pub mod encoding;
pub mod error;
pub mod persistence;
pub mod process;
pub mod registry;
pub mod rpc;
pub mod schema;
pub mod signature;
pub mod start_options;
pub mod state;
pub mod worker;

pub use async_trait::async_trait;
pub use xdb_protocol as protocol;
pub use xdb_protocol::{
    AsyncStateConfig, Context, GlobalAttributeLoading, LocalAttributeLoading, LockType,
    ProcessIdReusePolicy, RetryPolicy, StateFailureRecoveryOptions,
};

pub use client::{Client, ClientError};
pub use command::{Command, CommandRequest, CommandResults};
pub use communication::Communication;
pub use decision::{NextState, StateDecision};
pub use error::{BoxError, Result, XdbError};
pub use persistence::Persistence;
pub use process::{Process, StateSchema};
pub use registry::ProcessDefinition;
pub use rpc::{RpcOptions, RpcSchema};
pub use schema::{CommunicationSchema, PersistenceSchema};
pub use start_options::ProcessStartOptions;
pub use state::AsyncState;
pub use worker::{WorkerCallError, WorkerService};
