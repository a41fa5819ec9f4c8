//! JSON-RPC 2.0 messages and their total decoder: ids, requests, notifications, responses,
//! errors and batches, plus the standard error codes. Params and results stay raw JSON
//! ([`RawValue`]) so the protocol layer parses them once, straight into its own types.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use serde::de::{self, IgnoredAny, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

mod common_shape;
pub mod member;

/// The only protocol version this module speaks.
const VERSION: &str = "2.0";

/// The error codes JSON-RPC 2.0 reserves.
pub mod codes {
    /// The bytes are not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON is not a JSON-RPC message.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params do not fit the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed.
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// A request id: a string or an integer. `null` is not an id; it only appears on an error that
/// answers a message whose id could not be read, which [`Response`] models separately.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(Arc<str>),
}

impl RequestId {
    /// Reads an id from a JSON value, refusing the shapes JSON-RPC does not allow (null,
    /// fractions, booleans, containers).
    pub fn from_json(value: &Value) -> Option<Self> {
        match value {
            Value::String(text) => Some(Self::String(Arc::from(text.as_str()))),
            Value::Number(number) => number.as_i64().map(Self::Number),
            _ => None,
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(number) => write!(f, "{number}"),
            Self::String(text) => write!(f, "{text:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(value: i64) -> Self {
        Self::Number(value)
    }
}

impl From<&str> for RequestId {
    fn from(value: &str) -> Self {
        Self::String(Arc::from(value))
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Number(number) => serializer.serialize_i64(*number),
            Self::String(text) => serializer.serialize_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_i64<E: de::Error>(self, value: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(value))
            }
            fn visit_u64<E: de::Error>(self, value: u64) -> Result<RequestId, E> {
                i64::try_from(value)
                    .map(RequestId::Number)
                    .map_err(|_| E::custom("id out of range"))
            }
            fn visit_str<E: de::Error>(self, value: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(Arc::from(value)))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code: one of [`codes`] or a protocol's own.
    pub code: i64,
    /// A short description of the error, for people.
    pub message: Cow<'static, str>,
    /// Structured details the protocol defines, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and a message and no data.
    pub fn new(code: i64, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches structured data.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700: the body is not JSON.
    pub fn parse_error() -> Self {
        Self::new(codes::PARSE_ERROR, "parse error")
    }

    /// -32600: the message is not a valid request; `reason` says why.
    pub fn invalid_request(reason: &'static str) -> Self {
        Self::new(codes::INVALID_REQUEST, reason)
    }

    /// -32601: no method of that name (or not on this side).
    pub fn method_not_found() -> Self {
        Self::new(codes::METHOD_NOT_FOUND, "method not found")
    }

    /// -32602: the params do not fit the method, with `message` saying how.
    pub fn invalid_params(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    /// -32603: the server failed; nothing of the failure is sent.
    pub fn internal_error() -> Self {
        Self::new(codes::INTERNAL_ERROR, "internal error")
    }
}

/// The message is quoted: an error object usually comes from the peer, so its text is a
/// caller's value.
impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "JSON-RPC error {}: {}",
            self.code,
            crate::quote::quote(&self.message)
        )
    }
}

impl std::error::Error for ErrorObject {}

/// A call that expects an answer.
#[derive(Debug, Clone)]
pub struct Request {
    /// The id the answer must echo.
    pub id: RequestId,
    /// The method called.
    pub method: String,
    /// The params as sent, undecoded; `None` when absent.
    pub params: Option<Box<RawValue>>,
}

/// A call that expects no answer.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method called.
    pub method: String,
    /// The params as sent, undecoded; `None` when absent.
    pub params: Option<Box<RawValue>>,
}

/// The answer to a request. The id is `None` only for an error answering a message whose id
/// could not be read; the constructors make a success without an id unrepresentable.
#[derive(Debug, Clone)]
pub struct Response {
    id: Option<RequestId>,
    outcome: Result<Box<RawValue>, ErrorObject>,
}

impl Response {
    /// A successful answer.
    pub fn success(id: RequestId, result: Box<RawValue>) -> Self {
        Self {
            id: Some(id),
            outcome: Ok(result),
        }
    }

    /// An error answering the request `id`, or an unreadable request when `id` is `None`.
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Self {
            id,
            outcome: Err(error),
        }
    }

    /// The answer to `id` carrying `outcome`.
    pub(crate) fn answering(id: RequestId, outcome: Result<Box<RawValue>, ErrorObject>) -> Self {
        Self {
            id: Some(id),
            outcome,
        }
    }

    /// The id this answers; `None` for an error answering an unreadable message.
    pub fn id(&self) -> Option<&RequestId> {
        self.id.as_ref()
    }

    /// The raw result, or the error the request was answered with.
    pub fn outcome(&self) -> &Result<Box<RawValue>, ErrorObject> {
        &self.outcome
    }

    /// Takes the raw result or the error out of the answer.
    pub fn into_outcome(self) -> Result<Box<RawValue>, ErrorObject> {
        self.outcome
    }

    /// Whether the answer is an error.
    pub fn is_error(&self) -> bool {
        self.outcome.is_err()
    }
}

