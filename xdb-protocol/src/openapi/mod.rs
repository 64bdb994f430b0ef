//! The OpenAPI 3 document, generated from the wire types.
//!
//! `openapi.json` at the crate root is this document as committed, with the default
//! [`Limits`]; a test keeps the two identical, so a reviewer sees every contract change in
//! the diff. The API service serves (and validates requests against) the document with
//! the limits it is configured with.

mod limits;

pub use limits::{HTTP_URL, NO_CONTROL_CHARACTERS, SQL_IDENTIFIER, SQL_TABLE_NAME};

use utoipa::OpenApi;

use crate::limits::Limits;

#[allow(dead_code)]
mod operations {
    use crate::*;

    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/start", tag = "service",
        request_body = ProcessExecutionStartRequest,
        responses((status = 200, body = ProcessExecutionStartResponse),
                  (status = 400, body = ApiErrorResponse), (status = 409, body = ApiErrorResponse),
                  (status = 413, body = ApiErrorResponse), (status = 424, body = ApiErrorResponse)))]
    fn start() {}

    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/stop", tag = "service",
        request_body = ProcessExecutionStopRequest,
        responses((status = 200, description = "stopped"),
                  (status = 400, body = ApiErrorResponse), (status = 404, body = ApiErrorResponse),
                  (status = 409, body = ApiErrorResponse)))]
    fn stop() {}

    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/describe", tag = "service",
        request_body = ProcessExecutionDescribeRequest,
        responses((status = 200, body = ProcessExecutionDescribeResponse),
                  (status = 400, body = ApiErrorResponse), (status = 404, body = ApiErrorResponse)))]
    fn describe() {}

    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/list", tag = "service",
        request_body = ProcessExecutionListRequest,
        responses((status = 200, body = ProcessExecutionListResponse),
                  (status = 400, body = ApiErrorResponse)))]
    fn list() {}

    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/history", tag = "service",
        request_body = ProcessExecutionHistoryRequest,
        responses((status = 200, body = ProcessExecutionHistoryResponse),
                  (status = 400, body = ApiErrorResponse), (status = 404, body = ApiErrorResponse)))]
    fn history() {}

    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/publish-to-local-queue", tag = "service",
        request_body = PublishToLocalQueueRequest,
        responses((status = 200, description = "published"),
                  (status = 400, body = ApiErrorResponse), (status = 404, body = ApiErrorResponse),
                  (status = 409, body = ApiErrorResponse), (status = 413, body = ApiErrorResponse)))]
    fn publish_to_local_queue() {}

    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/rpc", tag = "service",
        request_body = ProcessExecutionRpcRequest,
        responses((status = 200, body = ProcessExecutionRpcResponse),
                  (status = 400, body = ApiErrorResponse), (status = 404, body = ApiErrorResponse),
                  (status = 409, body = ApiErrorResponse), (status = 424, body = ApiErrorResponse)))]
    fn rpc() {}

    #[utoipa::path(post, path = "/api/v1/xdb/service/process-execution/wait-for-completion", tag = "service",
        request_body = ProcessExecutionWaitForCompletionRequest,
        responses((status = 200, body = ProcessExecutionWaitForCompletionResponse),
                  (status = 400, body = ApiErrorResponse), (status = 404, body = ApiErrorResponse)))]
    fn wait_for_completion() {}

    #[utoipa::path(post, path = "/api/v1/xdb/internal/notify", tag = "internal",
        request_body = InternalNotifyRequest,
        responses((status = 200, description = "noted"),
                  (status = 400, body = ApiErrorResponse)))]
    fn internal_notify() {}

    #[utoipa::path(post, path = "/api/v1/xdb/worker/async-state/wait-until", tag = "worker",
        request_body = AsyncStateWaitUntilRequest,
        responses((status = 200, body = AsyncStateWaitUntilResponse),
                  (status = 500, body = WorkerErrorResponse)))]
    fn worker_wait_until() {}

    #[utoipa::path(post, path = "/api/v1/xdb/worker/async-state/execute", tag = "worker",
        request_body = AsyncStateExecuteRequest,
        responses((status = 200, body = AsyncStateExecuteResponse),
                  (status = 500, body = WorkerErrorResponse)))]
    fn worker_execute() {}

    #[utoipa::path(post, path = "/api/v1/xdb/worker/process/rpc", tag = "worker",
        request_body = ProcessRpcWorkerRequest,
        responses((status = 200, body = ProcessRpcWorkerResponse),
                  (status = 500, body = WorkerErrorResponse)))]
    fn worker_rpc() {}
}

