//! A worker's router served over HTTPS with a certificate of the test CA, optionally
//! asking every client for a certificate of that CA (mutual TLS).

use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use super::{Issued, TestCa};

/// An HTTPS server; stopped when dropped.
pub struct HttpsServer {
    /// `https://localhost:<port>`.
    pub url: String,
    task: JoinHandle<()>,
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `router` on 127.0.0.1 and a free port with `server`'s certificate; with
/// `client_ca`, a client must show a certificate that CA signed.
pub async fn serve_https(
    router: axum::Router,
    server: &Issued,
    client_ca: Option<&TestCa>,
) -> HttpsServer {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("TLS versions");
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            for certificate in CertificateDer::pem_file_iter(ca.ca_file()).expect("the CA file") {
                roots
                    .add(certificate.expect("a CA certificate"))
                    .expect("a root");
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .expect("the client verifier");
            builder.with_client_cert_verifier(verifier)
        }
    };
    let chain = CertificateDer::pem_slice_iter(server.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .expect("the server certificate");
    let key = PrivateKeyDer::from_pem_slice(server.key_pem.as_bytes()).expect("the server key");
    let config = builder
        .with_single_cert(chain, key)
        .expect("the server config");
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!(
        "https://localhost:{}",
        listener.local_addr().expect("address").port()
    );
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let service = TowerToHyperService::new(router.clone());
            tokio::spawn(async move {
                // A refused handshake (no or a wrong client certificate) ends here.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    HttpsServer { url, task }
}
