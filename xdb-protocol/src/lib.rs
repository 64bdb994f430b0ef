//! The XDB REST contract as Rust types.
//!
//! Everything that crosses a process boundary over HTTP is declared here: the service API
//! that clients call, the worker API that XDB calls on the user's service, and the JSON
//! error body. The OpenAPI document (`openapi.json` at the crate root) is generated from
//! these types, so the document and the code cannot drift apart.
//!
//! This crate holds data only: no IO, no validation beyond what serde enforces; the
//! [`Limits`] are numbers that the document states and the services enforce.

pub mod batch;
pub mod canonical_json;
pub mod common;
pub mod console;
pub mod definitions;
pub mod error;
pub mod flow_limits;
pub mod history;
pub mod internal;
pub mod limits;
pub mod openapi;
pub mod operate;
pub mod paths;
pub mod query;
pub mod schedule;
pub mod schedule_history;
pub mod service;
pub mod worker;

pub use batch::*;
pub use common::*;
pub use console::*;
pub use definitions::*;
pub use error::*;
pub use flow_limits::*;
pub use history::*;
pub use internal::*;
pub use limits::Limits;
pub use operate::*;
pub use query::*;
pub use schedule::*;
pub use schedule_history::*;
pub use service::*;
pub use worker::*;
