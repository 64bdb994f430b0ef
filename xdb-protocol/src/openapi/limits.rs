//! States the request rules in the document: every object a client sends is closed
//! (`additionalProperties: false`), and ids, URLs and page sizes carry the limits in force.
//! The API service validates request bodies against this document, so what it says is
//! what is enforced.

use std::collections::BTreeSet;

use utoipa::openapi::schema::{
    AdditionalProperties, ArrayItems, KnownFormat, Schema, SchemaFormat,
};
use utoipa::openapi::{OpenApi, RefOr};

use crate::limits::{worker, Limits, ID_CHARS_CEILING};

/// No control characters (Unicode `Cc`), as `xdb_engine::validation::check_id` demands.
pub const NO_CONTROL_CHARACTERS: &str = "^[^\\x00-\\x1f\\x7f-\\x9f]*$";
/// An http(s) URL without whitespace or control characters, or nothing (a start that
/// leaves its worker to the registered deployment).
pub const HTTP_URL: &str = "^(https?://[^\\s\\x00-\\x1f\\x7f-\\x9f]*)?$";
/// A SQL identifier: letters, digits and `_`, not starting with a digit.
pub const SQL_IDENTIFIER: &str = "^[A-Za-z_][A-Za-z0-9_]*$";
/// A table name, optionally schema-qualified.
pub const SQL_TABLE_NAME: &str = "^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)?$";
/// A request id: letters, digits and `-_.:` (see *Idempotent requests*).
pub const REQUEST_ID: &str = "^[A-Za-z0-9._:-]+$";
/// Longest request id.
pub const MAX_REQUEST_ID_CHARS: usize = 200;
/// Longest SQL identifier part; a table name may be `schema.table`.
const IDENTIFIER_CHARS: usize = 63;

/// What a string property holds, by its name in a request schema.
enum Bound {
    /// An id: 1 to `max` characters, no control characters.
    Id(usize),
    /// Text bounded in length only.
    Text(usize),
    /// Text of this form, bounded in length.
    Form(usize, &'static str),
}

fn bound_of(property: &str, limits: &Limits) -> Option<Bound> {
    Some(match property {
        "processId"
        | "processType"
        | "startStateId"
        | "stateFailureProceedStateId"
        | "queueName"
        | "dedupId"
        | "rpcName"
        | "key"
        | "keys"
        | "encoding" => Bound::Id(limits.max_id_chars),
        // Its firings' process ids append the nominal time.
        "scheduleId" => Bound::Id(
            limits
                .max_id_chars
                .saturating_sub(crate::schedule::FIRING_ID_SUFFIX_CHARS)
                .max(1),
        ),
        // Issued by the service (and by XDB's own instances), not chosen by clients.
        "processExecutionId" | "nextPageToken" | "closedProcessExecutionIds" | "batchId" => {
            Bound::Text(ID_CHARS_CEILING)
        }
        "requestId" => Bound::Form(MAX_REQUEST_ID_CHARS, REQUEST_ID),
        "workerUrl" => Bound::Form(limits.max_worker_url_chars, HTTP_URL),
        "column" | "columns" => Bound::Form(IDENTIFIER_CHARS, SQL_IDENTIFIER),
        "tableName" => Bound::Form(2 * IDENTIFIER_CHARS + 1, SQL_TABLE_NAME),
        _ => return None,
    })
}

/// Applies the request rules with `limits` and `max_wait_seconds` to `doc`, and the
/// bounds the engine holds worker answers to.
pub(super) fn apply(doc: &mut OpenApi, limits: &Limits, max_wait_seconds: u32) {
    close_requests(doc, limits);
    let Some(components) = doc.components.as_mut() else {
        return;
    };
    let schemas = &mut components.schemas;
    set_maximum(
        schemas,
        "ProcessExecutionWaitForCompletionRequest",
        "timeoutSeconds",
        max_wait_seconds,
    );
    set_maximum(
        schemas,
        "TimerCommand",
        "delayInSeconds",
        worker::MAX_TIMER_SECONDS,
    );
    set_maximum(
        schemas,
        "LocalQueueCommand",
        "count",
        worker::MAX_QUEUE_COMMAND_COUNT,
    );
    set_max_items(
        schemas,
        "StateDecision",
        "nextStates",
        worker::MAX_NEXT_STATES,
    );
    set_max_items(
        schemas,
        "ProcessRpcWorkerResponse",
        "appendNextStates",
        worker::MAX_NEXT_STATES,
    );
}

type Schemas = std::collections::BTreeMap<String, RefOr<Schema>>;

fn property<'s>(schemas: &'s mut Schemas, schema: &str, name: &str) -> &'s mut RefOr<Schema> {
    match schemas.get_mut(schema) {
        Some(RefOr::T(Schema::Object(object))) => object
            .properties
            .get_mut(name)
            .unwrap_or_else(|| panic!("{schema} has no property {name}")),
        _ => panic!("no object schema {schema}"),
    }
}

