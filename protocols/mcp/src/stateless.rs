//! The checks a request passes before it runs, per revision: the `MCP-Protocol-Version` header
//! (2025-06-18 on; a value we do not serve is refused with 400, an absent one means 2025-03-26)
//! and, for a stateless (2026-07-28) request, in the order the revision gives them: the header
//! must be there, the `_meta` must hold its required fields (-32602), the header must name the
//! `_meta` version (-32020) and that version must be served (-32022), and `Mcp-Method` and
//! `Mcp-Name` must agree with the body (-32020). A request is stateless when its `_meta` or its
//! header names a version that is not a session revision; a `_meta` naming one (2025-11-25, say)
//! is served as that revision is, in a session. The one read of a request's params those checks
//! use (`RequestHead`) also says which `_meta` the handler is not given: one holding nothing but
//! the keys the server itself reads.

use std::borrow::Cow;
use std::marker::PhantomData;

use http::{HeaderMap, HeaderName, StatusCode};
use protocols_runtime::jsonrpc::member;
use protocols_runtime::quote::quote;
use protocols_runtime::{ErrorObject, Message, Rejection, Request};
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::errors::{self, codes};
use crate::generated::v2026_07_28::methods;
use crate::param_headers;
use crate::revision::Revision;
use crate::tasks::extension_methods as extension;

// Their home is `conventions`, shared with the client; named here too, where they always were.
pub use crate::conventions::{
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION,
    METHOD_HEADER, NAME_HEADER, SESSION_HEADER, VERSION_HEADER,
};

/// A request's params as JSON (`Null` when absent or unreadable).
pub(crate) fn params_of(request: &Request) -> Value {
    request
        .params
        .as_deref()
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or(Value::Null)
}

/// What the server reads from a request's params before the handler sees them: the `_meta`
/// fields of a stateless request and the target `Mcp-Name` must repeat. Read in one pass that
/// borrows from the body and skips everything else, so the checks each request passes cost no
/// tree of JSON values. A field of the wrong JSON type reads as absent, as it would through
/// `Value::get(..).as_str()`; a repeated key keeps its last value, as a JSON map does.
#[derive(Debug, Default)]
pub(crate) struct RequestHead<'a> {
    pub(crate) meta: MetaHead<'a>,
    /// `params.name` (`tools/call`, `prompts/get`).
    pub(crate) name: Option<Cow<'a, str>>,
    /// `params.uri` (`resources/read`).
    pub(crate) uri: Option<Cow<'a, str>>,
    /// `params.taskId` (the tasks extension's `tasks/get`, `update`, `cancel`).
    pub(crate) task_id: Option<Cow<'a, str>>,
    /// `params.requestState` (2026-07-28 retries): what the previous round sealed.
    pub(crate) request_state: Option<Cow<'a, str>>,
    /// `params.inputResponses` (2026-07-28 retries), unread until a handler needs it.
    pub(crate) input_responses: Option<&'a RawValue>,
    /// Whether the params hold a `_meta` key.
    meta_seen: bool,
}

/// The `_meta` keys of a request the server itself reads; others are left for the handler.
#[derive(Debug, Default)]
pub(crate) struct MetaHead<'a> {
    pub(crate) protocol_version: Option<Cow<'a, str>>,
    pub(crate) log_level: Option<Cow<'a, str>>,
    pub(crate) client_capabilities: Option<&'a RawValue>,
    pub(crate) client_info: Option<&'a RawValue>,
    pub(crate) progress_token: Option<&'a RawValue>,
    /// Whether it holds a key besides the four the server reads for the stateless revision
    /// (`progressToken` among them), i.e. something the handler may want.
    for_handler: bool,
}

impl<'a> RequestHead<'a> {
    /// The head of `request`'s params (all absent when it has none or they are not an object).
    pub(crate) fn of(request: &'a Request) -> Self {
        request
            .params
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default()
    }

