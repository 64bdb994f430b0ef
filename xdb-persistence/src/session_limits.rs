//! How long a database session may outlive its client, the same for both dialects.
//!
//! When the network between a service and the database breaks without a FIN or RST (a
//! partition, a crashed host), the server keeps the session, its open transaction and
//! every row lock it holds until it notices; by default that is TCP keepalive's two
//! hours, or never while the path still answers at the TCP level. An RPC holds the
//! process's business row locked across its worker call, so one API instance cut off
//! mid-RPC blocked every other call on that process for that long. The stores set these
//! on each session (`postgres/mod.rs`, `mysql/mod.rs`):
//!
//! - [`IDLE_IN_TRANSACTION`]: the server ends a session that sits in an open
//!   transaction without sending a statement for this long, which releases its locks
//!   (PostgreSQL `idle_in_transaction_session_timeout`, MariaDB
//!   `idle_transaction_timeout`; MySQL has no such setting). No operation of the store
//!   waits inside a transaction except an RPC on its worker, for at most the API's
//!   largest RPC timeout (60 s), so this is that plus a margin: a live RPC is never cut.
//!   An RPC's transaction narrows it to its own timeout plus 5 s (`operations/rpc.rs`;
//!   MariaDB's setting is per session, so it is set back before the connection returns
//!   to the pool). Measured by the partition test
//!   (`integration-tests/tests/faults/partitions/api_cut.rs`).
//! - [`KEEPALIVE_IDLE`] and friends: TCP keepalives on both ends (the server's per
//!   session, the driver's per socket), so a dead peer is noticed in about
//!   `idle + interval × count` = 30 s instead of two hours, also outside transactions.
//! - [`CONNECT_TIMEOUT`]: opening a connection to an unreachable server gives up.
//!
//! A URL that sets any of these itself (PostgreSQL `options=-c …`, `keepalives_idle`,
//! `connect_timeout`; MySQL `tcp_keepalive`) keeps its value.

use std::time::Duration;

/// The server ends a session idle inside a transaction for this long.
pub(crate) const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(70);

/// `IDLE_IN_TRANSACTION` for a store that runs no RPC: its transactions never wait on
/// anything but the database (a lock wait is not idle), so a few seconds of silence
/// inside one means its client is gone.
pub const IDLE_IN_TRANSACTION_WITHOUT_RPC: Duration = Duration::from_secs(5);

/// Idle time of a connection before the first keepalive probe.
pub(crate) const KEEPALIVE_IDLE: Duration = Duration::from_secs(15);

/// Time between unanswered keepalive probes.
pub(crate) const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);

/// Unanswered probes after which the connection is dropped.
pub(crate) const KEEPALIVE_COUNT: u32 = 3;

/// How long opening a TCP connection to the server may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
