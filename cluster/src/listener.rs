//! The services' TCP listeners, with room for a burst of connections.

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpSocket};

/// Connections the kernel queues for a listener until it accepts them. At the 128 that
/// std and tokio ask for, a burst of new connections (500 clients starting together, an
/// instance opening its connection pool) overflows the queue while the accept loop waits
/// for a core, and each SYN dropped costs its client a second before it is sent again.
/// The kernel caps the figure at `net.core.somaxconn` (4,096 by default since Linux 5.4).
pub const LISTEN_BACKLOG: u32 = 1024;

/// A listener on `address` with a queue of [`LISTEN_BACKLOG`], its address reusable at
/// once after a restart (as `TcpListener::bind`'s is).
pub fn bind_listener(address: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match address {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(LISTEN_BACKLOG)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// More connections than the default queue holds, opened before any is accepted:
    /// each handshake completes only if the queue has room for it, and one whose SYN
    /// was dropped would wait a second for its retransmission.
    async fn accepts_a_burst_before_accepting_any(listener: TcpListener) {
        let address = listener.local_addr().unwrap();
        let connects = (0..200).map(|_| tokio::net::TcpStream::connect(address));
        let connected = tokio::time::timeout(
            Duration::from_millis(900),
            futures::future::try_join_all(connects),
        )
        .await
        .expect("200 connections opened without a retransmitted SYN")
        .expect("every connection opened");
        assert_eq!(connected.len(), 200);
        for _ in 0..200 {
            listener.accept().await.unwrap();
        }
    }

    #[tokio::test]
    async fn a_services_listener_queues_a_burst_of_connections() {
        let listener = bind_listener("127.0.0.1:0".parse().unwrap()).unwrap();
        accepts_a_burst_before_accepting_any(listener).await;
    }

    #[tokio::test]
    async fn a_workers_listener_queues_a_burst_of_connections() {
        let listener = xdb_sdk::worker::bind_listener("127.0.0.1:0".parse().unwrap()).unwrap();
        accepts_a_burst_before_accepting_any(listener).await;
    }
}