    /// `params` (the text this head was read from) as the handler decodes them: a stateless request's without a `_meta` that holds
    /// nothing but what the server itself read for that revision (version, capabilities, client, log
    /// level), so a stateless call reaches the handler as the same call in a session would and
    /// its typed params are not built from keys no handler reads. A `_meta` the server cannot
    /// cut cleanly (a repeated or escaped key, see [`member::find`]) is passed as sent.
    pub(crate) fn params_for_handler(&self, params: &'a RawValue) -> Cow<'a, RawValue> {
        let cuttable = self.version().is_some() && !self.meta.for_handler;
        cuttable
            .then(|| member::find(params, "_meta"))
            .flatten()
            .and_then(|meta| meta.object_without())
            .map_or(Cow::Borrowed(params), Cow::Owned)
    }

    /// The protocol version the request names in its `_meta`, if it names one.
    pub(crate) fn version(&self) -> Option<&str> {
        self.meta.protocol_version.as_deref()
    }

    /// What `Mcp-Name` must repeat for methods that address one thing (and what a sealed
    /// request state is bound to).
    pub(crate) fn target(&self, method: &str) -> Option<&str> {
        match method {
            methods::TOOLS_CALL | methods::PROMPTS_GET => self.name.as_deref(),
            methods::RESOURCES_READ => self.uri.as_deref(),
            extension::TASKS_GET | extension::TASKS_UPDATE | extension::TASKS_CANCEL => {
                self.task_id.as_deref()
            }
            _ => None,
        }
    }

    /// Whether the request names, in its `_meta`, a version that is not a session revision
    /// (the stateless one, or one unknown here).
    pub(crate) fn names_stateless_version(&self) -> bool {
        self.version().is_some_and(is_stateless_version)
    }

    /// The first field a stateless request's `_meta` must hold and does not (`_meta` itself
    /// when it has none): a malformed request, invalid params.
    pub(crate) fn missing_meta_field(&self) -> Option<&'static str> {
        if !self.meta_seen {
            return Some("_meta");
        }
        if self.version().is_none() {
            return Some(META_PROTOCOL_VERSION);
        }
        let is_object = |raw: Option<&RawValue>| raw.is_some_and(|raw| raw.get().starts_with('{'));
        (!is_object(self.meta.client_capabilities)).then_some(META_CLIENT_CAPABILITIES)
    }
}

/// A JSON value read as a string when it is one (borrowed when it holds no escapes) and as
/// nothing otherwise.
struct StringField<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for StringField<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StringFieldVisitor)
    }
}

struct StringFieldVisitor;

impl<'de> Visitor<'de> for StringFieldVisitor {
    type Value = StringField<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(StringField(Some(Cow::Borrowed(text))))
    }

    fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
        Ok(StringField(Some(Cow::Owned(text.to_owned()))))
    }

    fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
        Ok(StringField(Some(Cow::Owned(text))))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(StringField(None))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(StringField(None))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(StringField(None))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(StringField(None))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(StringField(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq).map(|()| StringField(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map).map(|()| StringField(None))
    }
}

fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// A type read from the entries of a JSON object, one key at a time; anything other than an
/// object reads as its default.
trait ObjectFields<'de>: Default {
    /// Reads the value of `key` (the map is positioned at it) into `self`.
    fn read<A: MapAccess<'de>>(&mut self, key: &Cow<'de, str>, map: &mut A)
    -> Result<(), A::Error>;
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: ObjectFields<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut fields = T::default();
        while let Some(StringField(key)) = map.next_key::<StringField<'de>>()? {
            fields.read(&key.unwrap_or_default(), &mut map)?;
        }
        Ok(fields)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        skip_seq(seq).map(|()| T::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<T, E> {
        Ok(T::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok(T::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<T, E> {
        Ok(T::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<T, E> {
        Ok(T::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok(T::default())
    }

    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::default())
    }
}

fn string_field<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Cow<'de, str>>, A::Error> {
    map.next_value::<StringField<'de>>().map(|field| field.0)
}

impl<'de> ObjectFields<'de> for RequestHead<'de> {
    fn read<A: MapAccess<'de>>(
        &mut self,
        key: &Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &**key {
            "_meta" => {
                self.meta = map.next_value()?;
                self.meta_seen = true;
            }
            "name" => self.name = string_field(map)?,
            "uri" => self.uri = string_field(map)?,
            "taskId" => self.task_id = string_field(map)?,
            "requestState" => self.request_state = string_field(map)?,
            "inputResponses" => self.input_responses = Some(map.next_value()?),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl<'de> ObjectFields<'de> for MetaHead<'de> {
    fn read<A: MapAccess<'de>>(
        &mut self,
        key: &Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        match &**key {
            META_PROTOCOL_VERSION => self.protocol_version = string_field(map)?,
            META_LOG_LEVEL => self.log_level = string_field(map)?,
            META_CLIENT_CAPABILITIES => self.client_capabilities = Some(map.next_value()?),
            META_CLIENT_INFO => self.client_info = Some(map.next_value()?),
            "progressToken" => {
                self.progress_token = Some(map.next_value()?);
                self.for_handler = true;
            }
            _ => {
                map.next_value::<IgnoredAny>()?;
                self.for_handler = true;
            }
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for RequestHead<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ObjectVisitor(PhantomData))
    }
}

impl<'de> Deserialize<'de> for MetaHead<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ObjectVisitor(PhantomData))
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// Whether `version` is not a session revision: the stateless one, or one unknown here (which
/// only a stateless request would name in its `_meta`).
fn is_stateless_version(version: &str) -> bool {
    !matches!(version.parse::<Revision>(), Ok(revision) if revision.has_initialize())
}

/// Whether a version header's value says the request is stateless.
pub(crate) fn names_stateless_header(version: Option<&str>) -> bool {
    version.is_some_and(is_stateless_version)
}

/// The revision the version header names: `Ok(None)` when absent, an error when not served.
pub(crate) fn header_revision(headers: &HeaderMap) -> Result<Option<Revision>, String> {
    header(headers, &VERSION_HEADER)
        .map(|text| text.parse::<Revision>().map_err(|_| text.to_owned()))
        .transpose()
}

/// Whether the request stands alone under the stateless revision: its header names a version
/// that is not a session revision, its method exists only there, or its `_meta` names such a
/// version. The header and the method are consulted before the params, so a request whose
/// header already says so is not read.
pub(crate) fn is_stateless(request: &Request, headers: &HeaderMap) -> bool {
    names_stateless_header(header(headers, &VERSION_HEADER))
        || request.method == methods::SERVER_DISCOVER
        || RequestHead::of(request).names_stateless_version()
}

fn bad_request(error: ErrorObject) -> Rejection {
    Rejection::new(StatusCode::BAD_REQUEST, error)
}

/// `-32022`, listing what is served and repeating what was asked (as the quoting rule allows).
pub(crate) fn unsupported_version(requested: &str) -> ErrorObject {
    let repeated =
        errors::verbatim(requested).unwrap_or_else(|| Value::from(quote(requested).to_string()));
    ErrorObject::new(
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        "unsupported protocol version",
    )
    .with_data(json!({ "requested": repeated, "supported": Revision::supported() }))
}

/// `-32602` for a stateless request whose `_meta` lacks `field`.
pub(crate) fn missing_meta(field: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!(
        "a stateless request must carry {field} in its _meta"
    ))
}

fn mismatch(message: &'static str) -> Rejection {
    bad_request(ErrorObject::new(codes::HEADER_MISMATCH, message))
}

/// Checks every request of a body against the headers it came with.
pub(crate) fn admit(messages: &[Message], headers: &HeaderMap) -> Result<(), Rejection> {
    let header_revision = header_revision(headers);
    let mut stateless = false;
    for message in messages {
        let Message::Request(request) = message else {
            continue;
        };
        let head = RequestHead::of(request);
        let by_header = names_stateless_header(header(headers, &VERSION_HEADER));
        if by_header || head.names_stateless_version() || request.method == methods::SERVER_DISCOVER
        {
            admit_stateless(request, &head, headers)?;
            stateless = true;
        }
    }
    match header_revision {
        Err(requested) if !stateless => Err(bad_request(unsupported_version(&requested))),
        _ => Ok(()),
    }
}

