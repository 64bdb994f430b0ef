//! Worker deployments: which serves each process type, and moving executions between
//! them.

use axum::extract::State;
use axum::Json;
use xdb_protocol::{
    DeploymentSetCurrentRequest, DeploymentsListRequest, DeploymentsListResponse, ErrorSubType,
    ExecutionsMoveRequest, ExecutionsMoveResponse, RegisterDefinitionsResponse,
};

use super::definitions::registered_or_incompatible;
use crate::json::ApiJson;
use crate::{ApiError, AppState};

/// Most process ids one move names.
const MAX_MOVED_IDS: usize = 1000;

pub(crate) async fn list(
    State(state): State<AppState>,
    ApiJson(_request): ApiJson<DeploymentsListRequest>,
) -> Result<Json<DeploymentsListResponse>, ApiError> {
    let deployments = state.definitions.registry().deployments().await?;
    Ok(Json(DeploymentsListResponse { deployments }))
}

pub(crate) async fn set_current(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<DeploymentSetCurrentRequest>,
) -> Result<Json<RegisterDefinitionsResponse>, ApiError> {
    let deployment = &request.deployment;
    let outcome = state
        .definitions
        .registry()
        .set_current_deployment(deployment, request.force)
        .await?;
    let Some(outcome) = outcome else {
        return Err(ApiError::new(
            ErrorSubType::DefinitionNotFound,
            format!(
                "deployment: {} {} registered no process definitions",
                deployment.name, deployment.version
            ),
        ));
    };
    let response = registered_or_incompatible(&state, outcome)?;
    super::declared_schedules::reconcile(&state, &response.registered).await?;
    tracing::info!(name = %deployment.name, version = %deployment.version, "deployment made current");
    Ok(Json(response))
}

pub(crate) async fn move_executions(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<ExecutionsMoveRequest>,
) -> Result<Json<ExecutionsMoveResponse>, ApiError> {
    if request.process_ids.len() > MAX_MOVED_IDS {
        return Err(ApiError::invalid(format!(
            "processIds: at most {MAX_MOVED_IDS}"
        )));
    }
    match state
        .definitions
        .registry()
        .move_executions(&request, None)
        .await?
    {
        Ok(moved) => {
            tracing::info!(process_type = %request.process_type, to = %request.to.version, moved, "executions moved");
            Ok(Json(ExecutionsMoveResponse { moved }))
        }
        Err(unknown) => Err(ApiError::new(ErrorSubType::DefinitionNotFound, unknown)),
    }
}
