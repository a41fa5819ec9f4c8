//! The protobuf well-known types the proto3 JSON mapping gives a special JSON form: their JSON
//! Schema and the Rust type that carries them. One table, used by both the schema and the Rust
//! emitter.

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::{Value, json};

/// A `google.protobuf.*` message with its own JSON form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WellKnown {
    /// RFC 3339 string, `Z`-normalized on output.
    Timestamp,
    /// Decimal seconds with an `s` suffix (`"1.5s"`).
    Duration,
    /// Comma-separated lowerCamelCase paths.
    FieldMask,
    /// Any JSON object.
    Struct,
    /// Any JSON value.
    Value,
    /// Any JSON array.
    ListValue,
    /// `{}`; the only well-known type that becomes a definition of its own.
    Empty,
    /// `google.protobuf.XxxValue`: the wrapped scalar's JSON form.
    Wrapper(Scalar),
    /// `{"@type": ..., ...}`: needs a type registry; refused.
    Any,
}

/// The scalar a wrapper carries; also how a plain scalar field maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scalar {
    Double,
    Float,
    Int32,
    Uint32,
    /// int64, sint64, sfixed64: a decimal string.
    Int64,
    /// uint64, fixed64: a decimal string.
    Uint64,
    Bool,
    String,
    /// Base64 text.
    Bytes,
}

impl WellKnown {
    /// Classifies a message by full name; `None` for every ordinary message.
    pub(super) fn of(full_name: &str) -> Option<Self> {
        let known = match full_name {
            "google.protobuf.Timestamp" => Self::Timestamp,
            "google.protobuf.Duration" => Self::Duration,
            "google.protobuf.FieldMask" => Self::FieldMask,
            "google.protobuf.Struct" => Self::Struct,
            "google.protobuf.Value" => Self::Value,
            "google.protobuf.ListValue" => Self::ListValue,
            "google.protobuf.Empty" => Self::Empty,
            "google.protobuf.Any" => Self::Any,
            "google.protobuf.DoubleValue" => Self::Wrapper(Scalar::Double),
            "google.protobuf.FloatValue" => Self::Wrapper(Scalar::Float),
            "google.protobuf.Int64Value" => Self::Wrapper(Scalar::Int64),
            "google.protobuf.UInt64Value" => Self::Wrapper(Scalar::Uint64),
            "google.protobuf.Int32Value" => Self::Wrapper(Scalar::Int32),
            "google.protobuf.UInt32Value" => Self::Wrapper(Scalar::Uint32),
            "google.protobuf.BoolValue" => Self::Wrapper(Scalar::Bool),
            "google.protobuf.StringValue" => Self::Wrapper(Scalar::String),
            "google.protobuf.BytesValue" => Self::Wrapper(Scalar::Bytes),
            _ => return None,
        };
        Some(known)
    }

    /// The JSON Schema of the type's JSON form; `None` for `Any`.
    pub(super) fn schema(self) -> Option<Value> {
        let schema = match self {
            Self::Timestamp => json!({"type": "string", "format": "date-time"}),
            // Formats typify does not know stay plain strings; the format names the syntax.
            Self::Duration => json!({"type": "string", "format": "google-duration"}),
            Self::FieldMask => json!({"type": "string", "format": "google-fieldmask"}),
            Self::Struct => json!({"type": "object", "additionalProperties": {}}),
            Self::Value => json!({}),
            Self::ListValue => json!({"type": "array", "items": {}}),
            Self::Empty => {
                json!({"type": "object", "properties": {}, "additionalProperties": false})
            }
            Self::Wrapper(scalar) => scalar.schema(),
            Self::Any => return None,
        };
        Some(schema)
    }

    /// The Rust type typify produces for [`Self::schema`]; `None` for `Empty` (a definition,
    /// named like any other) and `Any`.
    pub(super) fn rust_type(self) -> Option<TokenStream> {
        let ty = match self {
            Self::Timestamp => quote!(::chrono::DateTime<::chrono::offset::Utc>),
            Self::Duration | Self::FieldMask => quote!(::std::string::String),
            Self::Struct => {
                quote!(::serde_json::Map<::std::string::String, ::serde_json::Value>)
            }
            Self::Value => quote!(::serde_json::Value),
            Self::ListValue => quote!(::std::vec::Vec<::serde_json::Value>),
            Self::Wrapper(scalar) => scalar.rust_type(),
            Self::Empty | Self::Any => return None,
        };
        Some(ty)
    }
}

impl Scalar {
    /// The scalar for a protobuf field kind; `None` for messages and enums.
    pub(super) fn of(kind: &prost_reflect::Kind) -> Option<Self> {
        use prost_reflect::Kind;
        let scalar = match kind {
            Kind::Double => Self::Double,
            Kind::Float => Self::Float,
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Self::Int32,
            Kind::Uint32 | Kind::Fixed32 => Self::Uint32,
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Self::Int64,
            Kind::Uint64 | Kind::Fixed64 => Self::Uint64,
            Kind::Bool => Self::Bool,
            Kind::String => Self::String,
            Kind::Bytes => Self::Bytes,
            Kind::Message(_) | Kind::Enum(_) => return None,
        };
        Some(scalar)
    }

    /// JSON Schema of the scalar's proto3 JSON form.
    pub(super) fn schema(self) -> Value {
        match self {
            Self::Double => json!({"type": "number", "format": "double"}),
            Self::Float => json!({"type": "number", "format": "float"}),
            Self::Int32 => json!({"type": "integer", "format": "int32"}),
            Self::Uint32 => json!({"type": "integer", "format": "uint32", "minimum": 0}),
            // 64-bit integers are strings on the wire; the format is an annotation typify keeps
            // as `String`, so the digits are the application's to parse.
            Self::Int64 => json!({"type": "string", "format": "int64"}),
            Self::Uint64 => json!({"type": "string", "format": "uint64"}),
            Self::Bool => json!({"type": "boolean"}),
            Self::String => json!({"type": "string"}),
            Self::Bytes => json!({"type": "string", "contentEncoding": "base64"}),
        }
    }

    /// The proto3 default value in JSON form.
    pub(super) fn zero(self) -> Value {
        match self {
            Self::Double | Self::Float => json!(0.0),
            Self::Int32 | Self::Uint32 => json!(0),
            Self::Int64 | Self::Uint64 => json!("0"),
            Self::Bool => json!(false),
            Self::String | Self::Bytes => json!(""),
        }
    }

    /// The Rust type typify produces for [`Self::schema`].
    pub(super) fn rust_type(self) -> TokenStream {
        match self {
            Self::Double => quote!(f64),
            Self::Float => quote!(f32),
            Self::Int32 => quote!(i32),
            Self::Uint32 => quote!(u32),
            Self::Bool => quote!(bool),
            Self::Int64 | Self::Uint64 | Self::String | Self::Bytes => {
                quote!(::std::string::String)
            }
        }
    }
}
