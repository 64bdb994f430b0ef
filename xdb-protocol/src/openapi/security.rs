//! The credentials: the bearer token clients send to the service paths
//! (`security.api_tokens`) and the signature XDB puts on every worker call
//! (`security.worker_signing_secret`), both optional, off by default, so each of those
//! operations accepts no credentials too; and the signature on the services' calls to
//! each other, always required.

use serde_json::json;
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::OpenApi;

use super::from_json;
use crate::paths;

/// The bearer token's security scheme.
pub const BEARER: &str = "bearerAuth";
/// The worker-call signature's security scheme.
pub const SIGNATURE: &str = "xdbSignature";
/// The signature on the services' calls to each other (the internal path).
pub const INTERNAL_SIGNATURE: &str = "xdbInternalSignature";

pub(super) fn apply(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        BEARER,
        from_json::<utoipa::openapi::security::SecurityScheme>(json!({
            "type": "http",
            "scheme": "bearer",
            "description": "`Authorization: Bearer <token>`, required by the service and \
                            console paths when the service is configured with \
                            `security.api_tokens` \
                            (401 `UNAUTHORIZED` otherwise). Health probes and this document \
                            stay open."
        })),
    );
    components.add_security_scheme(
        SIGNATURE,
        from_json::<utoipa::openapi::security::SecurityScheme>(json!({
            "type": "apiKey",
            "in": "header",
            "name": "X-XDB-Signature",
            "description": "Sent on every worker call when the services are configured with \
                            `security.worker_signing_secret`, a secret the workers share. \
                            Value: `t=<unix seconds>,v1=<hex HMAC-SHA256>`, the HMAC keyed \
                            with the secret's UTF-8 bytes over the ASCII decimal timestamp, \
                            a `.`, and the exact request body bytes. A worker verifies it \
                            by recomputing the HMAC over the body as received (before any \
                            JSON parsing), comparing in constant time, and refusing \
                            timestamps more than 300 s from its clock; it answers a missing \
                            or wrong signature with 401. Parse the parts by name, ignoring \
                            unknown ones (a future `v2`)."
        })),
    );
    components.add_security_scheme(
        INTERNAL_SIGNATURE,
        from_json::<utoipa::openapi::security::SecurityScheme>(json!({
            "type": "apiKey",
            "in": "header",
            "name": "X-XDB-Signature",
            "description": "Required on the internal path, which only XDB's own instances \
                            call, on their internal listeners (`api.internal_listen`, \
                            `async.listen`; MySQL only). The worker signature's format, \
                            keyed with the cluster's internal secret \
                            (`security.internal_secret`, else the one the schema installer \
                            keeps in `xdb_sys_cluster_secrets`), the timestamp read from \
                            the database's clock and refused 30 s away from it. A missing \
                            or wrong signature is answered 401 `UNAUTHORIZED`."
        })),
    );
    for (path, item) in doc.paths.paths.iter_mut() {
        let Some(operation) = item.post.as_mut() else {
            continue;
        };
        let scheme = if paths::is_client_path(path) {
            BEARER
        } else if path.starts_with(paths::WORKER_PREFIX) {
            SIGNATURE
        } else if path == paths::INTERNAL_NOTIFY {
            // Always required: there is no unsigned alternative.
            operation.security = Some(vec![SecurityRequirement::new(
                INTERNAL_SIGNATURE,
                Vec::<String>::new(),
            )]);
            continue;
        } else {
            continue;
        };
        operation.security = Some(vec![
            SecurityRequirement::default(),
            SecurityRequirement::new(scheme, Vec::<String>::new()),
        ]);
    }
}
