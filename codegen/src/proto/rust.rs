//! Rust source for messages with a `oneof`, which typify cannot represent from JSON Schema: a
//! struct whose oneofs are `#[serde(flatten)]`ed enums, one newtype variant per member (the
//! proto3 JSON form: members are sibling properties of the message). The enum's `Deserialize`
//! is emitted by hand so that two members at once, or none, are refused; serde's derive would
//! silently keep the first.

use std::collections::BTreeSet;

use heck::{ToPascalCase, ToSnakeCase};
use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::fields::{Container, FieldPlan, Presence, ValueType};
use super::schema::{MessagePlan, OneofPlan};
use super::well_known::WellKnown;
use crate::model::CustomType;
use crate::types_emit::TypeNames;

/// A message with a oneof, emitted by codegen under the name typify gives its definition.
#[derive(Debug, Clone)]
pub(super) struct OneofMessage {
    pub(super) plan: MessagePlan,
    /// The type's doc: a link to the message upstream and the revision.
    pub(super) doc: String,
    /// The message's line upstream, which each oneof enum's doc links to as well; `None` for a
    /// message the pinned file does not declare.
    pub(super) link: Option<String>,
}

impl CustomType for OneofMessage {
    fn emit(&self, names: &TypeNames) -> Result<TokenStream, String> {
        oneof_message_tokens(self, names)
    }
}

/// The struct, its oneof enums and their `Deserialize` impls for one message.
fn oneof_message_tokens(message: &OneofMessage, names: &TypeNames) -> Result<TokenStream, String> {
    let (plan, doc) = (&message.plan, &message.doc);
    let struct_ident = names
        .ident(&plan.definition)
        .ok_or_else(|| format!("{}: typify has no name for it", plan.full_name))?;
    let mut field_names = BTreeSet::new();
    let mut struct_fields = Vec::new();
    let mut enums = Vec::new();

    for oneof in &plan.oneofs {
        let enum_ident = ident(&format!("{struct_ident}{}", oneof.name.to_pascal_case()))?;
        let field_ident = unique_field(&oneof.full_name, &oneof.name, &mut field_names)?;
        struct_fields.push(quote! {
            #[serde(flatten)]
            pub #field_ident: #enum_ident,
        });
        enums.push(oneof_enum(message, oneof, &enum_ident, names)?);
    }
    for field in &plan.fields {
        let field_ident = unique_field(&field.full_name, &field.proto_name, &mut field_names)?;
        struct_fields.push(struct_field(field, &field_ident, names)?);
    }
    Ok(quote! {
        #[doc = #doc]
        #[derive(::serde::Serialize, ::serde::Deserialize, Clone, Debug)]
        pub struct #struct_ident {
            #(#struct_fields)*
        }
        #(#enums)*
    })
}

