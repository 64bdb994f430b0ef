//! PEM files of certificates and keys: read and checked once at start-up, so a missing
//! or garbled file stops start-up with the setting that names it, not the first
//! connection. Every connector reads its files through these functions too.

use std::path::Path;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::database_tls::TrustedRoots;
use crate::settings::Settings;
use crate::validate::Service;
use crate::{DatabaseUrl, QueueMode};

/// The certificates (PEM, one or more) in `path`; the error says what is wrong, not
/// which setting named the file (callers add that).
pub fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|error| describe(path, error))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| describe(path, error))?;
    if certificates.is_empty() {
        return Err(format!(
            "{} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            path.display()
        ));
    }
    Ok(certificates)
}

/// The private key (PEM: PKCS#8, PKCS#1 or SEC1) in `path`.
pub fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path).map_err(|error| match error {
        rustls_pki_types::pem::Error::NoItemsFound => format!(
            "{} holds no PEM private key (-----BEGIN PRIVATE KEY-----)",
            path.display()
        ),
        error => describe(path, error),
    })
}

fn describe(path: &Path, error: rustls_pki_types::pem::Error) -> String {
    match error {
        rustls_pki_types::pem::Error::Io(error) => {
            format!("cannot read {}: {error}", path.display())
        }
        error => format!("{} is not valid PEM: {error}", path.display()),
    }
}

/// Every certificate or key file the settings name for `service`, read and parsed:
/// one problem per unusable file, naming its setting.
pub(crate) fn problems(settings: &Settings, service: Service) -> Vec<String> {
    let mut problems = Vec::new();
    if let Ok(url) = settings.database.parsed_url() {
        problems.extend(
            database_problems(&url)
                .into_iter()
                .map(|p| format!("database.url: {p}")),
        );
    }
    let security = &settings.security;
    let mut certificates = |setting: &str, path: Option<&Path>| {
        if let Some(problem) = path.and_then(|path| read_certificates(path).err()) {
            problems.push(format!("{setting}: {problem}"));
        }
    };
    certificates(
        "security.worker_ca_file",
        security.worker_ca_file.as_deref(),
    );
    certificates(
        "security.worker_client_cert_file",
        security.worker_client_cert_file.as_deref(),
    );
    let runs_pulsar = service != Service::Api && settings.queue.mode == QueueMode::Pulsar;
    if runs_pulsar {
        certificates("pulsar.tls_ca_file", settings.pulsar.tls_ca_file.as_deref());
    }
    if let Some(problem) = security
        .worker_client_key_file
        .as_deref()
        .and_then(|path| read_private_key(path).err())
    {
        problems.push(format!("security.worker_client_key_file: {problem}"));
    }
    problems
}

/// The problems of the files a database URL's TLS parameters name, each starting with
/// the parameter (`sslrootcert: cannot read /ca.pem: …`).
pub fn database_problems(url: &DatabaseUrl) -> Vec<String> {
    let tls = url.tls();
    let mut problems = Vec::new();
    if let Some(TrustedRoots::File(path)) = &tls.roots {
        if let Err(problem) = read_certificates(path) {
            problems.push(format!("{}: {problem}", tls.names.roots));
        }
    }
    if let Some(client) = &tls.client {
        if let Err(problem) = read_certificates(&client.cert_file) {
            problems.push(format!("{}: {problem}", tls.names.cert));
        }
        if let Err(problem) = read_private_key(&client.key_file) {
            problems.push(format!("{}: {problem}", tls.names.key));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOT_PEM: &str = "not a certificate\n";

    fn file(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("xdb-config-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn unusable_files_are_named_with_their_setting() {
        let dir = temp_dir("tls-files");
        let garbage = file(&dir, "garbage.pem", NOT_PEM);
        let missing = dir.join("missing.pem");
        let mut settings = Settings::default();
        settings.database.url = Some(format!(
            "postgres://u@h/db?sslmode=verify-full&sslrootcert={}&sslcert={}&sslkey={}",
            missing.display(),
            garbage.display(),
            garbage.display()
        ));
        settings.security.worker_ca_file = Some(garbage.clone());
        settings.security.worker_client_cert_file = Some(missing.clone());
        settings.security.worker_client_key_file = Some(garbage.clone());
        let problems = problems(&settings, Service::Both);
        let expected = [
            "database.url: sslrootcert: cannot read",
            "database.url: sslcert: ",
            "database.url: sslkey: ",
            "security.worker_ca_file: ",
            "security.worker_client_cert_file: cannot read",
            "security.worker_client_key_file: ",
        ];
        assert_eq!(problems.len(), expected.len(), "{problems:#?}");
        for (problem, start) in problems.iter().zip(expected) {
            assert!(problem.starts_with(start), "{problem}");
        }
        assert!(
            problems[1].contains("holds no PEM certificate"),
            "{}",
            problems[1]
        );
        assert!(
            problems[2].contains("holds no PEM private key"),
            "{}",
            problems[2]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
