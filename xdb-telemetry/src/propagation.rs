//! W3C trace context in and out of spans.

use std::collections::HashMap;

use http::header::{HeaderName, HeaderValue};
use http::HeaderMap;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The W3C trace-context header (and task-info key).
pub const TRACEPARENT: &str = "traceparent";

/// The `traceparent` naming `span`, or `None` when OpenTelemetry does not record it
/// (no exporter installed, or the span is filtered out).
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    let mut fields = HashMap::new();
    TraceContextPropagator::new().inject_context(&span.context(), &mut fields);
    fields.remove(TRACEPARENT)
}

/// Makes `span` a child of the remote span a `traceparent` value names; an invalid or
/// unsampled-garbage value is ignored, so a bad header never fails a request.
pub fn set_parent_from_traceparent(span: &tracing::Span, traceparent: &str) {
    let fields = HashMap::from([(TRACEPARENT.to_string(), traceparent.to_string())]);
    set_parent(span, &fields);
}

/// Makes `span` a child of the span named by `headers`' `traceparent`, if any.
pub fn set_parent_from_headers(span: &tracing::Span, headers: &HeaderMap) {
    set_parent(span, &HeaderExtractor(headers));
}

/// Adds `span`'s `traceparent` (and `tracestate`) to `headers`.
pub fn inject_headers(span: &tracing::Span, headers: &mut HeaderMap) {
    TraceContextPropagator::new().inject_context(&span.context(), &mut HeaderInjector(headers));
}

fn set_parent(span: &tracing::Span, carrier: &dyn Extractor) {
    let context = TraceContextPropagator::new().extract(carrier);
    if context.span().span_context().is_valid() {
        // Fails only for a span already started elsewhere; ours are fresh.
        let _ = span.set_parent(context);
    }
}

struct HeaderExtractor<'a>(&'a HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(HeaderName::as_str).collect()
    }
}

struct HeaderInjector<'a>(&'a mut HeaderMap);

impl Injector for HeaderInjector<'_> {
    /// An empty value (the propagator's `tracestate` when there is none) is left out, as
    /// W3C trace context asks, instead of reaching workers as an empty header.
    fn set(&mut self, key: &str, value: String) {
        if value.is_empty() {
            return;
        }
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_header_values_are_left_out() {
        let mut headers = HeaderMap::new();
        let mut injector = HeaderInjector(&mut headers);
        injector.set("tracestate", String::new());
        injector.set(
            TRACEPARENT,
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
        );
        assert!(!headers.contains_key("tracestate"));
        assert!(headers.contains_key(TRACEPARENT));
    }

    #[test]
    fn without_an_exporter_nothing_is_propagated() {
        let span = tracing::info_span!("untraced");
        assert_eq!(traceparent(&span), None);
        let mut headers = HeaderMap::new();
        inject_headers(&span, &mut headers);
        assert!(headers.is_empty());
    }
}
