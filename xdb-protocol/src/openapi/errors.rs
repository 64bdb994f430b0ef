//! Every error response of the service and internal paths, from one table: which
//! sub-types each operation can answer. Each status gets a response whose schema admits
//! exactly those sub-types and whose description says what each means, so a client (or a
//! contract test) knows every error it can get and tells apart kinds sharing a status.

use std::collections::BTreeMap;

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, ResponseBuilder, Schema};

use crate::error::ErrorSubType::{self, *};
use crate::paths;

/// Every request can be malformed, too large, or meet an internal failure.
const EVERY_REQUEST: [ErrorSubType; 3] = [InvalidRequest, PayloadTooLarge, InternalError];

/// Every service request can lack a token, carry one without the path's role, meet a
/// service at its limit, or one that lost its database.
const EVERY_SERVICE_REQUEST: [ErrorSubType; 4] =
    [Unauthorized, Forbidden, Overloaded, DatabaseUnavailable];

/// The sub-types `path` can answer besides [`EVERY_REQUEST`] (and [`EVERY_SERVICE_REQUEST`]
/// on the service paths).
fn specific(path: &str) -> &'static [ErrorSubType] {
    match path {
        paths::START => &[ProcessAlreadyStarted, RequestIdConflict, AppDatabaseError],
        paths::STOP | paths::PUBLISH_TO_LOCAL_QUEUE => {
            &[ProcessNotFound, ProcessNotRunning, RequestIdConflict]
        }
        paths::DESCRIBE | paths::HISTORY | paths::WAIT_FOR_COMPLETION | paths::STATES => {
            &[ProcessNotFound]
        }
        paths::RETRY_NOW | paths::GIVE_UP | paths::PAUSE | paths::RESUME | paths::REPRIORITIZE => {
            &[
                ProcessNotFound,
                ProcessNotRunning,
                ControlNotApplicable,
                RequestIdConflict,
            ]
        }
        paths::RESET => &[ProcessNotFound, ControlNotApplicable, RequestIdConflict],
        paths::CONSOLE_ATTRIBUTES => &[ProcessNotFound, AppDatabaseError],
        paths::DEFINITIONS_REGISTER => &[DefinitionIncompatible, AppDatabaseError],
        paths::DEFINITIONS_DESCRIBE | paths::DEPLOYMENTS_MOVE => &[DefinitionNotFound],
        paths::DEPLOYMENTS_SET_CURRENT => &[DefinitionNotFound, DefinitionIncompatible],
        paths::BATCH_START => &[RequestIdConflict, AppDatabaseError],
        paths::BATCH_DESCRIBE | paths::BATCH_CANCEL => &[BatchNotFound],
        paths::SCHEDULE_CREATE => &[ScheduleAlreadyExists],
        paths::SCHEDULE_UPDATE
        | paths::SCHEDULE_PAUSE
        | paths::SCHEDULE_RESUME
        | paths::SCHEDULE_TRIGGER
        | paths::SCHEDULE_BACKFILL
        | paths::SCHEDULE_DELETE
        | paths::SCHEDULE_DESCRIBE => &[ScheduleNotFound],
        // Not signed with the cluster's internal secret.
        paths::INTERNAL_NOTIFY => &[Unauthorized],
        paths::RPC => &[
            ProcessNotFound,
            ProcessNotRunning,
            ProcessClosedDuringRpc,
            WorkerApiError,
            AppDatabaseError,
        ],
        _ => &[],
    }
}

/// The sub-types `path` can answer, or none for a path XDB does not serve.
pub(crate) fn sub_types_of(path: &str) -> Vec<ErrorSubType> {
    let is_service = paths::is_client_path(path);
    if !is_service && path != paths::INTERNAL_NOTIFY {
        return Vec::new();
    }
    let mut all: Vec<ErrorSubType> = EVERY_REQUEST.to_vec();
    if is_service {
        all.extend_from_slice(&EVERY_SERVICE_REQUEST);
    }
    all.extend_from_slice(specific(path));
    all.sort_by_key(|s| ErrorSubType::ALL.iter().position(|a| a == s));
    all
}

pub(super) fn apply(doc: &mut OpenApi) {
    describe_sub_types(doc);
    for (path, item) in doc.paths.paths.iter_mut() {
        let Some(operation) = item.post.as_mut() else {
            continue;
        };
        let mut by_status: BTreeMap<u16, Vec<ErrorSubType>> = BTreeMap::new();
        for sub_type in sub_types_of(path) {
            by_status
                .entry(sub_type.http_status())
                .or_default()
                .push(sub_type);
        }
        for (status, sub_types) in by_status {
            operation
                .responses
                .responses
                .insert(status.to_string(), RefOr::T(response(&sub_types)));
        }
    }
}

/// An error response admitting `sub_types` (all of one status).
fn response(sub_types: &[ErrorSubType]) -> utoipa::openapi::Response {
    let names: Vec<&str> = sub_types.iter().map(|s| s.as_str()).collect();
    let description = sub_types
        .iter()
        .map(|s| format!("`{}`: {}", s.as_str(), s.meaning()))
        .collect::<Vec<_>>()
        .join("\n\n");
    let these = ObjectBuilder::new().schema_type(Type::Object).property(
        "subType",
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(names)),
    );
    let schema = AllOfBuilder::new()
        .item(Ref::from_schema_name("ApiErrorResponse"))
        .item(these);
    let mut response = ResponseBuilder::new().description(description).content(
        "application/json",
        ContentBuilder::new().schema(Some(schema)).build(),
    );
    // As the service sends it: on every 503.
    if sub_types
        .iter()
        .any(|sub_type| sub_type.http_status() == 503)
    {
        response = response.header("Retry-After", retry_after());
    }
    response.build()
}

/// The header of every 503 answer: whole seconds, never an HTTP date.
fn retry_after() -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(0)),
        )
        .description(Some(
            "Seconds to wait before sending the request again (the service sends 1). \
             After `OVERLOADED` nothing was changed, so the same request can be sent again \
             as is; after `DATABASE_UNAVAILABLE` a write may have taken effect.",
        ))
        .build()
}

/// States the status ↔ sub-type table on the `ErrorSubType` schema.
fn describe_sub_types(doc: &mut OpenApi) {
    let Some(components) = doc.components.as_mut() else {
        return;
    };
    let Some(RefOr::T(Schema::Object(schema))) = components.schemas.get_mut("ErrorSubType") else {
        return;
    };
    let mut text = String::from(
        "The kind of an error; it fixes the HTTP status. Several kinds share 409, 424 and 503, \
         so branch on the kind. Clients should treat a kind they do not know by its \
         status.\n\n| subType | status | meaning |\n|---|---|---|\n",
    );
    for sub_type in ErrorSubType::ALL {
        text.push_str(&format!(
            "| `{}` | {} | {} |\n",
            sub_type.as_str(),
            sub_type.http_status(),
            sub_type.meaning()
        ));
    }
    schema.description = Some(text);
}
