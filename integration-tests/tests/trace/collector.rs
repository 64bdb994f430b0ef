//! An in-process OTLP/HTTP receiver: decodes the exported spans (protobuf) and keeps
//! them for assertions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;

/// One received span, ids in lowercase hex.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    pub kind: SpanKind,
    /// The string-valued attributes.
    pub attributes: HashMap<String, String>,
}

type Spans = Arc<Mutex<Vec<ReceivedSpan>>>;

pub struct Collector {
    spans: Spans,
    /// The base URL to export to (`/v1/traces` is appended by the exporter).
    pub endpoint: String,
}

impl Collector {
    /// Serves on a free port from its own thread and runtime, so it outlives the
    /// runtime of whichever test started it.
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the collector");
        listener.set_nonblocking(true).expect("non-blocking");
        let endpoint = format!("http://{}", listener.local_addr().expect("local address"));
        let spans = Spans::default();
        let app = Router::new()
            .route("/v1/traces", post(receive))
            .with_state(spans.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the collector's runtime");
            runtime.block_on(async move {
                let listener =
                    tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
                axum::serve(listener, app)
                    .await
                    .expect("the collector serves");
            });
        });
        Self { spans, endpoint }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans.lock().expect("never poisoned").clone()
    }
}

async fn receive(State(spans): State<Spans>, body: Bytes) -> impl IntoResponse {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, Vec::new()).into_response();
    };
    let received = request
        .resource_spans
        .into_iter()
        .flat_map(|resource| resource.scope_spans)
        .flat_map(|scope| scope.spans)
        .map(|span| ReceivedSpan {
            trace_id: hex(&span.trace_id),
            span_id: hex(&span.span_id),
            parent_span_id: hex(&span.parent_span_id),
            kind: SpanKind::try_from(span.kind).unwrap_or(SpanKind::Unspecified),
            attributes: span
                .attributes
                .into_iter()
                .filter_map(|attribute| match attribute.value?.value? {
                    Value::StringValue(value) => Some((attribute.key, value)),
                    _ => None,
                })
                .collect(),
            name: span.name,
        });
    spans.lock().expect("never poisoned").extend(received);
    (
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
        .into_response()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
