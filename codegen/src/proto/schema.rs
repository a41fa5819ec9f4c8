//! The JSON Schema definition of each message and enum, per the proto3 JSON mapping: properties
//! under their JSON names, REQUIRED fields with presence in `required`, REQUIRED fields without
//! presence carrying their proto default, and each oneof as "exactly one of its members".

use prost_reflect::{EnumDescriptor, MessageDescriptor};
use serde_json::{Map, Value, json};

use super::ProtoError;
use super::fields::{FieldPlan, Presence};
use super::locate::Locator;
use super::names::NameTable;
use super::options::Annotations;

/// A message split into its plain fields and its (non-synthetic) oneofs.
#[derive(Debug, Clone)]
pub(super) struct MessagePlan {
    pub(super) full_name: String,
    pub(super) definition: String,
    pub(super) fields: Vec<FieldPlan>,
    pub(super) oneofs: Vec<OneofPlan>,
}

/// One oneof: on the wire its members are sibling properties of the message.
#[derive(Debug, Clone)]
pub(super) struct OneofPlan {
    pub(super) name: String,
    pub(super) full_name: String,
    pub(super) members: Vec<FieldPlan>,
}

impl MessagePlan {
    pub(super) fn new(
        locator: &Locator,
        message: &MessageDescriptor,
        definition: &str,
        names: &NameTable,
        annotations: &Annotations,
        is_recursive: &dyn Fn(&str, &str) -> bool,
    ) -> Result<Self, ProtoError> {
        let mut fields = Vec::new();
        for field in message.fields() {
            let in_real_oneof = field
                .containing_oneof()
                .is_some_and(|oneof| !oneof.is_synthetic());
            if !in_real_oneof {
                fields.push(FieldPlan::new(
                    locator,
                    &field,
                    names,
                    annotations,
                    is_recursive,
                )?);
            }
        }
        let mut oneofs = Vec::new();
        for oneof in message.oneofs().filter(|oneof| !oneof.is_synthetic()) {
            let members = oneof
                .fields()
                .map(|field| FieldPlan::new(locator, &field, names, annotations, is_recursive))
                .collect::<Result<Vec<_>, _>>()?;
            oneofs.push(OneofPlan {
                name: oneof.name().to_owned(),
                full_name: oneof.full_name().to_owned(),
                members,
            });
        }
        Ok(Self {
            full_name: message.full_name().to_owned(),
            definition: definition.to_owned(),
            fields,
            oneofs,
        })
    }

    /// The message's JSON Schema.
    pub(super) fn schema(&self) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for field in &self.fields {
            let mut schema = field.schema();
            match &field.presence {
                Presence::Required => required.push(json!(field.json_name)),
                Presence::Defaulted(default) => {
                    if let Value::Object(object) = &mut schema {
                        object.insert("default".to_owned(), default.clone());
                    }
                }
                Presence::Optional => {}
            }
            properties.insert(field.json_name.clone(), schema);
        }
        for member in self.oneofs.iter().flat_map(|oneof| &oneof.members) {
            properties.insert(member.json_name.clone(), member.schema());
        }
        let mut schema = Map::new();
        schema.insert("type".to_owned(), json!("object"));
        schema.insert("properties".to_owned(), Value::Object(properties));
        if !required.is_empty() {
            schema.insert("required".to_owned(), Value::Array(required));
        }
        let exactly_one: Vec<Value> = self.oneofs.iter().map(OneofPlan::schema).collect();
        match exactly_one.len() {
            0 => {}
            1 => {
                if let Some(Value::Object(oneof)) = exactly_one.into_iter().next() {
                    schema.extend(oneof);
                }
            }
            _ => {
                schema.insert("allOf".to_owned(), Value::Array(exactly_one));
            }
        }
        Value::Object(schema)
    }

    /// Each field's other accepted name on input, by JSON name: the proto field name, which
    /// ProtoJSON parsers accept beside the lowerCamelCase one.
    pub(super) fn aliases(&self) -> std::collections::BTreeMap<String, String> {
        self.fields
            .iter()
            .chain(self.oneofs.iter().flat_map(|oneof| &oneof.members))
            .filter(|field| field.proto_name != field.json_name)
            .map(|field| (field.json_name.clone(), field.proto_name.clone()))
            .collect()
    }
}

impl OneofPlan {
    /// `oneOf` over "this member is present": with mutually exclusive branches, exactly one
    /// member may be (and must be) on the wire.
    fn schema(&self) -> Value {
        let branches: Vec<Value> = self
            .members
            .iter()
            .map(|member| json!({"required": [member.json_name]}))
            .collect();
        json!({"oneOf": branches})
    }
}

/// An enum's JSON Schema: its value names as the proto spells them, in declaration order, and
/// its zero value (the proto3 default) as the type's default, so a field without presence can
/// default to it.
pub(super) fn enum_schema(descriptor: &EnumDescriptor) -> Value {
    let names: Vec<Value> = descriptor
        .values()
        .map(|value| json!(value.name()))
        .collect();
    json!({"type": "string", "enum": names, "default": descriptor.default_value().name()})
}