/// Any one JSON-RPC message.
#[derive(Debug, Clone)]
pub enum Message {
    /// A call that expects an answer.
    Request(Request),
    /// A call that expects no answer.
    Notification(Notification),
    /// An answer to an earlier request.
    Response(Response),
}

impl Message {
    /// The serialized form, the same bytes as its [`Serialize`] impl gives, written straight
    /// into one buffer sized up front (this runs once per answer). Writing these types cannot
    /// fail (every key is a string and every value is already JSON), so the fallback is never
    /// expected; it still answers with a valid internal-error message rather than a panic.
    pub fn to_bytes(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.encoded_len_hint());
        match self.write_json(&mut out) {
            Ok(()) => Bytes::from(out),
            Err(_) => Bytes::from_static(INTERNAL_ERROR_MESSAGE),
        }
    }

    /// Roughly how many bytes the serialized form takes: the raw JSON parts plus the keys.
    fn encoded_len_hint(&self) -> usize {
        const FRAME: usize = 64;
        let raw_len = |raw: &Option<Box<RawValue>>| raw.as_ref().map_or(0, |raw| raw.get().len());
        match self {
            Self::Request(request) => FRAME + request.method.len() + raw_len(&request.params),
            Self::Notification(note) => FRAME + note.method.len() + raw_len(&note.params),
            Self::Response(response) => response.encoded_len_hint(),
        }
    }

    /// Appends the serialized form: `jsonrpc` first, then the fields in the order the
    /// [`Serialize`] impl writes them, with no whitespace.
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        out.extend_from_slice(br#"{"jsonrpc":"2.0""#);
        match self {
            Self::Request(request) => {
                write_id(out, Some(&request.id))?;
                write_method(out, &request.method, request.params.as_deref())?;
            }
            Self::Notification(note) => write_method(out, &note.method, note.params.as_deref())?,
            Self::Response(response) => response.write_fields(out)?,
        }
        out.push(b'}');
        Ok(())
    }
}

impl Response {
    /// The serialized form, as [`Message::to_bytes`] gives it, without wrapping (and so
    /// cloning) the answer in a [`Message`] first.
    pub fn to_bytes(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.encoded_len_hint());
        out.extend_from_slice(br#"{"jsonrpc":"2.0""#);
        match self.write_fields(&mut out) {
            Ok(()) => {
                out.push(b'}');
                // A `Vec` with spare capacity becomes `Bytes` through a second allocation (its
                // shared header); shrinking it in place first costs less.
                Bytes::from(out.into_boxed_slice())
            }
            Err(_) => Bytes::from_static(INTERNAL_ERROR_MESSAGE),
        }
    }

    /// The serialized length: exact for a success with a numeric or null id (nearly every
    /// answer), so [`Self::to_bytes`] has nothing to shrink; a bound with room to spare otherwise.
    fn encoded_len_hint(&self) -> usize {
        const FRAME: usize = 64;
        // `{"jsonrpc":"2.0"` `,"id":` `,"result":` `}`
        const SUCCESS_FRAME: usize = 16 + 6 + 10 + 1;
        match (&self.outcome, &self.id) {
            (Ok(result), None) => SUCCESS_FRAME + "null".len() + result.get().len(),
            (Ok(result), Some(RequestId::Number(number))) => {
                SUCCESS_FRAME + decimal_len(*number) + result.get().len()
            }
            (Ok(result), Some(RequestId::String(_))) => FRAME + result.get().len(),
            (Err(error), _) => FRAME + FRAME + error.message.len(),
        }
    }

