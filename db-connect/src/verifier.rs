//! The check of a database server's certificate, as the URL's TLS mode asks: nothing
//! (`require` without a CA), the chain (`verify-ca`, or any mode with a CA given), or
//! the chain and the host name (`verify-full`). A refusal names the setting that asked
//! for the check, since the driver's message alone ("invalid peer certificate") does
//! not say what to change.

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, OtherError, SignatureScheme};
use xdb_config::ServerCheck;

#[derive(Debug)]
pub(crate) struct DatabaseVerifier {
    check: ServerCheck,
    /// `None` when nothing is checked.
    webpki: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
    /// The TLS settings as the URL gave them, e.g. `sslmode=verify-full sslrootcert=…`.
    setting: String,
}

impl DatabaseVerifier {
    pub(crate) fn new(
        check: ServerCheck,
        webpki: Option<Arc<WebPkiServerVerifier>>,
        provider: Arc<CryptoProvider>,
        setting: String,
    ) -> Self {
        Self {
            check,
            webpki,
            provider,
            setting,
        }
    }
}

/// A refusal, naming the setting that asked for the check.
#[derive(Debug)]
struct Refused {
    setting: String,
    reason: Error,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reason = match &self.reason {
            Error::InvalidCertificate(error) => error.to_string(),
            other => other.to_string(),
        };
        write!(
            f,
            "{} refused the server's certificate: {reason}",
            self.setting
        )
    }
}

impl std::error::Error for Refused {}

impl ServerCertVerifier for DatabaseVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let Some(webpki) = self
            .webpki
            .as_ref()
            .filter(|_| self.check != ServerCheck::None)
        else {
            return Ok(ServerCertVerified::assertion());
        };
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Ok(verified) => Ok(verified),
            // The chain is good (webpki checks the name last); the name is not asked for.
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if self.check == ServerCheck::Chain => Ok(ServerCertVerified::assertion()),
            Err(reason) => Err(Error::Other(OtherError(Arc::new(Refused {
                setting: self.setting.clone(),
                reason,
            })))),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
