//! The rustls client config of a database URL's TLS settings (PostgreSQL's connector;
//! mysql_async builds its own from `SslOpts`).

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::{ClientConfig, RootCertStore};
use xdb_config::{DatabaseTls, ServerCheck, TrustedRoots};

use crate::verifier::DatabaseVerifier;
use crate::ConnectError;

/// The ring provider, explicitly: no process-wide default needs installing.
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

pub(crate) fn client_config(tls: &DatabaseTls) -> Result<ClientConfig, ConnectError> {
    let provider = provider();
    let webpki = match (&tls.roots, tls.check) {
        (_, ServerCheck::None) | (None, _) => None,
        (Some(roots), _) => {
            let roots = Arc::new(root_store(roots, tls)?);
            let verifier = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|error| ConnectError::settings(format!("{}: {error}", tls.names.roots)))?;
            Some(verifier)
        }
    };
    let verifier = DatabaseVerifier::new(tls.check, webpki, provider.clone(), tls.to_string());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| ConnectError::settings(format!("TLS: {error}")))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    match &tls.client {
        None => Ok(builder.with_no_client_auth()),
        Some(client) => {
            let certificates =
                xdb_config::read_certificates(&client.cert_file).map_err(|problem| {
                    ConnectError::settings(format!("{}: {problem}", tls.names.cert))
                })?;
            let key = xdb_config::read_private_key(&client.key_file).map_err(|problem| {
                ConnectError::settings(format!("{}: {problem}", tls.names.key))
            })?;
            builder
                .with_client_auth_cert(certificates, key)
                .map_err(|error| {
                    ConnectError::settings(format!(
                        "{}/{}: the certificate and key do not go together: {error}",
                        tls.names.cert, tls.names.key
                    ))
                })
        }
    }
}

fn root_store(roots: &TrustedRoots, tls: &DatabaseTls) -> Result<RootCertStore, ConnectError> {
    match roots {
        TrustedRoots::System => Ok(RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        }),
        TrustedRoots::File(path) => {
            let mut store = RootCertStore::empty();
            let certificates = xdb_config::read_certificates(path).map_err(|problem| {
                ConnectError::settings(format!("{}: {problem}", tls.names.roots))
            })?;
            for certificate in certificates {
                store.add(certificate).map_err(|error| {
                    ConnectError::settings(format!(
                        "{}: {} holds a certificate that cannot be a root: {error}",
                        tls.names.roots,
                        path.display()
                    ))
                })?;
            }
            Ok(store)
        }
    }
}