    /// Appends `,"id":…` and the outcome.
    fn write_fields(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        write_id(out, self.id.as_ref())?;
        match &self.outcome {
            Ok(result) => write_raw(out, "result", result),
            Err(error) => {
                out.extend_from_slice(br#","error":"#);
                serde_json::to_writer(&mut *out, error)?;
            }
        }
        Ok(())
    }
}

/// How many bytes `number` takes in decimal, its sign included.
fn decimal_len(number: i64) -> usize {
    let digits = number
        .unsigned_abs()
        .checked_ilog10()
        .map_or(1, |log| log as usize + 1);
    usize::from(number < 0) + digits
}

fn write_id(out: &mut Vec<u8>, id: Option<&RequestId>) -> Result<(), serde_json::Error> {
    out.extend_from_slice(br#","id":"#);
    serde_json::to_writer(out, &id)
}

fn write_method(
    out: &mut Vec<u8>,
    method: &str,
    params: Option<&RawValue>,
) -> Result<(), serde_json::Error> {
    out.extend_from_slice(br#","method":"#);
    serde_json::to_writer(&mut *out, method)?;
    if let Some(params) = params {
        write_raw(out, "params", params);
    }
    Ok(())
}

/// Appends `,"key":` and the raw JSON as it is (keys here never need escaping).
fn write_raw(out: &mut Vec<u8>, key: &str, raw: &RawValue) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
    out.extend_from_slice(raw.get().as_bytes());
}

/// Serialize several messages as one JSON array (a batch answer).
pub fn batch_to_bytes(messages: &[Message]) -> Bytes {
    let capacity = messages
        .iter()
        .map(Message::encoded_len_hint)
        .sum::<usize>()
        + messages.len()
        + 2;
    let mut out = Vec::with_capacity(capacity);
    out.push(b'[');
    for (index, message) in messages.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        if message.write_json(&mut out).is_err() {
            return Bytes::from_static(INTERNAL_ERROR_MESSAGE);
        }
    }
    out.push(b']');
    Bytes::from(out)
}

const INTERNAL_ERROR_MESSAGE: &[u8] =
    br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#;

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", VERSION)?;
        match self {
            Self::Request(request) => {
                map.serialize_entry("id", &request.id)?;
                map.serialize_entry("method", &request.method)?;
                if let Some(params) = &request.params {
                    map.serialize_entry("params", params)?;
                }
            }
            Self::Notification(notification) => {
                map.serialize_entry("method", &notification.method)?;
                if let Some(params) = &notification.params {
                    map.serialize_entry("params", params)?;
                }
            }
            Self::Response(response) => {
                map.serialize_entry("id", &response.id)?;
                match &response.outcome {
                    Ok(result) => map.serialize_entry("result", result)?,
                    Err(error) => map.serialize_entry("error", error)?,
                }
            }
        }
        map.end()
    }
}

/// How far the decoder will go before refusing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecodeLimits {
    /// The largest body, in bytes.
    pub max_bytes: usize,
    /// The deepest nesting of arrays and objects, counting the outermost as 1.
    pub max_depth: usize,
}

crate::config_setters!(DecodeLimits {
    max_bytes: usize,
    max_depth: usize
});

impl Default for DecodeLimits {
    fn default() -> Self {
        Self {
            max_bytes: 4 * 1024 * 1024,
            max_depth: 64,
        }
    }
}

/// What one decoded body holds.
#[derive(Debug)]
pub enum Payload {
    /// One message, not in a batch.
    Single(Message),
    /// A batch; each entry is decoded on its own so one bad entry is answered on its own.
    Batch(Vec<Result<Message, InvalidMessage>>),
}

/// JSON that is not a JSON-RPC message. `id` is the id when it could be read, so the error
/// answer can echo it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid JSON-RPC message: {reason}")]
pub struct InvalidMessage {
    /// The message's id, when it could be read.
    pub id: Option<RequestId>,
    /// What is wrong with the message (a fixed text, never the input).
    pub reason: &'static str,
}

impl InvalidMessage {
    /// The error answer this invalid message is owed.
    pub fn to_response(&self) -> Response {
        Response::error(self.id.clone(), ErrorObject::invalid_request(self.reason))
    }
}

/// Why a body did not decode. Nothing in it echoes the input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// The body is longer than the byte limit.
    #[error("the body exceeds {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The body nests arrays or objects deeper than the limit.
    #[error("the body nests deeper than {limit} levels")]
    TooDeep {
        /// The limit in nesting levels.
        limit: usize,
    },
    /// The body is not UTF-8 text.
    #[error("the body is not UTF-8")]
    InvalidUtf8,
    /// The body is not JSON.
    #[error("the body is not JSON")]
    NotJson,
    /// The body is an empty batch (`[]`).
    #[error("the batch is empty")]
    EmptyBatch,
    /// The body is JSON but not a JSON-RPC message.
    #[error(transparent)]
    Invalid(#[from] InvalidMessage),
}

impl DecodeError {
    /// The JSON-RPC error this failure answers with.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            Self::InvalidUtf8 | Self::NotJson | Self::TooDeep { .. } => ErrorObject::parse_error(),
            Self::TooLarge { .. } => ErrorObject::invalid_request("message too large"),
            Self::EmptyBatch => ErrorObject::invalid_request("empty batch"),
            Self::Invalid(invalid) => ErrorObject::invalid_request(invalid.reason),
        }
    }

    /// The request id, when the message was readable enough to have one.
    pub fn request_id(&self) -> Option<&RequestId> {
        match self {
            Self::Invalid(invalid) => invalid.id.as_ref(),
            _ => None,
        }
    }

    /// The error response this failure is owed.
    pub fn to_response(&self) -> Response {
        Response::error(self.request_id().cloned(), self.to_error_object())
    }
}

