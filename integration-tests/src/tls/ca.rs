//! A CA of the test's own and the certificates it signs, written as PEM files.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// A CA made for one test; its directory is removed when it is dropped.
pub struct TestCa {
    dir: PathBuf,
    issuer: Issuer<'static, KeyPair>,
    ca_file: PathBuf,
}

/// A certificate the CA signed and its private key, as PEM files.
#[derive(Debug, Clone)]
pub struct Issued {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestCa {
    /// A new CA, its certificate in [`TestCa::ca_file`].
    pub fn new() -> Self {
        let dir = super::fresh_dir("test-ca");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "XDB test CA");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("a CA key");
        let certificate = params.self_signed(&key).expect("the CA certificate");
        let ca_file = dir.join("ca.pem");
        std::fs::write(&ca_file, certificate.pem()).expect("write the CA certificate");
        Self {
            dir,
            issuer: Issuer::new(params, key),
            ca_file,
        }
    }

    /// The CA's certificate (PEM): what a client trusts.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// A server certificate for `names` (host names or IP addresses), written as
    /// `<file_name>.pem` and `<file_name>.key`.
    pub fn server(&self, file_name: &str, names: &[&str]) -> Issued {
        let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("server certificate parameters");
        params
            .distinguished_name
            .push(DnType::CommonName, file_name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.issue(file_name, params)
    }

    /// A client certificate whose common name is `common_name` (PostgreSQL's `cert`
    /// authentication takes it as the user name).
    pub fn client(&self, file_name: &str, common_name: &str) -> Issued {
        let mut params =
            CertificateParams::new(Vec::<String>::new()).expect("client certificate parameters");
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(file_name, params)
    }

    fn issue(&self, file_name: &str, params: CertificateParams) -> Issued {
        let key = KeyPair::generate().expect("a key");
        let certificate = params
            .signed_by(&key, &self.issuer)
            .expect("a certificate signed by the test CA");
        let issued = Issued {
            cert_file: self.dir.join(format!("{file_name}.pem")),
            key_file: self.dir.join(format!("{file_name}.key")),
            cert_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
        };
        std::fs::write(&issued.cert_file, &issued.cert_pem).expect("write a certificate");
        std::fs::write(&issued.key_file, &issued.key_pem).expect("write a key");
        issued
    }
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TestCa {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
