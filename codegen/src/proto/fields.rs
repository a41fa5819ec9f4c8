//! How one proto field appears on the proto3 JSON wire: its JSON name, container (single,
//! repeated, map), value type and presence. Computed once per field and read by both the
//! JSON Schema emitter and the Rust emitter, so the two cannot disagree.

use prost_reflect::{FieldDescriptor, Kind};
use serde_json::{Value, json};

use super::ProtoError;
use super::error::Place;
use super::locate::Locator;
use super::names::NameTable;
use super::options::Annotations;
use super::well_known::{Scalar, WellKnown};

/// What a single value of a field (a list item, a map value) is.
#[derive(Debug, Clone)]
pub(super) enum ValueType {
    Scalar(Scalar),
    /// `google.protobuf.NullValue`: JSON `null`.
    Null,
    /// An enum definition, with the name of its zero value (the proto3 default).
    Enum {
        definition: String,
        zero: String,
    },
    /// A well-known type mapped inline.
    WellKnown(WellKnown),
    /// A message definition, by key and proto full name.
    Message {
        definition: String,
        full_name: String,
    },
}

/// Repeated-ness of a field.
#[derive(Debug, Clone)]
pub(super) enum Container {
    Single,
    List,
    /// A `map<K, V>`; JSON object keys are always strings, whatever `K` is.
    Map,
}

/// How absence on the wire is treated.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Presence {
    /// REQUIRED on a field with presence (a message, a proto3 `optional`): must be on the wire.
    Required,
    /// REQUIRED on a field without presence (plain scalar, enum, repeated, map): proto3 JSON
    /// writers omit default values, so absence reads as this default and it is always written.
    Defaulted(Value),
    /// Not REQUIRED: absent stays absent.
    Optional,
}

/// One field, planned.
#[derive(Debug, Clone)]
pub(super) struct FieldPlan {
    /// The proto field name (`media_type`), source of the Rust field name.
    pub(super) proto_name: String,
    /// The lowerCamelCase JSON name (`mediaType`), or the `json_name` option.
    pub(super) json_name: String,
    pub(super) full_name: String,
    pub(super) container: Container,
    pub(super) value: ValueType,
    pub(super) presence: Presence,
    /// A singular message field whose type leads back to its own message: held in a `Box`,
    /// else the Rust type would be infinitely large.
    pub(super) boxed: bool,
}

impl FieldPlan {
    pub(super) fn new(
        locator: &Locator,
        field: &FieldDescriptor,
        names: &NameTable,
        annotations: &Annotations,
        is_recursive: &dyn Fn(&str, &str) -> bool,
    ) -> Result<Self, ProtoError> {
        let file = &locator.element(&field.parent_file(), field.path());
        if field.is_group() {
            return Err(unsupported(
                file,
                field.full_name(),
                "proto2 groups have no JSON mapping",
            ));
        }
        let (container, value_field) = if field.is_map() {
            let entry = match field.kind() {
                Kind::Message(entry) => entry,
                _ => {
                    return Err(unsupported(
                        file,
                        field.full_name(),
                        "map without an entry message",
                    ));
                }
            };
            (Container::Map, entry.map_entry_value_field())
        } else if field.is_list() {
            (Container::List, field.clone())
        } else {
            (Container::Single, field.clone())
        };
        let value = value_type(file, field.full_name(), &value_field.kind(), names)?;
        let presence = presence(field, &container, &value, annotations);
        let boxed = match (&container, &value) {
            (Container::Single, ValueType::Message { full_name, .. }) => {
                is_recursive(full_name, field.parent_message().full_name())
            }
            _ => false,
        };
        Ok(Self {
            proto_name: field.name().to_owned(),
            json_name: field.json_name().to_owned(),
            full_name: field.full_name().to_owned(),
            container,
            value,
            presence,
            boxed,
        })
    }

    /// The JSON Schema of the field's value on the wire (without the default).
    pub(super) fn schema(&self) -> Value {
        let item = self.value.schema();
        match self.container {
            Container::Single => item,
            Container::List => json!({"type": "array", "items": item}),
            Container::Map => json!({"type": "object", "additionalProperties": item}),
        }
    }
}

impl ValueType {
    /// The JSON Schema of one value: a `$ref` for definitions, inline for everything else.
    pub(super) fn schema(&self) -> Value {
        match self {
            Self::Scalar(scalar) => scalar.schema(),
            Self::Null => json!({"type": "null"}),
            Self::Enum { definition, .. } | Self::Message { definition, .. } => {
                json!({"$ref": format!("#/definitions/{definition}")})
            }
            // `Any` never gets here: `value_type` refuses it.
            Self::WellKnown(known) => known.schema().unwrap_or_else(|| json!({})),
        }
    }
}

/// Resolves a field kind to its value type; messages and enums must already be named.
pub(super) fn value_type(
    file: &Place,
    element: &str,
    kind: &Kind,
    names: &NameTable,
) -> Result<ValueType, ProtoError> {
    if let Some(scalar) = Scalar::of(kind) {
        return Ok(ValueType::Scalar(scalar));
    }
    match kind {
        Kind::Enum(descriptor) if descriptor.full_name() == "google.protobuf.NullValue" => {
            Ok(ValueType::Null)
        }
        Kind::Enum(descriptor) => {
            let definition = named(file, element, descriptor.full_name(), names)?;
            Ok(ValueType::Enum {
                definition,
                zero: descriptor.default_value().name().to_owned(),
            })
        }
        Kind::Message(descriptor) => match WellKnown::of(descriptor.full_name()) {
            Some(WellKnown::Any) => Err(unsupported(
                file,
                element,
                "google.protobuf.Any needs a type registry to map to JSON",
            )),
            Some(known) if known != WellKnown::Empty => Ok(ValueType::WellKnown(known)),
            _ => Ok(ValueType::Message {
                definition: named(file, element, descriptor.full_name(), names)?,
                full_name: descriptor.full_name().to_owned(),
            }),
        },
        _ => Err(unsupported(file, element, "unknown field kind")),
    }
}

fn named(
    file: &Place,
    element: &str,
    full_name: &str,
    names: &NameTable,
) -> Result<String, ProtoError> {
    names
        .definition(full_name)
        .map(str::to_owned)
        .ok_or_else(|| {
            unsupported(
                file,
                element,
                &format!("type {full_name} was not collected"),
            )
        })
}

fn presence(
    field: &FieldDescriptor,
    container: &Container,
    value: &ValueType,
    annotations: &Annotations,
) -> Presence {
    if !annotations.is_required(field) {
        return Presence::Optional;
    }
    match container {
        Container::List => Presence::Defaulted(json!([])),
        Container::Map => Presence::Defaulted(json!({})),
        Container::Single if field.supports_presence() => Presence::Required,
        Container::Single => Presence::Defaulted(zero_value(value)),
    }
}

/// The proto3 default of a field without presence, in JSON form.
fn zero_value(value: &ValueType) -> Value {
    match value {
        ValueType::Scalar(scalar) => scalar.zero(),
        ValueType::Enum { zero, .. } => json!(zero),
        ValueType::Null | ValueType::WellKnown(_) | ValueType::Message { .. } => Value::Null,
    }
}

pub(super) fn unsupported(place: &Place, element: &str, message: &str) -> ProtoError {
    ProtoError::Unsupported {
        place: place.clone(),
        element: element.to_owned(),
        message: message.to_owned(),
    }
}
