//! [`TcpProxy`]: a fault-injecting TCP proxy on loopback, run in the test's own tokio
//! runtime, to put a network partition between a service and its database or worker:
//! point the service at [`TcpProxy::url_to`] instead of the real address.
//!
//! - [`TcpProxy::blackhole`]: connections stay open and new ones are accepted, but
//!   bytes stop moving in the chosen directions, as in a real partition (no FIN, no
//!   RST). Bytes already read are held, not dropped, so a healed connection carries
//!   them on in order, as TCP's retransmissions would.
//! - [`TcpProxy::reset`]: every open connection is closed with an RST on both sides (a
//!   partition that outlasted TCP's own timeouts, or a middlebox restart).
//! - [`TcpProxy::heal`]: bytes move again, on old and new connections.
//!
//! What it cannot show: the kernel still acknowledges segments and keepalive probes on
//! the proxy's sockets, so TCP keepalives and `TCP_USER_TIMEOUT` of either end never
//! fire through a blackhole; only timeouts above TCP (statements, sessions, requests)
//! do. Tests relying on those must use this proxy; the kernel-level ones are not tested.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::AbortHandle;

/// Which way bytes stop moving in a [`TcpProxy::blackhole`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the client (the service) to the upstream (database, worker).
    ToUpstream,
    /// From the upstream back to the client.
    ToClient,
    Both,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Blocked {
    to_upstream: bool,
    to_client: bool,
}

impl Blocked {
    fn blocks(self, toward_upstream: bool) -> bool {
        if toward_upstream {
            self.to_upstream
        } else {
            self.to_client
        }
    }
}

struct Inner {
    upstream: SocketAddr,
    blocked: watch::Sender<Blocked>,
    /// Bumped by every reset; each connection ends when it changes.
    resets: watch::Sender<u64>,
    accepted: AtomicU64,
    open: AtomicU64,
}

/// A proxy from a loopback port to `upstream`; stops accepting and resets its
/// connections when dropped.
pub struct TcpProxy {
    address: SocketAddr,
    inner: Arc<Inner>,
    accept: AbortHandle,
}

impl TcpProxy {
    /// Listens on a free loopback port and forwards every connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy's listener");
        let address = listener.local_addr().expect("local address");
        let inner = Arc::new(Inner {
            upstream,
            blocked: watch::channel(Blocked::default()).0,
            resets: watch::channel(0).0,
            accepted: AtomicU64::new(0),
            open: AtomicU64::new(0),
        });
        let accept = tokio::spawn(accept_loop(listener, inner.clone())).abort_handle();
        Self {
            address,
            inner,
            accept,
        }
    }

    /// A proxy to the host and port of `url` (`scheme://[user@]host:port/...`).
    pub async fn start_for_url(url: &str) -> Self {
        Self::start(upstream_of(url)).await
    }

    /// The address clients connect to.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `url` with its host and port replaced by this proxy's (database or HTTP URL).
    pub fn url_to(&self, url: &str) -> String {
        let mut parsed = reqwest::Url::parse(url).expect("a URL with a host");
        parsed
            .set_host(Some(&self.address.ip().to_string()))
            .expect("the URL takes a host");
        parsed
            .set_port(Some(self.address.port()))
            .expect("the URL takes a port");
        if xdb_config::Dialect::from_url(url) == Ok(xdb_config::Dialect::MySql) {
            // mysql_async moves a connection to a local server onto its Unix socket,
            // around the proxy, unless told not to.
            parsed
                .query_pairs_mut()
                .append_pair("prefer_socket", "false");
        }
        parsed.to_string()
    }

    /// Stops moving bytes in `direction`; connections stay open and new ones are
    /// accepted (and stalled the same way).
    pub fn blackhole(&self, direction: Direction) {
        self.inner.blocked.send_replace(Blocked {
            to_upstream: direction != Direction::ToClient,
            to_client: direction != Direction::ToUpstream,
        });
    }

    /// Moves bytes again both ways, held ones first.
    pub fn heal(&self) {
        self.inner.blocked.send_replace(Blocked::default());
    }

    /// Closes every open connection with an RST to both ends (new ones are accepted).
    pub fn reset(&self) {
        self.inner.resets.send_modify(|n| *n += 1);
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.inner.accepted.load(Ordering::SeqCst)
    }

    /// Connections open now.
    pub fn open(&self) -> u64 {
        self.inner.open.load(Ordering::SeqCst)
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.reset();
    }
}

/// The socket address of `url`'s host and port.
pub fn upstream_of(url: &str) -> SocketAddr {
    let parsed = reqwest::Url::parse(url).unwrap_or_else(|e| panic!("not a URL ({e})"));
    let host = parsed.host_str().expect("the URL names a host");
    let port = parsed.port().expect("the URL names a port");
    format!("{host}:{port}")
        .parse()
        .unwrap_or_else(|e| panic!("{host}:{port} is not an IP address and port: {e}"))
}

async fn accept_loop(listener: TcpListener, inner: Arc<Inner>) {
    loop {
        let client = match listener.accept().await {
            Ok((client, _)) => client,
            // Out of descriptors, say: try again shortly rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        inner.accepted.fetch_add(1, Ordering::SeqCst);
        let inner = inner.clone();
        tokio::spawn(async move {
            let Ok(Ok(upstream)) =
                tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(inner.upstream))
                    .await
            else {
                // The upstream is down: the client sees its connection closed.
                return;
            };
            let _ = client.set_nodelay(true);
            let _ = upstream.set_nodelay(true);
            inner.open.fetch_add(1, Ordering::SeqCst);
            let (client_read, client_write) = client.into_split();
            let (upstream_read, upstream_write) = upstream.into_split();
            let there = tokio::spawn(pump(client_read, upstream_write, true, inner.clone()));
            let back = tokio::spawn(pump(upstream_read, client_write, false, inner.clone()));
            let _ = tokio::join!(there, back);
            inner.open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// Copies `from` to `to` while the direction is open; ends at EOF (passed on as a
/// FIN), on an error, or with RSTs at a reset.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    toward_upstream: bool,
    inner: Arc<Inner>,
) {
    let mut resets = inner.resets.subscribe();
    let mut blocked = inner.blocked.subscribe();
    let mut buffer = vec![0u8; 16 * 1024];
    let copy = async {
        loop {
            // Not even reading while blocked: the sender's kernel buffers fill and its
            // writes stall, as they do when segments go unacknowledged.
            if blocked
                .wait_for(|b| !b.blocks(toward_upstream))
                .await
                .is_err()
            {
                return;
            }
            let n = match from.read(&mut buffer).await {
                Ok(0) | Err(_) => {
                    let _ = to.shutdown().await;
                    return;
                }
                Ok(n) => n,
            };
            // A blackhole that began during the read holds these bytes until healed.
            if blocked
                .wait_for(|b| !b.blocks(toward_upstream))
                .await
                .is_err()
            {
                return;
            }
            if to.write_all(&buffer[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        () = copy => {}
        _ = resets.changed() => {
            // A zero linger turns the close into an RST.
            let _ = from.as_ref().set_zero_linger();
            let _ = to.as_ref().set_zero_linger();
        }
    }
}