/// The stateless checks, in the order 2026-07-28 gives them.
fn admit_stateless(
    request: &Request,
    head: &RequestHead<'_>,
    headers: &HeaderMap,
) -> Result<(), Rejection> {
    let Some(named) = header(headers, &VERSION_HEADER) else {
        return Err(mismatch("MCP-Protocol-Version is required"));
    };
    if let Some(field) = head.missing_meta_field() {
        return Err(bad_request(missing_meta(field)));
    }
    let version = head.version().unwrap_or_default();
    if named != version {
        return Err(mismatch(
            "MCP-Protocol-Version disagrees with the request's _meta",
        ));
    }
    match version.parse::<Revision>() {
        Ok(revision) if revision.is_stateless() => {}
        _ => return Err(bad_request(unsupported_version(version))),
    }
    match header(headers, &METHOD_HEADER) {
        Some(method) if method == request.method => {}
        Some(_) => return Err(mismatch("Mcp-Method disagrees with the request's method")),
        None => return Err(mismatch("Mcp-Method is required")),
    }
    let Some(target) = head.target(&request.method) else {
        return Ok(());
    };
    let mut names = headers.get_all(&NAME_HEADER).iter();
    match (names.next().map(param_headers::decode_value), names.next()) {
        (Some(Some(name)), None) if name == target => Ok(()),
        (None, _) => Err(mismatch("Mcp-Name is required for this method")),
        (Some(_), Some(_)) => Err(mismatch("Mcp-Name is repeated")),
        (Some(_), None) => Err(mismatch("Mcp-Name disagrees with the request's target")),
    }
}

