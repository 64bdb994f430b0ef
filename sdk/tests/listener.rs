//! `bind_listener` queues a burst of connections that tokio's default listener drops, and
//! accepts connections with Nagle's algorithm off.

use std::os::fd::AsRawFd;

use tokio::net::{TcpSocket, TcpStream};
use xdb_sdk::worker::bind_listener;

/// More than the 128 connections tokio's default listener queues.
const BURST: usize = 200;

/// Opens a connection whose SYN is sent twice at most. When the listener's accept queue
/// is full, the kernel drops the SYN (and its retransmission), so `connect` fails with a
/// timeout after about 3 s instead of succeeding late: the test's verdict does not depend
/// on how fast a loaded machine runs.
async fn connect_with_one_retransmission(
    address: std::net::SocketAddr,
) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    let retransmissions: libc::c_int = 1;
    // SAFETY: a valid socket descriptor and a pointer to a c_int of the size given.
    let set = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_SYNCNT,
            (&retransmissions as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if set != 0 {
        return Err(std::io::Error::last_os_error());
    }
    socket.connect(address).await
}

#[tokio::test]
async fn a_listener_queues_a_burst_of_connections_before_accepting_any() {
    let listener = bind_listener("127.0.0.1:0".parse().unwrap()).unwrap();
    let address = listener.local_addr().unwrap();
    // One at a time, so each handshake has completed (and sits in the accept queue)
    // before the next SYN arrives: the queue's length alone decides.
    let mut connections = Vec::with_capacity(BURST);
    for opened in 0..BURST {
        let connection = connect_with_one_retransmission(address)
            .await
            .unwrap_or_else(|e| {
                // The kernel caps the queue at somaxconn: name it when that is the cause.
                let somaxconn =
                    std::fs::read_to_string("/proc/sys/net/core/somaxconn").unwrap_or_default();
                panic!(
                    "connection {} of {BURST} refused: {e} (net.core.somaxconn = {})",
                    opened + 1,
                    somaxconn.trim()
                )
            });
        connections.push(connection);
    }
    for _ in 0..BURST {
        listener.accept().await.unwrap();
    }
}

#[tokio::test]
async fn accepted_connections_send_without_waiting_for_acks() {
    let listener = bind_listener("127.0.0.1:0".parse().unwrap()).unwrap();
    let _client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (accepted, _) = listener.accept().await.unwrap();
    assert!(
        accepted.nodelay().unwrap(),
        "an accepted connection has Nagle's algorithm on"
    );
}
