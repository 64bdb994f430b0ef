//! The history event as one schema per event type: `HistoryEvent` is a `oneOf` of
//! `<Type>Event` schemas, each fixing `eventType` and the schema of its `details`, with a
//! discriminator on `eventType`.

use serde_json::json;
use utoipa::openapi::schema::{Discriminator, OneOfBuilder};
use utoipa::openapi::{OpenApi, Ref, RefOr, Schema};

use super::from_json;
use crate::HistoryEventType;

/// The component name of the event schema of `event_type`: `PROCESS_STARTED` →
/// `ProcessStartedEvent`.
pub(crate) fn event_schema(event_type: HistoryEventType) -> String {
    let mut name = String::new();
    for word in event_type.as_str().split('_') {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            name.push(first);
            name.extend(chars.map(|c| c.to_ascii_lowercase()));
        }
    }
    name + "Event"
}

pub(super) fn apply(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    let mut branches = Vec::new();
    let mut mapping = Vec::new();
    for event_type in HistoryEventType::ALL {
        let name = event_schema(event_type);
        let reference = format!("#/components/schemas/{name}");
        let schema: Schema = from_json(json!({
            "type": "object",
            "description": format!("`{}`: {}", event_type.as_str(), event_type.meaning()),
            "required": ["eventId", "eventTimestampMs", "eventType", "details"],
            "properties": {
                "eventId": {"type": "integer", "format": "int64",
                            "description": "Increasing within the execution."},
                "eventTimestampMs": {"type": "integer", "format": "int64",
                                     "description": "When it happened, ms since the epoch."},
                "eventType": {"type": "string", "enum": [event_type.as_str()]},
                "details": {"$ref": format!(
                    "#/components/schemas/{}", event_type.details_schema()
                )},
            }
        }));
        components.schemas.insert(name.clone(), RefOr::T(schema));
        branches.push(name.clone());
        mapping.push((event_type.as_str(), reference));
    }
    let event = OneOfBuilder::new()
        .description(Some(
            "One event of an execution's history; `eventType` (see `HistoryEventType`) says \
             which, and fixes the shape of `details`.",
        ))
        .discriminator(Some(Discriminator::with_mapping("eventType", mapping)));
    let event = branches
        .into_iter()
        .fold(event, |event, name| event.item(Ref::from_schema_name(name)));
    components
        .schemas
        .insert("HistoryEvent".to_string(), RefOr::T(event.into()));
    if let Some(RefOr::T(Schema::Object(types))) = components.schemas.get_mut("HistoryEventType") {
        let mut text = String::from("The kind of a history event.\n\n");
        for event_type in HistoryEventType::ALL {
            text.push_str(&format!(
                "- `{}`: {} `details`: `{}`.\n",
                event_type.as_str(),
                event_type.meaning(),
                event_type.details_schema()
            ));
        }
        types.description = Some(text);
    }
}