/// The head read and the checks before a request runs, for the fuzz target in `fuzz/`. Not
/// part of the API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    use http::HeaderMap;
    use protocols_runtime::{Message, Rejection, Request};

    /// What [`super::RequestHead`] read from a request's params, owned.
    #[derive(Debug)]
    pub struct Head {
        pub protocol_version: Option<String>,
        pub log_level: Option<String>,
        pub client_capabilities: Option<String>,
        pub client_info: Option<String>,
        pub progress_token: Option<String>,
        pub name: Option<String>,
        pub uri: Option<String>,
        pub input_responses: Option<String>,
        /// The params as the handler is given them (`None` when the request has none).
        pub handler_params: Option<String>,
    }

    /// Reads `request`'s head as the server does before running it.
    pub fn read_head(request: &Request) -> Head {
        let head = super::RequestHead::of(request);
        let raw = |text: Option<&serde_json::value::RawValue>| text.map(|raw| raw.get().to_owned());
        Head {
            protocol_version: head.meta.protocol_version.as_deref().map(str::to_owned),
            log_level: head.meta.log_level.as_deref().map(str::to_owned),
            client_capabilities: raw(head.meta.client_capabilities),
            client_info: raw(head.meta.client_info),
            progress_token: raw(head.meta.progress_token),
            name: head.name.as_deref().map(str::to_owned),
            uri: head.uri.as_deref().map(str::to_owned),
            input_responses: raw(head.input_responses),
            handler_params: request
                .params
                .as_deref()
                .map(|params| head.params_for_handler(params).get().to_owned()),
        }
    }

    /// The checks every request of a body passes against its headers.
    pub fn admit(messages: &[Message], headers: &HeaderMap) -> Result<(), Rejection> {
        super::admit(messages, headers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use protocols_runtime::RequestId;
    use protocols_runtime::jsonrpc::to_raw;

    fn call(name: &str, version: &str) -> Message {
        let params = json!({"name": name, "_meta": {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: {}}});
        Message::Request(Request {
            id: RequestId::Number(1),
            method: "tools/call".to_owned(),
            params: to_raw(&params).ok(),
        })
    }

    fn headers(pairs: &[(&HeaderName, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert((*name).clone(), HeaderValue::from_static(value));
        }
        map
    }

    fn code(outcome: Result<(), Rejection>) -> Option<i64> {
        outcome.err().map(|rejection| rejection.error().code)
    }

    fn stateless_headers(pairs: &[(&HeaderName, &'static str)]) -> HeaderMap {
        let mut map = headers(pairs);
        map.entry(VERSION_HEADER)
            .or_insert(HeaderValue::from_static("2026-07-28"));
        map
    }

    fn request_with(method: &str, params: Value) -> Message {
        Message::Request(Request {
            id: RequestId::Number(1),
            method: method.to_owned(),
            params: to_raw(&params).ok(),
        })
    }

    fn rejected(outcome: Result<(), Rejection>) -> Option<(StatusCode, i64)> {
        outcome
            .err()
            .map(|rejection| (rejection.status(), rejection.error().code))
    }

    #[test]
    fn agreeing_headers_are_admitted() {
        let headers = stateless_headers(&[(&METHOD_HEADER, "tools/call"), (&NAME_HEADER, "echo")]);
        assert_eq!(code(admit(&[call("echo", "2026-07-28")], &headers)), None);
    }

    #[test]
    fn a_name_header_naming_another_tool_is_a_header_mismatch() {
        let headers = stateless_headers(&[(&METHOD_HEADER, "tools/call"), (&NAME_HEADER, "other")]);
        assert_eq!(
            rejected(admit(&[call("echo", "2026-07-28")], &headers)),
            Some((StatusCode::BAD_REQUEST, codes::HEADER_MISMATCH))
        );
    }

    #[test]
    fn a_missing_method_header_is_a_header_mismatch() {
        let headers = stateless_headers(&[(&NAME_HEADER, "echo")]);
        assert_eq!(
            code(admit(&[call("echo", "2026-07-28")], &headers)),
            Some(codes::HEADER_MISMATCH)
        );
    }

    #[test]
    fn a_name_header_is_compared_after_its_base64_is_decoded() {
        let headers = stateless_headers(&[
            (&METHOD_HEADER, "tools/call"),
            (&NAME_HEADER, "=?base64?ZWNobw==?="),
        ]);
        assert_eq!(code(admit(&[call("echo", "2026-07-28")], &headers)), None);
    }

    #[test]
    fn a_stateless_request_without_its_version_header_is_a_header_mismatch() {
        let headers = headers(&[(&METHOD_HEADER, "tools/call"), (&NAME_HEADER, "echo")]);
        assert_eq!(
            rejected(admit(&[call("echo", "2026-07-28")], &headers)),
            Some((StatusCode::BAD_REQUEST, codes::HEADER_MISMATCH))
        );
    }

    #[test]
    fn a_request_missing_a_required_meta_field_is_malformed_invalid_params_and_400() {
        let headers = stateless_headers(&[(&METHOD_HEADER, "server/discover")]);
        for params in [
            json!({}),
            json!({"_meta": {META_CLIENT_CAPABILITIES: {}}}),
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}),
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: []}}),
        ] {
            assert_eq!(
                rejected(admit(
                    &[request_with("server/discover", params.clone())],
                    &headers
                )),
                Some((StatusCode::BAD_REQUEST, -32602)),
                "{params}"
            );
        }
    }

    #[test]
    fn a_meta_version_other_than_the_header_is_a_mismatch_before_it_is_unsupported() {
        let headers = stateless_headers(&[(&METHOD_HEADER, "tools/call"), (&NAME_HEADER, "echo")]);
        assert_eq!(
            code(admit(&[call("echo", "v999.0.0")], &headers)),
            Some(codes::HEADER_MISMATCH)
        );
        let headers = headers_with_version("v999.0.0");
        assert_eq!(
            code(admit(&[call("echo", "v999.0.0")], &headers)),
            Some(codes::UNSUPPORTED_PROTOCOL_VERSION)
        );
    }

    fn headers_with_version(version: &'static str) -> HeaderMap {
        headers(&[
            (&METHOD_HEADER, "tools/call"),
            (&NAME_HEADER, "echo"),
            (&VERSION_HEADER, version),
        ])
    }

    #[test]
    fn a_meta_naming_a_session_revision_is_served_as_that_revision_not_statelessly() {
        let message = call("echo", "2025-11-25");
        let Message::Request(request) = &message else {
            unreachable!()
        };
        assert!(!is_stateless(request, &HeaderMap::new()));
        assert_eq!(
            code(admit(std::slice::from_ref(&message), &HeaderMap::new())),
            None
        );
    }

    #[test]
    fn an_unknown_meta_version_is_unsupported_with_the_supported_list() {
        let headers = headers_with_version("2031-01-01");
        let outcome = admit(&[call("echo", "2031-01-01")], &headers);
        let error = outcome.err().map(|rejection| rejection.error().clone());
        assert_eq!(
            error.as_ref().map(|error| error.code),
            Some(codes::UNSUPPORTED_PROTOCOL_VERSION)
        );
        assert_eq!(
            error
                .and_then(|error| error.data)
                .map(|data| data["requested"].clone()),
            Some(json!("2031-01-01"))
        );
    }

    #[test]
    fn an_unserved_version_header_is_refused_with_400() {
        let headers = headers(&[(&VERSION_HEADER, "1999-01-01")]);
        let outcome = admit(&[], &headers);
        assert_eq!(
            outcome.err().map(|rejection| rejection.status()),
            Some(StatusCode::BAD_REQUEST)
        );
    }

    fn head_of(params: &str) -> (Option<String>, Option<String>, Option<String>) {
        let request = Request {
            id: RequestId::Number(1),
            method: "tools/call".to_owned(),
            params: RawValue::from_string(params.to_owned()).ok(),
        };
        let head = RequestHead::of(&request);
        (
            head.version().map(str::to_owned),
            head.name.as_deref().map(str::to_owned),
            head.meta.log_level.as_deref().map(str::to_owned),
        )
    }

    #[test]
    fn the_head_reads_escaped_strings_as_their_text() {
        let (version, name, _) = head_of(
            r#"{"name":"e\u0063ho","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        );
        assert_eq!(version.as_deref(), Some("2026-07-28"));
        assert_eq!(name.as_deref(), Some("echo"));
    }

    #[test]
    fn a_head_field_of_another_json_type_reads_as_absent_and_the_rest_still_reads() {
        let (version, name, level) = head_of(
            r#"{"name":{"nested":[1,2]},"_meta":{"io.modelcontextprotocol/logLevel":3,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        );
        assert_eq!(version.as_deref(), Some("2026-07-28"));
        assert_eq!(name, None);
        assert_eq!(level, None);
    }

    #[test]
    fn a_meta_that_is_not_an_object_names_no_version() {
        assert_eq!(head_of(r#"{"_meta":["2026-07-28"],"name":"echo"}"#).0, None);
        assert_eq!(head_of(r#"[{"_meta":{}}]"#), (None, None, None));
    }

    fn handler_params(params: &str) -> Option<String> {
        let request = Request {
            id: RequestId::Number(1),
            method: "tools/call".to_owned(),
            params: RawValue::from_string(params.to_owned()).ok(),
        };
        let head = RequestHead::of(&request);
        let raw = request.params.as_deref()?;
        Some(head.params_for_handler(raw).get().to_owned())
    }

    #[test]
    fn a_stateless_meta_of_server_keys_only_does_not_reach_the_handler() {
        let last = r#"{"name":"echo","arguments":{"m":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"info"}}"#;
        assert_eq!(
            handler_params(last).as_deref(),
            Some(r#"{"name":"echo","arguments":{"m":"x"}}"#)
        );
        let first = r#"{ "_meta" : {"io.modelcontextprotocol/protocolVersion":"2026-07-28"} , "name":"echo"}"#;
        assert_eq!(
            handler_params(first).as_deref(),
            Some(r#"{ "name":"echo"}"#)
        );
        let only = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#;
        assert_eq!(handler_params(only).as_deref(), Some("{}"));
    }

    #[test]
    fn a_meta_the_handler_may_read_or_the_server_cannot_cut_cleanly_is_passed_as_sent() {
        for params in [
            // A progress token, or any key of the handler's own.
            r#"{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7}}"#,
            r#"{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","app/trace":"t"}}"#,
            // Not a stateless request: its _meta is the handler's.
            r#"{"name":"echo","_meta":{"io.modelcontextprotocol/logLevel":"info"}}"#,
            // An escaped key and a repeated key.
            r#"{"name":"echo","\u005fmeta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
            r#"{"_meta":{},"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        ] {
            assert_eq!(handler_params(params).as_deref(), Some(params), "{params}");
        }
    }

    #[test]
    fn a_meta_inside_an_argument_stays_when_the_requests_own_meta_is_cut() {
        let params = r#"{"name":"echo","arguments":{"_meta":{"io.modelcontextprotocol/protocolVersion":"x"},"t":"\"_meta\":{}"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#;
        assert_eq!(
            handler_params(params).as_deref(),
            Some(
                r#"{"name":"echo","arguments":{"_meta":{"io.modelcontextprotocol/protocolVersion":"x"},"t":"\"_meta\":{}"}}"#
            )
        );
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value_as_a_json_map_does() {
        let (version, name, _) = head_of(
            r#"{"name":"first","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"second","_meta":{}}"#,
        );
        assert_eq!(name.as_deref(), Some("second"));
        assert_eq!(version, None);
    }
}