fn set_maximum(schemas: &mut Schemas, schema: &str, name: &str, maximum: u32) {
    match property(schemas, schema, name) {
        RefOr::T(Schema::Object(number)) => number.maximum = Some(maximum.into()),
        _ => panic!("{schema}.{name} is not a number"),
    }
}

fn set_max_items(schemas: &mut Schemas, schema: &str, name: &str, max_items: usize) {
    match property(schemas, schema, name) {
        RefOr::T(Schema::Array(array)) => array.max_items = Some(max_items),
        _ => panic!("{schema}.{name} is not an array"),
    }
}

/// Closes every object a request can contain and bounds its ids, URLs and numbers.
fn close_requests(doc: &mut OpenApi, limits: &Limits) {
    let mut pending = Vec::new();
    for (path, item) in &doc.paths.paths {
        let is_request_to_xdb =
            crate::paths::is_client_path(path) || path.starts_with("/api/v1/xdb/internal/");
        let body = item.post.as_ref().and_then(|op| op.request_body.as_ref());
        if let (true, Some(body)) = (is_request_to_xdb, body) {
            for content in body.content.values() {
                if let Some(schema) = &content.schema {
                    collect_refs(schema, &mut pending);
                }
            }
        }
    }
    let Some(components) = doc.components.as_mut() else {
        return;
    };
    // Every schema a request can contain, found by following references.
    let mut closed = BTreeSet::new();
    while let Some(name) = pending.pop() {
        if closed.insert(name.clone()) {
            if let Some(schema) = components.schemas.get(&name) {
                collect_refs(schema, &mut pending);
            }
        }
    }
    for name in &closed {
        let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(name) else {
            continue;
        };
        if object.properties.is_empty() {
            continue;
        }
        object.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
        for (property, schema) in object.properties.iter_mut() {
            if property == "pageSize" {
                if let RefOr::T(Schema::Object(number)) = schema {
                    number.minimum = Some(1u32.into());
                    number.maximum = Some(limits.max_page_size.into());
                }
                continue;
            }
            // Counts and seconds are `u32` in the types but `int32` in the document:
            // state the int32 range, which the engine's `i32` columns need anyway.
            if let RefOr::T(Schema::Object(number)) = schema {
                if number.format == Some(SchemaFormat::KnownFormat(KnownFormat::Int32))
                    && number.maximum.is_none()
                {
                    number.maximum = Some(i32::MAX.into());
                }
            }
            let Some(bound) = bound_of(property, limits) else {
                continue;
            };
            let string = match schema {
                RefOr::T(Schema::Object(string)) => string,
                RefOr::T(Schema::Array(array)) => match &mut array.items {
                    ArrayItems::RefOrSchema(items) => match items.as_mut() {
                        RefOr::T(Schema::Object(string)) => string,
                        _ => continue,
                    },
                    _ => continue,
                },
                _ => continue,
            };
            match bound {
                Bound::Id(max) => {
                    string.min_length = Some(1);
                    string.max_length = Some(max);
                    string.pattern = Some(NO_CONTROL_CHARACTERS.into());
                }
                Bound::Text(max) => string.max_length = Some(max),
                Bound::Form(max, pattern) => {
                    string.max_length = Some(max);
                    string.pattern = Some(pattern.into());
                }
            }
        }
    }
}

/// Pushes the component names `schema` refers to, directly or nested.
fn collect_refs(schema: &RefOr<Schema>, names: &mut Vec<String>) {
    match schema {
        RefOr::Ref(reference) => {
            if let Some(name) = reference.ref_location.rsplit('/').next() {
                names.push(name.to_string());
            }
        }
        RefOr::T(Schema::Object(object)) => {
            for property in object.properties.values() {
                collect_refs(property, names);
            }
        }
        RefOr::T(Schema::Array(array)) => {
            if let ArrayItems::RefOrSchema(items) = &array.items {
                collect_refs(items, names);
            }
        }
        RefOr::T(Schema::OneOf(one_of)) => one_of.items.iter().for_each(|s| collect_refs(s, names)),
        RefOr::T(Schema::AllOf(all_of)) => all_of.items.iter().for_each(|s| collect_refs(s, names)),
        RefOr::T(Schema::AnyOf(any_of)) => any_of.items.iter().for_each(|s| collect_refs(s, names)),
        RefOr::T(_) => {}
    }
}