/// Decodes any bytes into a payload or a typed error; never panics. The depth is checked by a
/// byte scan before serde_json recurses, so nesting is refused without deep recursion.
pub fn decode(bytes: &[u8], limits: &DecodeLimits) -> Result<Payload, DecodeError> {
    if bytes.len() > limits.max_bytes {
        return Err(DecodeError::TooLarge {
            limit: limits.max_bytes,
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|_| DecodeError::InvalidUtf8)?;
    if nesting_depth_exceeds(bytes, limits.max_depth) {
        return Err(DecodeError::TooDeep {
            limit: limits.max_depth,
        });
    }
    // Whitespace JSON does not know fails the same way whichever branch it takes, so the
    // ASCII trim (no Unicode tables) picks the branch.
    match text.as_bytes().trim_ascii_start().first() {
        Some(b'[') => decode_batch(text),
        Some(b'{') => decode_object(text).map(Payload::Single),
        _ => Err(not_an_object(text)),
    }
}

/// Decodes one message; a batch is an error here (stdio peers and responses use this).
pub fn decode_message(bytes: &[u8], limits: &DecodeLimits) -> Result<Message, DecodeError> {
    match decode(bytes, limits)? {
        Payload::Single(message) => Ok(message),
        Payload::Batch(_) => Err(DecodeError::Invalid(InvalidMessage {
            id: None,
            reason: "batches are not accepted here",
        })),
    }
}

/// Whether the JSON text nests arrays/objects deeper than `limit`, ignoring brackets inside
/// strings. The exact scan runs only when the body has more opening brackets than `limit` at
/// all: counting them is one branch-free pass, and most messages stop there.
fn nesting_depth_exceeds(bytes: &[u8], limit: usize) -> bool {
    if bytes.len() <= limit.saturating_mul(2) {
        return false;
    }
    let openings = bytes
        .iter()
        .map(|&byte| usize::from(byte == b'[' || byte == b'{'))
        .sum::<usize>();
    if openings <= limit {
        return false;
    }
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Valid JSON that is neither an object nor an array is an invalid request; anything else is
/// not JSON at all.
fn not_an_object(text: &str) -> DecodeError {
    match serde_json::from_str::<IgnoredAny>(text) {
        Ok(_) => DecodeError::Invalid(InvalidMessage {
            id: None,
            reason: "a message must be a JSON object",
        }),
        Err(_) => DecodeError::NotJson,
    }
}

fn decode_batch(text: &str) -> Result<Payload, DecodeError> {
    let entries: Vec<&RawValue> = serde_json::from_str(text).map_err(|_| DecodeError::NotJson)?;
    if entries.is_empty() {
        return Err(DecodeError::EmptyBatch);
    }
    let messages = entries
        .into_iter()
        .map(|entry| match decode_object(entry.get()) {
            Ok(message) => Ok(message),
            Err(DecodeError::Invalid(invalid)) => Err(invalid),
            Err(_) => Err(InvalidMessage {
                id: None,
                reason: "a batch entry must be a JSON object",
            }),
        })
        .collect();
    Ok(Payload::Batch(messages))
}

/// The fields any JSON-RPC message may carry, read without judging them. `Option<Option<_>>`
/// separates an absent field (`None`) from an explicit `null` (`Some(None)`).
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<Text<'a>>,
    #[serde(default)]
    id: IdField,
    #[serde(borrow, default)]
    method: Option<Text<'a>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<Option<&'a RawValue>>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Option<ErrorObject>>,
}

/// A string borrowed from the body when it holds no escapes, owned otherwise. serde borrows
/// only a bare `Cow<str>` field; inside an `Option` its `Cow` always allocates.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TextVisitor).map(Text)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(value))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(value))
    }
}

fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// One message: the common shape read by hand, anything else by the total decoder.
fn decode_object(text: &str) -> Result<Message, DecodeError> {
    common_shape::read(text).map_or_else(|| decode_envelope(text), Ok)
}

/// The total decoder of one message: serde reads the envelope's fields, [`classify`] judges them.
fn decode_envelope(text: &str) -> Result<Message, DecodeError> {
    let envelope: Envelope<'_> = match serde_json::from_str(text) {
        Ok(envelope) => envelope,
        Err(error) if error.is_data() => {
            return Err(DecodeError::Invalid(InvalidMessage {
                id: readable_id(text),
                reason: "a field has the wrong type",
            }));
        }
        Err(_) => return Err(not_an_object(text)),
    };
    classify(envelope)
}