/// The whole XDB REST contract.
#[derive(OpenApi)]
#[openapi(
    info(title = "XDB", version = "1.0.0",
         description = "XDB: an async programming model on your own database. The `service` \
                        paths are served by the API service; the `worker` paths are served \
                        by the user's worker (the SDK hosts them) and called by XDB."),
    paths(operations::start, operations::stop, operations::describe, operations::list,
          operations::history, operations::publish_to_local_queue, operations::rpc,
          operations::wait_for_completion, operations::internal_notify, operations::worker_wait_until,
          operations::worker_execute, operations::worker_rpc),
    modifiers(&ServiceAuth),
    tags((name = "service", description = "Client → API service"),
         (name = "worker", description = "XDB → the user's worker"),
         (name = "internal", description = "Between XDB's own services")),
)]
pub struct ApiDoc;

/// Declares the optional bearer token of the service paths (`security.api_tokens`):
/// each service operation accepts no credentials (an open service) or the token, and may
/// answer 401.
struct ServiceAuth;

impl utoipa::Modify for ServiceAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{
            HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
        };
        use utoipa::openapi::{RefOr, ResponseBuilder};

        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearerAuth",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        let unauthorized = ResponseBuilder::new()
            .description("the service requires a bearer token and none or a wrong one was sent")
            .content(
                "application/json",
                utoipa::openapi::ContentBuilder::new()
                    .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                        "ApiErrorResponse",
                    ))))
                    .build(),
            )
            .build();
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !path.starts_with(crate::paths::SERVICE_PREFIX) {
                continue;
            }
            if let Some(operation) = item.post.as_mut() {
                operation.security = Some(vec![
                    SecurityRequirement::default(),
                    SecurityRequirement::new("bearerAuth", Vec::<String>::new()),
                ]);
                operation
                    .responses
                    .responses
                    .insert("401".into(), RefOr::T(unauthorized.clone()));
            }
        }
    }
}

/// The document with `limits` stated in the request schemas.
pub fn document(limits: &Limits) -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    limits::apply(&mut doc, limits);
    doc
}

/// The document with `limits`, as pretty JSON.
pub fn document_json(limits: &Limits) -> String {
    document(limits)
        .to_pretty_json()
        .expect("the OpenAPI document serializes")
}

/// The document with the default limits, as pretty JSON (the committed `openapi.json`).
pub fn openapi_json() -> String {
    document_json(&Limits::default())
}

#[cfg(test)]
mod tests {
    /// Keeps the committed document in step with the types; `XDB_BLESS=1` rewrites it.
    #[test]
    fn committed_document_matches_the_types() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.json");
        let generated = super::openapi_json() + "\n";
        if std::env::var("XDB_BLESS").is_ok() {
            std::fs::write(path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "openapi.json is stale: run `XDB_BLESS=1 cargo test -p xdb-protocol`"
        );
    }

    #[test]
    fn document_names_every_service_path() {
        let doc = super::openapi_json();
        for path in [
            crate::paths::START,
            crate::paths::STOP,
            crate::paths::DESCRIBE,
            crate::paths::LIST,
            crate::paths::HISTORY,
            crate::paths::PUBLISH_TO_LOCAL_QUEUE,
            crate::paths::RPC,
            crate::paths::WAIT_FOR_COMPLETION,
            crate::paths::WORKER_WAIT_UNTIL,
            crate::paths::WORKER_EXECUTE,
            crate::paths::WORKER_RPC,
        ] {
            assert!(
                doc.contains(path),
                "{path} missing from the OpenAPI document"
            );
        }
    }
}