/// One plain field of the struct, with the serde attributes that give its proto3 JSON form (and
/// the proto field name accepted beside the JSON name).
fn struct_field(
    field: &FieldPlan,
    field_ident: &Ident,
    names: &TypeNames,
) -> Result<TokenStream, String> {
    let json_name = &field.json_name;
    let proto_name = &field.proto_name;
    let named = if field.proto_name == field.json_name {
        quote! { rename = #json_name }
    } else {
        quote! { rename = #json_name, alias = #proto_name }
    };
    let item = value_type(field, names)?;
    let tokens = match (&field.container, &field.presence) {
        (Container::List, _) => quote! {
            #[serde(#named, default, skip_serializing_if = "::std::vec::Vec::is_empty")]
            pub #field_ident: ::std::vec::Vec<#item>,
        },
        (Container::Map, _) => quote! {
            #[serde(#named, default, skip_serializing_if = "::std::collections::BTreeMap::is_empty")]
            pub #field_ident: ::std::collections::BTreeMap<::std::string::String, #item>,
        },
        (Container::Single, Presence::Required) => quote! {
            #[serde(#named)]
            pub #field_ident: #item,
        },
        // typify writes an optional Struct or ListValue as an empty-when-absent collection;
        // the oneof structs do the same so every message reads alike.
        (Container::Single, Presence::Optional)
            if matches!(field.value, ValueType::WellKnown(WellKnown::Struct)) =>
        {
            quote! {
                #[serde(#named, default, skip_serializing_if = "::serde_json::Map::is_empty")]
                pub #field_ident: #item,
            }
        }
        (Container::Single, Presence::Optional)
            if matches!(field.value, ValueType::WellKnown(WellKnown::ListValue)) =>
        {
            quote! {
                #[serde(#named, default, skip_serializing_if = "::std::vec::Vec::is_empty")]
                pub #field_ident: #item,
            }
        }
        (Container::Single, Presence::Optional) => quote! {
            #[serde(#named, default, skip_serializing_if = "::std::option::Option::is_none")]
            pub #field_ident: ::std::option::Option<#item>,
        },
        // An enum's zero value is the default of its type (`enum_schema`), a scalar's is Rust's.
        (Container::Single, Presence::Defaulted(_)) => quote! {
            #[serde(#named, default)]
            pub #field_ident: #item,
        },
    };
    Ok(tokens)
}

/// The enum of one oneof and its strict `Deserialize`.
fn oneof_enum(
    message: &OneofMessage,
    oneof: &OneofPlan,
    enum_ident: &Ident,
    names: &TypeNames,
) -> Result<TokenStream, String> {
    let mut variant_names = BTreeSet::new();
    let mut variants = Vec::new();
    let mut arms = Vec::new();
    for member in &oneof.members {
        let variant_name = not_a_keyword(member.proto_name.to_pascal_case());
        if !variant_names.insert(variant_name.clone()) {
            return Err(format!(
                "{}: variant `{variant_name}` is already taken in oneof {}",
                member.full_name, oneof.full_name
            ));
        }
        let variant = ident(&variant_name)?;
        let ty = value_type(member, names)?;
        let json_name = &member.json_name;
        // ProtoJSON parsers accept the proto field name beside the JSON name.
        let key = if member.proto_name == member.json_name {
            quote! { #json_name }
        } else {
            let proto_name = &member.proto_name;
            quote! { #json_name | #proto_name }
        };
        variants.push(quote! {
            #[serde(rename = #json_name)]
            #variant(#ty),
        });
        // JSON null unsets a member, except where null is itself the value.
        let null_is_a_value = matches!(
            member.value,
            ValueType::Null | ValueType::WellKnown(WellKnown::Value)
        );
        arms.push(if null_is_a_value {
            quote! { #key => ::std::option::Option::Some(#enum_ident::#variant(map.next_value::<#ty>()?)), }
        } else {
            quote! { #key => map.next_value::<::std::option::Option<#ty>>()?.map(#enum_ident::#variant), }
        });
    }
    let members = oneof
        .members
        .iter()
        .map(|member| format!("`{}`", member.json_name))
        .collect::<Vec<_>>()
        .join(", ");
    let expecting = format!("exactly one of {members} (oneof `{}`)", oneof.full_name);
    let too_many = format!("more than one of {members} (oneof `{}`)", oneof.full_name);
    let none = format!("missing one of {members} (oneof `{}`)", oneof.full_name);
    let owner = names
        .ident(&message.plan.definition)
        .map(Ident::to_string)
        .unwrap_or_default();
    let upstream = match &message.link {
        Some(link) => format!(" ([`{}`]({link}) upstream)", message.plan.full_name),
        None => String::new(),
    };
    let doc = format!(
        " Oneof `{}` of [`{owner}`]{upstream}: exactly one member is on the wire.",
        oneof.full_name
    );
    Ok(quote! {
        #[doc = #doc]
        #[derive(::serde::Serialize, Clone, Debug)]
        pub enum #enum_ident {
            #(#variants)*
        }
        impl<'de> ::serde::Deserialize<'de> for #enum_ident {
            fn deserialize<D>(deserializer: D) -> ::std::result::Result<Self, D::Error>
            where
                D: ::serde::Deserializer<'de>,
            {
                struct MemberVisitor;
                impl<'de> ::serde::de::Visitor<'de> for MemberVisitor {
                    type Value = #enum_ident;
                    fn expecting(&self, formatter: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        formatter.write_str(#expecting)
                    }
                    fn visit_map<A>(self, mut map: A) -> ::std::result::Result<Self::Value, A::Error>
                    where
                        A: ::serde::de::MapAccess<'de>,
                    {
                        let mut found: ::std::option::Option<#enum_ident> = ::std::option::Option::None;
                        while let ::std::option::Option::Some(key) = map.next_key::<::std::string::String>()? {
                            let member = match key.as_str() {
                                #(#arms)*
                                _ => {
                                    map.next_value::<::serde::de::IgnoredAny>()?;
                                    ::std::option::Option::None
                                }
                            };
                            if let ::std::option::Option::Some(member) = member {
                                if found.is_some() {
                                    return ::std::result::Result::Err(<A::Error as ::serde::de::Error>::custom(#too_many));
                                }
                                found = ::std::option::Option::Some(member);
                            }
                        }
                        found.ok_or_else(|| <A::Error as ::serde::de::Error>::custom(#none))
                    }
                }
                deserializer.deserialize_map(MemberVisitor)
            }
        }
    })
}

/// The Rust type of one value, boxed when a singular value would recurse into its parent.
fn value_type(field: &FieldPlan, names: &TypeNames) -> Result<TokenStream, String> {
    let named = |definition: &str| {
        names
            .ident(definition)
            .ok_or_else(|| format!("{}: typify has no name for `{definition}`", field.full_name))
    };
    let tokens = match &field.value {
        ValueType::Scalar(scalar) => scalar.rust_type(),
        ValueType::Null => quote!(()),
        ValueType::WellKnown(known) => known
            .rust_type()
            .ok_or_else(|| format!("{}: well-known type without a Rust form", field.full_name))?,
        ValueType::Enum { definition, .. } => {
            let name = named(definition)?;
            quote!(#name)
        }
        ValueType::Message { definition, .. } => {
            let name = named(definition)?;
            if field.boxed {
                quote!(::std::boxed::Box<#name>)
            } else {
                quote!(#name)
            }
        }
    };
    Ok(tokens)
}

/// A struct field identifier, refusing two proto fields that map to the same Rust name.
fn unique_field(
    element: &str,
    proto_name: &str,
    taken: &mut BTreeSet<String>,
) -> Result<Ident, String> {
    let name = not_a_keyword(proto_name.to_snake_case());
    if !taken.insert(name.clone()) {
        return Err(format!(
            "{element}: field `{name}` is already taken by another field of the same message"
        ));
    }
    ident(&name)
}

/// A keyword gets a trailing `_`, as typify does for its own fields and variants.
fn not_a_keyword(candidate: String) -> String {
    let reserved = matches!(
        candidate.as_str(),
        "gen" | "Self" | "self" | "super" | "crate"
    );
    if reserved || syn::parse_str::<Ident>(&candidate).is_err() {
        format!("{candidate}_")
    } else {
        candidate
    }
}

fn ident(name: &str) -> Result<Ident, String> {
    syn::parse_str::<Ident>(name).map_err(|_| format!("`{name}` is not a Rust identifier"))
}