/// Salvages the id of a message whose other fields are malformed, so its error can echo it.
fn readable_id(text: &str) -> Option<RequestId> {
    #[derive(Deserialize)]
    struct IdOnly {
        id: Option<RequestId>,
    }
    serde_json::from_str::<IdOnly>(text)
        .ok()
        .and_then(|only| only.id)
}

/// What the `id` field says, read in the same pass as the rest of the envelope: a shape
/// JSON-RPC does not allow is `Unusable` rather than a parse failure, so the message is still
/// answered as an invalid request.
#[derive(Default)]
enum IdField {
    #[default]
    Absent,
    Null,
    Valid(RequestId),
    Unusable,
}

impl<'de> Deserialize<'de> for IdField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IdFieldVisitor)
    }
}

struct IdFieldVisitor;

impl<'de> Visitor<'de> for IdFieldVisitor {
    type Value = IdField;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<IdField, E> {
        Ok(IdField::Valid(RequestId::Number(value)))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<IdField, E> {
        Ok(i64::try_from(value).map_or(IdField::Unusable, |id| {
            IdField::Valid(RequestId::Number(id))
        }))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<IdField, E> {
        Ok(IdField::Unusable)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<IdField, E> {
        Ok(IdField::Unusable)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<IdField, E> {
        Ok(IdField::Valid(RequestId::String(Arc::from(value))))
    }

    fn visit_unit<E: de::Error>(self) -> Result<IdField, E> {
        Ok(IdField::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<IdField, E> {
        Ok(IdField::Null)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<IdField, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(IdField::Unusable)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<IdField, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(IdField::Unusable)
    }
}

impl IdField {
    fn known(&self) -> Option<RequestId> {
        match self {
            Self::Valid(id) => Some(id.clone()),
            _ => None,
        }
    }
}

fn classify(envelope: Envelope<'_>) -> Result<Message, DecodeError> {
    let id = envelope.id;
    let invalid = |reason| {
        DecodeError::Invalid(InvalidMessage {
            id: id.known(),
            reason,
        })
    };
    if envelope.jsonrpc.as_ref().map(|text| text.0.as_ref()) != Some(VERSION) {
        return Err(invalid("jsonrpc must be \"2.0\""));
    }
    let params = match envelope.params {
        Some(raw) if !is_structured(raw) => {
            return Err(invalid("params must be an object or an array"));
        }
        other => other.map(RawValue::to_owned),
    };
    match (envelope.method, envelope.result, envelope.error) {
        (Some(method), None, None) => match id {
            IdField::Absent => Ok(Message::Notification(Notification {
                method: method.0.into_owned(),
                params,
            })),
            IdField::Valid(id) => Ok(Message::Request(Request {
                id,
                method: method.0.into_owned(),
                params,
            })),
            IdField::Null | IdField::Unusable => {
                Err(invalid("a request id must be a string or an integer"))
            }
        },
        (None, Some(result), None) => match id {
            IdField::Valid(id) => Ok(Message::Response(Response::success(
                id,
                result.map_or_else(null_raw, RawValue::to_owned),
            ))),
            _ => Err(invalid("a result must answer a string or integer id")),
        },
        (None, None, Some(Some(error))) => match id {
            IdField::Valid(id) => Ok(Message::Response(Response::error(Some(id), error))),
            IdField::Null => Ok(Message::Response(Response::error(None, error))),
            IdField::Absent | IdField::Unusable => Err(invalid("an error must carry an id")),
        },
        _ => Err(invalid(
            "a message is exactly one of request, notification, result or error",
        )),
    }
}

fn is_structured(raw: &RawValue) -> bool {
    matches!(raw.get().trim_start().as_bytes().first(), Some(b'{' | b'['))
}

fn null_raw() -> Box<RawValue> {
    RawValue::NULL.to_owned()
}

/// Serializes `value` as a raw JSON value, for results and params.
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, serde_json::Error> {
    serde_json::value::to_raw_value(value)
}

/// The two readers of one message apart, for the differential fuzz target (`fuzz/`), which
/// holds them to the contract `common_shape` states. Not part of the API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    use super::{DecodeError, Message};

    /// The common-shape reader alone: `None` where it leaves the text to the total decoder.
    pub fn read_common_shape(text: &str) -> Option<Message> {
        super::common_shape::read(text)
    }

    /// The total decoder of one message, the common-shape reader bypassed.
    pub fn decode_total(text: &str) -> Result<Message, DecodeError> {
        super::decode_envelope(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_success_with_a_numeric_or_null_id_is_sized_exactly() {
        let result = RawValue::from_string(r#"{"text":"hello, world"}"#.into()).unwrap();
        for id in [0, 7, 10, 99, -1, -10, 1_000_000, i64::MAX, i64::MIN] {
            let answer = Response::success(RequestId::Number(id), result.clone());
            assert_eq!(
                answer.encoded_len_hint(),
                answer.to_bytes().len(),
                "id {id}"
            );
        }
        let answer = Response {
            id: None,
            outcome: Ok(result),
        };
        assert_eq!(answer.encoded_len_hint(), answer.to_bytes().len());
    }

    fn limits() -> DecodeLimits {
        DecodeLimits::default()
    }

    fn single(text: &str) -> Message {
        match decode(text.as_bytes(), &limits()) {
            Ok(Payload::Single(message)) => message,
            other => panic!("{text} decoded as {other:?}"),
        }
    }

    fn refused(text: &[u8]) -> DecodeError {
        match decode(text, &limits()) {
            Err(error) => error,
            Ok(payload) => panic!("{text:?} decoded as {payload:?}"),
        }
    }

    #[test]
    fn a_request_keeps_its_id_method_and_raw_params() {
        let Message::Request(request) =
            single(r#"{"jsonrpc":"2.0","id":7,"method":"echo","params":{"a":[1,2]}}"#)
        else {
            panic!("not a request");
        };
        assert_eq!(request.id, RequestId::Number(7));
        assert_eq!(request.method, "echo");
        assert_eq!(
            request.params.map(|raw| raw.get().to_owned()).as_deref(),
            Some(r#"{"a":[1,2]}"#)
        );
    }

    #[test]
    fn string_and_integer_ids_are_both_ids() {
        let Message::Request(request) = single(r#"{"jsonrpc":"2.0","id":"abc","method":"m"}"#)
        else {
            panic!("not a request");
        };
        assert_eq!(request.id, RequestId::from("abc"));
        let Message::Request(request) = single(r#"{"jsonrpc":"2.0","id":-3,"method":"m"}"#) else {
            panic!("not a request");
        };
        assert_eq!(request.id, RequestId::Number(-3));
    }

    #[test]
    fn a_missing_id_is_a_notification_and_a_null_id_is_invalid() {
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","method":"note"}"#),
            Message::Notification(_)
        ));
        let error = refused(br#"{"jsonrpc":"2.0","id":null,"method":"m"}"#);
        assert_eq!(error.to_error_object().code, codes::INVALID_REQUEST);
        assert_eq!(error.request_id(), None);
    }

    #[test]
    fn fractional_boolean_and_object_ids_are_invalid_requests() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#,
        ] {
            assert_eq!(
                refused(body.as_bytes()).to_error_object().code,
                codes::INVALID_REQUEST,
                "{body}"
            );
        }
    }

    #[test]
    fn an_invalid_message_with_a_readable_id_echoes_it() {
        let error = refused(br#"{"jsonrpc":"1.0","id":"k","method":"m"}"#);
        assert_eq!(error.request_id(), Some(&RequestId::from("k")));
        let error = refused(br#"{"jsonrpc":"2.0","id":4,"method":12}"#);
        assert_eq!(error.request_id(), Some(&RequestId::Number(4)));
    }

    #[test]
    fn the_version_must_be_exactly_two_point_zero() {
        for body in [
            r#"{"id":1,"method":"m"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":2.0,"id":1,"method":"m"}"#,
        ] {
            assert_eq!(
                refused(body.as_bytes()).to_error_object().code,
                codes::INVALID_REQUEST,
                "{body}"
            );
        }
    }

    #[test]
    fn scalar_params_are_invalid_and_null_params_are_absent() {
        assert_eq!(
            refused(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#)
                .to_error_object()
                .code,
            codes::INVALID_REQUEST
        );
        let Message::Request(request) =
            single(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#)
        else {
            panic!("not a request");
        };
        assert!(request.params.is_none());
    }

    #[test]
    fn responses_carry_results_including_null_and_errors_may_have_a_null_id() {
        let Message::Response(response) = single(r#"{"jsonrpc":"2.0","id":2,"result":null}"#)
        else {
            panic!("not a response");
        };
        assert_eq!(response.id(), Some(&RequestId::Number(2)));
        assert_eq!(response.outcome().as_ref().map(|raw| raw.get()), Ok("null"));

        let Message::Response(response) =
            single(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#)
        else {
            panic!("not a response");
        };
        assert_eq!(response.id(), None);
        assert_eq!(
            response.outcome().as_ref().err().map(|e| e.code),
            Some(-32700)
        );
    }

    #[test]
    fn a_result_with_a_null_id_is_invalid() {
        assert_eq!(
            refused(br#"{"jsonrpc":"2.0","id":null,"result":1}"#)
                .to_error_object()
                .code,
            codes::INVALID_REQUEST
        );
    }

    #[test]
    fn a_message_with_both_method_and_result_is_invalid() {
        assert_eq!(
            refused(br#"{"jsonrpc":"2.0","id":1,"method":"m","result":1}"#)
                .to_error_object()
                .code,
            codes::INVALID_REQUEST
        );
        assert_eq!(
            refused(br#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}"#)
                .to_error_object()
                .code,
            codes::INVALID_REQUEST
        );
    }

    #[test]
    fn unreadable_bytes_are_parse_errors() {
        for body in [
            &b"{"[..],
            b"",
            b"   ",
            b"{\"jsonrpc\":",
            b"nul",
            b"{\"a\":1}}",
            b"\xff\xfe{}",
        ] {
            assert_eq!(
                refused(body).to_error_object().code,
                codes::PARSE_ERROR,
                "{body:?}"
            );
        }
    }

    #[test]
    fn invalid_utf8_is_its_own_error() {
        assert_eq!(
            refused(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xc3\x28\"}"),
            DecodeError::InvalidUtf8
        );
    }

    #[test]
    fn json_that_is_not_an_object_is_an_invalid_request() {
        for body in [&b"1"[..], b"\"text\"", b"null", b"true"] {
            assert_eq!(
                refused(body).to_error_object().code,
                codes::INVALID_REQUEST,
                "{body:?}"
            );
        }
    }

    #[test]
    fn nesting_past_the_limit_is_refused_before_parsing() {
        let limits = DecodeLimits {
            max_bytes: 1 << 20,
            max_depth: 8,
        };
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{}{}}}"#,
            "[".repeat(8),
            "]".repeat(8)
        );
        assert_eq!(
            decode(deep.as_bytes(), &limits).err(),
            Some(DecodeError::TooDeep { limit: 8 })
        );
        let shallow = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{}{}}}"#,
            "[".repeat(7),
            "]".repeat(7)
        );
        assert!(decode(shallow.as_bytes(), &limits).is_ok());
    }

    #[test]
    fn brackets_inside_strings_do_not_count_as_nesting() {
        let limits = DecodeLimits {
            max_bytes: 1 << 20,
            max_depth: 4,
        };
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"s":"{}\"{}"}}}}"#,
            "[".repeat(50),
            "{".repeat(50)
        );
        assert!(decode(body.as_bytes(), &limits).is_ok());
    }

    #[test]
    fn a_million_open_brackets_is_an_error_not_a_stack_overflow() {
        let body = "[".repeat(1_000_000);
        let limits = DecodeLimits {
            max_bytes: 2_000_000,
            max_depth: 64,
        };
        assert_eq!(
            decode(body.as_bytes(), &limits).err(),
            Some(DecodeError::TooDeep { limit: 64 })
        );
    }

    #[test]
    fn an_oversized_body_is_refused_by_length() {
        let limits = DecodeLimits {
            max_bytes: 16,
            max_depth: 64,
        };
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"m"}"#;
        assert_eq!(
            decode(body, &limits).err(),
            Some(DecodeError::TooLarge { limit: 16 })
        );
    }

    #[test]
    fn a_batch_decodes_each_entry_on_its_own() {
        let Ok(Payload::Batch(entries)) = decode(
            br#"[{"jsonrpc":"2.0","id":1,"method":"a"},1,{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"x"}]"#,
            &limits(),
        ) else {
            panic!("not a batch");
        };
        assert_eq!(entries.len(), 4);
        assert!(matches!(entries[0], Ok(Message::Request(_))));
        assert!(entries[1].is_err());
        assert!(matches!(entries[2], Ok(Message::Notification(_))));
        assert_eq!(
            entries[3].as_ref().err().and_then(|e| e.id.clone()),
            Some(RequestId::from("x"))
        );
    }

    #[test]
    fn an_empty_batch_is_an_invalid_request() {
        let error = refused(b"[]");
        assert_eq!(error, DecodeError::EmptyBatch);
        assert_eq!(error.to_error_object().code, codes::INVALID_REQUEST);
    }

    #[test]
    fn encoding_writes_the_version_and_exactly_one_outcome() -> Result<(), serde_json::Error> {
        let ok = Message::Response(Response::success(
            RequestId::Number(1),
            to_raw(&serde_json::json!({"x":1}))?,
        ));
        assert_eq!(
            ok.to_bytes(),
            Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"result":{"x":1}}"#)
        );
        let err = Message::Response(Response::error(None, ErrorObject::parse_error()));
        assert_eq!(
            err.to_bytes(),
            Bytes::from_static(
                br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#
            )
        );
        let note = Message::Notification(Notification {
            method: "n".to_owned(),
            params: None,
        });
        assert_eq!(
            note.to_bytes(),
            Bytes::from_static(br#"{"jsonrpc":"2.0","method":"n"}"#)
        );
        Ok(())
    }

    #[test]
    fn an_error_objects_text_quotes_its_message_once_and_bounded() {
        let message = format!("{}\n{}", "m".repeat(60), "x".repeat(39));
        assert_eq!(message.len(), 100);
        let text = ErrorObject::new(-32000, message).to_string();
        let quoted = text
            .strip_prefix("JSON-RPC error -32000: `")
            .and_then(|rest| rest.strip_suffix('`'))
            .unwrap_or_else(|| panic!("not quoted: {text}"));
        assert!(quoted.len() <= crate::quote::MAX_QUOTED_BYTES, "{quoted}");
        assert!(!text.contains('\n'), "{text}");
        assert_eq!(text.matches("JSON-RPC error").count(), 1);
    }

    #[test]
    fn direct_encoding_gives_the_same_bytes_as_the_serialize_impl() -> Result<(), serde_json::Error>
    {
        let params = to_raw(&serde_json::json!({"text":"a \"quoted\"\nline","n":[1,2.5,null]}))?;
        let error =
            ErrorObject::new(-32000, "went \"wrong\"").with_data(serde_json::json!({"k":1}));
        let messages = [
            Message::Request(Request {
                id: RequestId::from("id with \"quotes\" and \u{1}"),
                method: "tools/call".to_owned(),
                params: Some(params.clone()),
            }),
            Message::Request(Request {
                id: RequestId::Number(i64::MIN),
                method: "m\u{e9}thod".to_owned(),
                params: None,
            }),
            Message::Notification(Notification {
                method: "notifications/progress".to_owned(),
                params: Some(params.clone()),
            }),
            Message::Response(Response::success(RequestId::Number(7), params)),
            Message::Response(Response::error(Some(RequestId::from("x")), error.clone())),
            Message::Response(Response::error(None, error)),
        ];
        for message in &messages {
            assert_eq!(
                message.to_bytes(),
                serde_json::to_vec(message)?,
                "{message:?}"
            );
            if let Message::Response(response) = message {
                assert_eq!(response.to_bytes(), message.to_bytes());
            }
        }
        assert_eq!(batch_to_bytes(&messages), serde_json::to_vec(&messages)?);
        Ok(())
    }

    #[test]
    fn escaped_version_and_method_strings_decode_like_plain_ones() {
        let Message::Request(request) =
            single(r#"{"jsonrpc":"2\u002e0","id":"\u0069d","method":"to\u006fls/call"}"#)
        else {
            panic!("not a request");
        };
        assert_eq!(request.method, "tools/call");
        assert_eq!(request.id, RequestId::from("id"));
    }

    #[test]
    fn an_integer_id_past_the_i64_range_is_an_invalid_request() {
        let error = refused(br#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"m"}"#);
        assert_eq!(error.to_error_object().code, codes::INVALID_REQUEST);
        assert_eq!(error.request_id(), None);
    }

    #[test]
    fn bracket_counting_does_not_let_deep_nesting_through_a_long_body() {
        // Long enough to be scanned; six opening brackets, all nested, against a limit of five.
        let limits = DecodeLimits {
            max_bytes: 1 << 20,
            max_depth: 5,
        };
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"pad":"{}","a":[[[[1]]]]}}}}"#,
            "x".repeat(64)
        );
        assert_eq!(
            decode(deep.as_bytes(), &limits).err(),
            Some(DecodeError::TooDeep { limit: 5 })
        );
    }

    #[test]
    fn encode_then_decode_returns_the_same_request() {
        let original = Message::Request(Request {
            id: RequestId::from("r-1"),
            method: "tools/call".to_owned(),
            params: to_raw(&serde_json::json!({"name":"echo","arguments":{"text":"a\nb"}})).ok(),
        });
        let bytes = original.to_bytes();
        let Ok(Payload::Single(Message::Request(back))) = decode(&bytes, &limits()) else {
            panic!("did not decode");
        };
        assert_eq!(back.id, RequestId::from("r-1"));
        assert_eq!(back.method, "tools/call");
        assert_eq!(
            back.params
                .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok()),
            Some(serde_json::json!({"name":"echo","arguments":{"text":"a\nb"}}))
        );
    }

    #[test]
    fn arbitrary_byte_strings_never_panic() {
        // A cheap deterministic fuzz: every prefix and every single-byte mutation of a valid
        // message must decode to a value or a typed error.
        let valid = br#"{"jsonrpc":"2.0","id":"a","method":"m","params":{"k":[1,{"z":null}]}}"#;
        for end in 0..=valid.len() {
            let _ = decode(&valid[..end], &limits());
        }
        for position in 0..valid.len() {
            for byte in [0u8, b'"', b'\\', b'[', b'}', 0xff, b'1', b' '] {
                let mut mutated = valid.to_vec();
                mutated[position] = byte;
                let _ = decode(&mutated, &limits());
            }
        }
    }
}
