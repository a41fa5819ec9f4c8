//! The runtime's `tracing` spans, seen by a capturing subscriber: a `GET` stream runs, for as
//! long as it stays open, inside a span naming its session, and a `DELETE` logs inside one too.
//! The subscriber is process-wide, so this file holds the only tests that install one.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::{Endpoint, SESSION_HEADER, request, serve_protocol};
use protocols_runtime::http::HttpConfig;
use protocols_runtime::quote;
use protocols_runtime::quote::MAX_QUOTED_BYTES;
use protocols_testkit::SseReader;
use reqwest::StatusCode;
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// A span's name and the fields recorded on it so far.
#[derive(Debug, Clone)]
struct SpanSeen {
    name: &'static str,
    fields: BTreeMap<&'static str, String>,
}

/// One event: its message, its other fields and the spans it ran in, innermost first.
#[derive(Debug, Clone)]
struct EventSeen {
    message: String,
    fields: BTreeMap<&'static str, String>,
    spans: Vec<SpanSeen>,
}

impl EventSeen {
    /// Whether the event ran inside a span called `name` whose `session` field names
    /// `session` (quoted, as the runtime logs a value the caller sent).
    fn inside(&self, name: &str, session: &str) -> bool {
        let quoted = quote(session).to_string();
        self.spans
            .iter()
            .any(|span| span.name == name && span.fields.get("session") == Some(&quoted))
    }
}

#[derive(Default)]
struct Fields(BTreeMap<&'static str, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name(), value.to_owned());
    }
}

/// What a span's creation is recorded as.
const NEW_SPAN: &str = "<new span>";

/// Records every event with the spans around it.
struct Capture(Arc<Mutex<Vec<EventSeen>>>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, cx: Context<'_, S>) {
        let mut fields = Fields::default();
        attributes.record(&mut fields);
        // Kept as a pseudo-event too, so a span's first fields can be checked.
        self.0.lock().unwrap().push(EventSeen {
            message: NEW_SPAN.to_owned(),
            fields: BTreeMap::new(),
            spans: vec![SpanSeen {
                name: attributes.metadata().name(),
                fields: fields.0.clone(),
            }],
        });
        if let Some(span) = cx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, cx: Context<'_, S>) {
        if let Some(span) = cx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<Fields>()
        {
            values.record(fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, cx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let spans = cx
            .event_scope(event)
            .into_iter()
            .flatten()
            .map(|span| SpanSeen {
                name: span.name(),
                fields: span
                    .extensions()
                    .get::<Fields>()
                    .map(|fields| fields.0.clone())
                    .unwrap_or_default(),
            })
            .collect();
        self.0.lock().unwrap().push(EventSeen {
            message: fields.0.remove("message").unwrap_or_default(),
            fields: fields.0,
            spans,
        });
    }
}

/// The process-wide capture, installed once.
fn captured() -> Arc<Mutex<Vec<EventSeen>>> {
    static CAPTURED: OnceLock<Arc<Mutex<Vec<EventSeen>>>> = OnceLock::new();
    Arc::clone(CAPTURED.get_or_init(|| {
        let events = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Capture(Arc::clone(&events)));
        tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber");
        events
    }))
}

/// Waits until an event matching `wanted` has been captured.
async fn wait_for(events: &Mutex<Vec<EventSeen>>, wanted: impl Fn(&EventSeen) -> bool) -> bool {
    for _ in 0..500 {
        if events.lock().unwrap().iter().any(&wanted) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn a_get_stream_runs_inside_a_span_naming_its_session_until_it_ends() {
    let events = captured();
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let session = rpc.open().await;
    let stream = rpc.event_stream(&session, None).await;
    assert_eq!(stream.status(), StatusCode::OK);
    let mut reader = SseReader::new(stream);
    let later = rpc
        .post(
            Some(&session),
            "application/json",
            &request(1, "notify-later", json!({})),
        )
        .await;
    assert_eq!(later.status(), StatusCode::OK);
    let (_, message) = reader
        .next_json()
        .await
        .expect("the session stream's message");
    assert_eq!(message["method"], "later");
    let deleted = rpc
        .client
        .delete(&rpc.url)
        .header(SESSION_HEADER, &session)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::OK);
    assert!(
        reader.next_json().await.is_none(),
        "the stream ends with its session"
    );

    // The body's events are logged while it is polled, long after the GET handler returned.
    for message in ["stream opened", "event sent", "stream ended"] {
        assert!(
            wait_for(&events, |event| event.message == message
                && event.inside("get", &session))
            .await,
            "`{message}` inside span `get` naming session {session}: {:#?}",
            events.lock().unwrap()
        );
    }
    assert!(
        wait_for(&events, |event| event.message
            == "session ended by the client"
            && event.inside("delete", &session))
        .await,
        "the DELETE logs inside a span naming the session"
    );
}

const PANIC_LOGGED: &str = "a handler panicked; its request is answered with an internal error";

#[tokio::test]
async fn a_handler_panic_is_logged_once_with_its_location_inside_the_requests_span() {
    let events = captured();
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let answer = rpc
        .post(
            None,
            "application/json",
            &request(71, "stateless/panic", json!({})),
        )
        .await;
    assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let logged = |event: &EventSeen| {
        event.message == PANIC_LOGGED
            && event.spans.iter().any(|span| {
                span.name == "request" && span.fields.get("id").is_some_and(|id| id == "`71`")
            })
    };
    assert!(
        wait_for(&events, logged).await,
        "{:#?}",
        events.lock().unwrap()
    );
    let seen: Vec<EventSeen> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|event| logged(event))
        .cloned()
        .collect();
    assert_eq!(seen.len(), 1, "logged once: {seen:#?}");
    let location = &seen[0].fields["location"];
    assert!(
        location.contains("tests/common/mod.rs:"),
        "the panic's own location: {location}"
    );
    assert!(seen[0].fields["panic"].contains("panicked on purpose"));
}

#[tokio::test]
async fn a_long_method_name_and_id_are_logged_quoted_and_bounded() {
    let events = captured();
    let server = serve_protocol(HttpConfig::default()).await;
    let rpc = Endpoint::of(&server);
    let method = format!("stateless/{}\n{}", "m".repeat(45), "n".repeat(44));
    assert_eq!(method.len(), 100);
    let id = format!("id-{}", "i".repeat(97));
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method});
    let answer = rpc.post(None, "application/json", &body).await;
    let answered: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(answered["error"]["code"], -32601);
    let span = |event: &EventSeen| {
        event.message == NEW_SPAN
            && event.spans.first().is_some_and(|span| {
                span.name == "request"
                    && span
                        .fields
                        .get("method")
                        .is_some_and(|method| method.starts_with("`stateless/mmm"))
            })
    };
    assert!(wait_for(&events, span).await);
    let seen = events
        .lock()
        .unwrap()
        .iter()
        .find(|event| span(event))
        .cloned()
        .unwrap();
    let fields = &seen.spans[0].fields;
    for name in ["method", "id"] {
        let logged = &fields[name];
        assert!(logged.len() <= MAX_QUOTED_BYTES + 2, "{name}: {logged}");
        assert!(logged.ends_with("…`"), "{name} is cut: {logged}");
        assert!(
            !logged.contains('\n'),
            "{name} has no raw line break: {logged}"
        );
    }
}
