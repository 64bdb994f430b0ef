//! Registering and reading process definitions.

use std::collections::HashSet;

use axum::extract::State;
use axum::Json;
use xdb_engine::validation::split_table_name;
use xdb_persistence::RegisterOutcome;
use xdb_protocol::{
    DefinitionDescribeRequest, DefinitionDescribeResponse, DefinitionsListRequest,
    DefinitionsListResponse, ErrorSubType, RegisterDefinitionsRequest, RegisterDefinitionsResponse,
};

use super::declared_schedules;
use crate::definitions::{check_columns, check_definition, content_hash};
use crate::json::ApiJson;
use crate::{ApiError, AppState};

/// Longest deployment name or version (their columns' size).
const MAX_DEPLOYMENT_CHARS: usize = 255;

/// Most process types in one registration.
const MAX_DEFINITIONS: usize = 100;

pub(crate) async fn register(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<RegisterDefinitionsRequest>,
) -> Result<Json<RegisterDefinitionsResponse>, ApiError> {
    check_request(&state, &request)?;
    declared_schedules::check(&state, &request)?;
    check_tables(&state, &request).await?;
    declared_schedules::check_ids_free(&state, &request).await?;
    let hashes: Vec<String> = request.definitions.iter().map(content_hash).collect();
    let outcome = state
        .definitions
        .registry()
        .register_definitions(&request, &hashes)
        .await?;
    let response = registered_or_incompatible(&state, outcome)?;
    declared_schedules::reconcile(&state, &response.registered).await?;
    Ok(Json(response))
}

/// The answer to a registration (or a deployment made current): what was registered, or
/// 409 naming the states and executions it would strand.
pub(super) fn registered_or_incompatible(
    state: &AppState,
    outcome: RegisterOutcome,
) -> Result<RegisterDefinitionsResponse, ApiError> {
    match outcome {
        RegisterOutcome::Registered(registered) => {
            state.definitions.invalidate();
            for done in registered.iter().filter(|r| r.changed) {
                tracing::info!(
                    process_type = %done.revision.process_type,
                    revision = done.revision.revision,
                    deployment = %done.revision.deployment.name,
                    version = %done.revision.deployment.version,
                    "process definition registered"
                );
            }
            Ok(RegisterDefinitionsResponse { registered })
        }
        RegisterOutcome::Incompatible {
            process_type,
            waiting,
        } => {
            let states: Vec<String> = waiting
                .iter()
                .map(|w| format!("{} ({} running executions)", w.state_id, w.executions))
                .collect();
            let total: u64 = waiting.iter().map(|w| w.executions).sum();
            Err(ApiError::new(
                ErrorSubType::DefinitionIncompatible,
                format!(
                    "process type '{process_type}': the new definition removes states that \
                     running executions wait in: {}; {total} executions in all. Nothing was \
                     registered: let them finish, or register with force: true",
                    states.join(", ")
                ),
            ))
        }
    }
}

/// What the request says by itself: sizes, names, the deployment, each definition.
fn check_request(state: &AppState, request: &RegisterDefinitionsRequest) -> Result<(), ApiError> {
    let deployment = &request.deployment;
    if deployment.worker_url.trim().is_empty() {
        return Err(ApiError::invalid("deployment.workerUrl: must not be empty"));
    }
    for (field, value) in [
        ("deployment.name", &deployment.name),
        ("deployment.version", &deployment.version),
    ] {
        if value.trim().is_empty() {
            return Err(ApiError::invalid(format!("{field}: must not be empty")));
        }
        if value.chars().count() > MAX_DEPLOYMENT_CHARS || value.chars().any(char::is_control) {
            return Err(ApiError::invalid(format!(
                "{field}: at most {MAX_DEPLOYMENT_CHARS} characters, none of them control \
                 characters"
            )));
        }
    }
    super::start::check_worker_url(
        &state.config.security.worker_url_prefixes,
        &deployment.worker_url,
    )
    .map_err(|e| ApiError::invalid(format!("deployment.{}", e.message)))?;
    if request.definitions.is_empty() || request.definitions.len() > MAX_DEFINITIONS {
        return Err(ApiError::invalid(format!(
            "definitions: between 1 and {MAX_DEFINITIONS} process types"
        )));
    }
    let mut seen = HashSet::new();
    for (i, definition) in request.definitions.iter().enumerate() {
        let field = format!("definitions[{i}]");
        check_definition(&field, definition).map_err(ApiError::invalid)?;
        if !seen.insert(definition.process_type.as_str()) {
            return Err(ApiError::invalid(format!(
                "{field}.processType: '{}' is registered twice in this request",
                definition.process_type
            )));
        }
    }
    Ok(())
}

/// Each declared business table exists with the declared columns and compatible types.
async fn check_tables(
    state: &AppState,
    request: &RegisterDefinitionsRequest,
) -> Result<(), ApiError> {
    let registry = state.definitions.registry();
    let names_ignore_case = state.definitions.column_names_ignore_case();
    for (i, definition) in request.definitions.iter().enumerate() {
        let Some(globals) = &definition.global_attributes else {
            continue;
        };
        let field = format!("definitions[{i}].globalAttributes");
        let parts = split_table_name(&format!("{field}.tableName"), &globals.table_name)
            .map_err(|e| ApiError::invalid(e.to_string()))?;
        let (schema, table) = match parts.as_slice() {
            [schema, table] => (Some(*schema), *table),
            [table] => (None, *table),
            _ => unreachable!("split_table_name gives one or two parts"),
        };
        let columns = registry.table_columns(schema, table).await?;
        check_columns(&field, globals, &columns, names_ignore_case).map_err(ApiError::invalid)?;
    }
    Ok(())
}

pub(crate) async fn list(
    State(state): State<AppState>,
    ApiJson(_request): ApiJson<DefinitionsListRequest>,
) -> Result<Json<DefinitionsListResponse>, ApiError> {
    let stored = state.definitions.registry().current_definitions().await?;
    Ok(Json(DefinitionsListResponse {
        definitions: stored.into_iter().map(|s| s.revision).collect(),
    }))
}

pub(crate) async fn describe(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<DefinitionDescribeRequest>,
) -> Result<Json<DefinitionDescribeResponse>, ApiError> {
    let registry = state.definitions.registry();
    let Some(stored) = registry
        .definition(&request.process_type, request.revision)
        .await?
    else {
        let which = match request.revision {
            Some(revision) => format!("revision {revision} of process type"),
            None => "process type".to_string(),
        };
        return Err(ApiError::new(
            ErrorSubType::DefinitionNotFound,
            format!("{which} '{}' is not registered", request.process_type),
        ));
    };
    let revisions = registry.definition_revisions(&request.process_type).await?;
    Ok(Json(DefinitionDescribeResponse {
        revision: stored.revision,
        definition: stored.definition,
        revisions,
    }))
}
