use axum::extract::State;
use axum::Json;
use xdb_protocol::{Limits, ProcessExecutionStartRequest, ProcessExecutionStartResponse};

use xdb_persistence::receipts::ClientRequest;

use super::receipted;
use crate::json::ApiJson;
use crate::{ApiError, AppState};

pub(crate) async fn start(
    State(state): State<AppState>,
    ApiJson(mut request): ApiJson<ProcessExecutionStartRequest>,
) -> Result<Json<ProcessExecutionStartResponse>, ApiError> {
    let receipt = receipted::receipt_of(&state, ClientRequest::Start(&request))?;
    resolve_definition(&state, &mut request).await?;
    check_worker_url(
        &state.config.security.worker_url_prefixes,
        &request.worker_url,
    )?;
    check_values(&request, &state.config.limits)?;
    let started: ProcessExecutionStartResponse =
        receipted::apply(&state, ClientRequest::Start(&request), receipt).await?;
    tracing::debug!(
        process_id = %request.process_id,
        execution = %started.process_execution_id,
        "process started"
    );
    Ok(Json(started))
}

/// Checks the start against its process type's registered definition and fills what it
/// leaves to it; without one, the start must name its worker, and a worker that
/// registered other types refuses it here rather than at its first call.
pub(crate) async fn resolve_definition(
    state: &AppState,
    request: &mut ProcessExecutionStartRequest,
) -> Result<(), ApiError> {
    let snapshot = state.definitions.snapshot().await?;
    if let Some(compiled) = snapshot.get(&request.process_type) {
        if snapshot.is_former_deployment(&request.process_type, &request.worker_url) {
            let current = &compiled.stored.revision.deployment;
            return Err(ApiError::invalid(format!(
                "workerUrl: {} is a former deployment of process type '{}', draining; \
                 the current one is {} {} at {} (leave workerUrl out to start there)",
                request.worker_url,
                request.process_type,
                current.name,
                current.version,
                current.worker_url
            )));
        }
        return crate::definitions::resolve_start(compiled, request).map_err(ApiError::invalid);
    }
    if request.worker_url.is_empty() {
        return Err(ApiError::invalid(format!(
            "workerUrl: required, as process type '{}' is not registered (register the \
             worker's definitions, or name its URL)",
            request.process_type
        )));
    }
    if let Some(types) = snapshot.types_at(&request.worker_url) {
        return Err(ApiError::invalid(format!(
            "processType: the worker at {} registered no process type '{}' (it registered: {})",
            request.worker_url,
            request.process_type,
            types.join(", ")
        )));
    }
    Ok(())
}

/// Attribute values written at start, held to `limits.max_attribute_value_bytes`.
pub(crate) fn check_values(
    request: &ProcessExecutionStartRequest,
    limits: &Limits,
) -> Result<(), ApiError> {
    use xdb_engine::validation::{check_global_values, check_local_values};
    let Some(config) = &request.process_start_config else {
        return Ok(());
    };
    let prefix = "processStartConfig";
    if let Some(globals) = &config.global_attribute_config {
        let field = format!("{prefix}.globalAttributeConfig.initialWrite");
        check_global_values(&field, &globals.initial_write, limits)
            .map_err(|e| ApiError::invalid(format!("invalid request: {e}")))?;
    }
    let field = format!("{prefix}.localAttributeInitialWrite");
    check_local_values(&field, &config.local_attribute_initial_write, limits)
        .map_err(|e| ApiError::invalid(format!("invalid request: {e}")))
}

/// The worker URL policy (`security.worker_url_prefixes`): XDB calls the worker URL of
/// every state and RPC of the process, so a client must not be able to point it at an
/// arbitrary host.
pub(crate) fn check_worker_url(prefixes: &[String], worker_url: &str) -> Result<(), ApiError> {
    if prefixes.is_empty() || prefixes.iter().any(|p| worker_url.starts_with(p.as_str())) {
        return Ok(());
    }
    Err(ApiError::invalid(format!(
        "workerUrl: not allowed by this service's worker URL policy (allowed prefixes: {})",
        prefixes.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::check_worker_url;

    #[test]
    fn worker_urls_must_start_with_an_allowed_prefix() {
        let prefixes = vec!["http://workers.internal:8080/".to_string()];
        assert!(check_worker_url(&[], "http://anywhere").is_ok());
        assert!(check_worker_url(&prefixes, "http://workers.internal:8080/signup").is_ok());
        for refused in [
            "http://workers.internal:8080.evil.example/",
            "http://169.254.169.254/latest",
            "http://workers.internal:8081/",
        ] {
            let error = check_worker_url(&prefixes, refused).unwrap_err();
            assert!(error.message.contains("worker URL policy"), "{refused}");
        }
    }
}
