//! Bearer-token protection of the client paths: `security.tokens` (each with its roles)
//! and `security.api_tokens` (every role).
//!
//! Which role a path needs is decided in one place, [`paths::role_of`]. A request without
//! an accepted token gets 401; an accepted token without the path's role gets 403 and the
//! request goes no further, so it changes nothing. Health probes must answer the
//! orchestrator, and the OpenAPI document and the console's static assets are the same
//! for every deployment: none of them takes a token (a browser cannot send one when it
//! loads a page). `/metrics` takes the `read` role. The internal path is not served on
//! this listener at all (see `internal_router`).

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::request::Parts;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;
use xdb_config::SecuritySettings;
use xdb_protocol::paths::{self, Role};
use xdb_protocol::ErrorSubType;

use crate::{ApiError, AppState};

/// An accepted token: its name for the log and what it may do.
struct Grant<'a> {
    name: &'a str,
    roles: &'a [Role],
}

/// Lets a request through when the API is open, the path takes no token, or it carries
/// a configured token with the path's role; answers 401 or 403 otherwise.
/// Who made a request, as changes record it: the accepted token's name, or `anonymous`
/// where the API takes no token. Every request that passed [`require_token`] has one.
#[derive(Debug, Clone)]
pub(crate) struct Caller(pub String);

impl Caller {
    pub(crate) const ANONYMOUS: &'static str = "anonymous";
}

/// A handler takes the caller as an argument; a request that met no [`require_token`]
/// (a router without it, in a test) is `anonymous`.
impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<Caller>()
            .cloned()
            .unwrap_or_else(|| Caller(Caller::ANONYMOUS.to_string())))
    }
}

pub(crate) async fn require_token(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let security = &state.config.security;
    let path = request.uri().path();
    let needed = paths::role_of(path);
    // An unknown path under a client prefix still takes a token, so that probing for
    // paths without one learns nothing.
    if security.is_open() || (needed.is_none() && !paths::is_client_path(path)) {
        request
            .extensions_mut()
            .insert(Caller(Caller::ANONYMOUS.to_string()));
        return next.run(request).await;
    }
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
    let Some(grant) = presented.and_then(|presented| grant_of(security, presented)) else {
        let message = match presented {
            None => "this service requires `Authorization: Bearer <token>`",
            Some(_) => "the bearer token is not accepted",
        };
        let mut response = ApiError::new(ErrorSubType::Unauthorized, message).into_response();
        response
            .headers_mut()
            .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    };
    match needed {
        Some(role) if !grant.roles.contains(&role) => {
            tracing::warn!(token = grant.name, %role, path, "refused: the token lacks the role");
            ApiError::new(
                ErrorSubType::Forbidden,
                format!(
                    "this path needs a token with the `{role}` role; token `{}` has {}",
                    grant.name,
                    roles_text(grant.roles)
                ),
            )
            .into_response()
        }
        _ => {
            let caller = Caller(grant.name.to_string());
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
    }
}

/// The grant of the configured token equal to `presented`, if any. Every token is
/// compared, in constant time, so timing tells nothing about which nearly matched.
fn grant_of<'a>(security: &'a SecuritySettings, presented: &str) -> Option<Grant<'a>> {
    let legacy = security.api_tokens.iter().map(|token| {
        let grant = Grant {
            name: "api_tokens",
            roles: &Role::ALL,
        };
        (token.as_str(), grant)
    });
    let scoped = security.tokens.iter().map(|token| {
        let grant = Grant {
            name: &token.name,
            roles: &token.roles,
        };
        (token.token.as_str(), grant)
    });
    legacy.chain(scoped).fold(None, |found, (token, grant)| {
        let equal = bool::from(token.as_bytes().ct_eq(presented.as_bytes()));
        if equal && found.is_none() {
            Some(grant)
        } else {
            found
        }
    })
}

fn roles_text(roles: &[Role]) -> String {
    let names: Vec<String> = roles.iter().map(|role| format!("`{role}`")).collect();
    format!("{} only", names.join(", "))
}

#[cfg(test)]
mod tests {
    use xdb_config::ApiToken;

    use super::*;

    #[test]
    fn a_token_is_found_with_its_roles_and_legacy_tokens_have_them_all() {
        let security = SecuritySettings {
            api_tokens: vec!["legacy-token-0123456789".into()],
            tokens: vec![ApiToken {
                name: "oncall".into(),
                token: "oncall-token-0123456789".into(),
                roles: vec![Role::Read, Role::Operate],
            }],
            ..Default::default()
        };
        let oncall = grant_of(&security, "oncall-token-0123456789").unwrap();
        assert_eq!(
            (oncall.name, oncall.roles),
            ("oncall", &[Role::Read, Role::Operate][..])
        );
        let legacy = grant_of(&security, "legacy-token-0123456789").unwrap();
        assert_eq!(legacy.roles, Role::ALL);
        for wrong in ["", "oncall-token-012345678", "oncall-token-01234567890"] {
            assert!(grant_of(&security, wrong).is_none(), "{wrong:?}");
        }
        assert_eq!(roles_text(oncall.roles), "`read`, `operate` only");
    }
}
