//! Rust source for messages with a `oneof`, which typify cannot represent from JSON Schema: a
//! struct whose oneofs are `#[serde(flatten)]`ed enums, one newtype variant per member (the
//! proto3 JSON form: members are sibling properties of the message). The enum's `Deserialize`
//! is emitted by hand so that two members at once, or none, are refused; serde's derive would
//! silently keep the first.

use std::collections::BTreeSet;
use std::path::Path;

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::ProtoError;
use super::fields::{Container, FieldPlan, Presence, ValueType, unsupported};
use super::names::{NameTable, rust_field_name, rust_type_name, rust_variant_name};
use super::schema::{MessagePlan, OneofPlan};
use super::well_known::WellKnown;

/// What every emitted item needs besides its own message.
pub(super) struct RustContext<'a> {
    pub(super) file: &'a Path,
    /// `a2a 1.0.1, from a2a/1.0.1/a2a.proto`: the provenance named in doc comments.
    pub(super) provenance: String,
    /// Whether a message type (by full name) leads back to the given message through singular
    /// fields, so that holding it inline would make an infinitely sized type.
    pub(super) is_recursive: &'a dyn Fn(&str, &str) -> bool,
}

/// The struct, its oneof enums and their `Deserialize` impls for one message, formatted.
pub(super) fn oneof_message_source(
    plan: &MessagePlan,
    context: &RustContext<'_>,
    names: &mut NameTable,
) -> Result<String, ProtoError> {
    let struct_name = rust_type_name(&plan.definition);
    let struct_ident = ident(context, &plan.full_name, &struct_name)?;
    let mut field_names = BTreeSet::new();
    let mut struct_fields = Vec::new();
    let mut default_fns = Vec::new();
    let mut enums = Vec::new();

    for oneof in &plan.oneofs {
        let enum_name = rust_type_name(&format!("{}_{}", plan.definition, oneof.name));
        names.claim_rust(context.file, &oneof.full_name, &enum_name)?;
        let enum_ident = ident(context, &oneof.full_name, &enum_name)?;
        let field_ident = unique_field(context, &oneof.full_name, &oneof.name, &mut field_names)?;
        struct_fields.push(quote! {
            #[serde(flatten)]
            pub #field_ident: #enum_ident,
        });
        enums.push(oneof_enum(plan, oneof, &enum_ident, context)?);
    }
    for field in &plan.fields {
        let field_ident = unique_field(
            context,
            &field.full_name,
            &field.proto_name,
            &mut field_names,
        )?;
        let (tokens, default_fn) = struct_field(plan, field, &field_ident, &struct_name, context)?;
        struct_fields.push(tokens);
        default_fns.extend(default_fn);
    }

    let doc = format!(
        " Message `{}` (definition `{}`) of {}; each oneof is a flattened enum.",
        plan.full_name, plan.definition, context.provenance
    );
    let defaults = (!default_fns.is_empty()).then(|| {
        quote! {
            impl #struct_ident {
                #(#default_fns)*
            }
        }
    });
    let tokens = quote! {
        #[doc = #doc]
        #[derive(::serde::Serialize, ::serde::Deserialize, Clone, Debug)]
        pub struct #struct_ident {
            #(#struct_fields)*
        }
        #defaults
        #(#enums)*
    };
    let file = syn::parse2::<syn::File>(tokens).map_err(|error| {
        unsupported(
            context.file,
            &plan.full_name,
            &format!("emitted Rust does not parse: {error}"),
        )
    })?;
    Ok(prettyplease::unparse(&file))
}

/// One plain field of the struct, with the serde attributes that give its proto3 JSON form,
/// and the default function an enum field without presence needs.
fn struct_field(
    plan: &MessagePlan,
    field: &FieldPlan,
    field_ident: &Ident,
    struct_name: &str,
    context: &RustContext<'_>,
) -> Result<(TokenStream, Option<TokenStream>), ProtoError> {
    let json_name = &field.json_name;
    let item = value_type(&field.value, &plan.full_name, &field.container, context)?;
    let field_tokens = match (&field.container, &field.presence) {
        (Container::List, _) => quote! {
            #[serde(rename = #json_name, default, skip_serializing_if = "::std::vec::Vec::is_empty")]
            pub #field_ident: ::std::vec::Vec<#item>,
        },
        (Container::Map, _) => quote! {
            #[serde(rename = #json_name, default, skip_serializing_if = "::std::collections::BTreeMap::is_empty")]
            pub #field_ident: ::std::collections::BTreeMap<::std::string::String, #item>,
        },
        (Container::Single, Presence::Required) => quote! {
            #[serde(rename = #json_name)]
            pub #field_ident: #item,
        },
        // typify writes an optional Struct or ListValue as an empty-when-absent collection;
        // the oneof structs do the same so every message reads alike.
        (Container::Single, Presence::Optional)
            if matches!(field.value, ValueType::WellKnown(WellKnown::Struct)) =>
        {
            quote! {
                #[serde(rename = #json_name, default, skip_serializing_if = "::serde_json::Map::is_empty")]
                pub #field_ident: #item,
            }
        }
        (Container::Single, Presence::Optional)
            if matches!(field.value, ValueType::WellKnown(WellKnown::ListValue)) =>
        {
            quote! {
                #[serde(rename = #json_name, default, skip_serializing_if = "::std::vec::Vec::is_empty")]
                pub #field_ident: #item,
            }
        }
        (Container::Single, Presence::Optional) => quote! {
            #[serde(rename = #json_name, default, skip_serializing_if = "::std::option::Option::is_none")]
            pub #field_ident: ::std::option::Option<#item>,
        },
        (Container::Single, Presence::Defaulted(_)) => {
            if let ValueType::Enum { zero, .. } = &field.value {
                let fn_name = format!("default_{field_ident}");
                let fn_ident = ident(context, &field.full_name, &fn_name)?;
                let variant = ident(context, &field.full_name, &rust_variant_name(zero))?;
                let path = format!("{struct_name}::{fn_name}");
                let default_fn = quote! {
                    fn #fn_ident() -> #item {
                        #item::#variant
                    }
                };
                let tokens = quote! {
                    #[serde(rename = #json_name, default = #path)]
                    pub #field_ident: #item,
                };
                return Ok((tokens, Some(default_fn)));
            }
            quote! {
                #[serde(rename = #json_name, default)]
                pub #field_ident: #item,
            }
        }
    };
    Ok((field_tokens, None))
}

/// The enum of one oneof and its strict `Deserialize`.
fn oneof_enum(
    plan: &MessagePlan,
    oneof: &OneofPlan,
    enum_ident: &Ident,
    context: &RustContext<'_>,
) -> Result<TokenStream, ProtoError> {
    let mut variant_names = BTreeSet::new();
    let mut variants = Vec::new();
    let mut arms = Vec::new();
    for member in &oneof.members {
        let variant_name = rust_variant_name(&member.proto_name);
        if !variant_names.insert(variant_name.clone()) {
            return Err(ProtoError::NameCollision {
                file: context.file.to_owned(),
                element: member.full_name.clone(),
                name: variant_name,
                other: oneof.full_name.clone(),
            });
        }
        let variant = ident(context, &member.full_name, &variant_name)?;
        let ty = value_type(&member.value, &plan.full_name, &member.container, context)?;
        let json_name = &member.json_name;
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
            quote! { #json_name => ::std::option::Option::Some(#enum_ident::#variant(map.next_value::<#ty>()?)), }
        } else {
            quote! { #json_name => map.next_value::<::std::option::Option<#ty>>()?.map(#enum_ident::#variant), }
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
    let doc = format!(
        " Oneof `{}` of {}: exactly one member is on the wire.",
        oneof.full_name, context.provenance
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
fn value_type(
    value: &ValueType,
    parent: &str,
    container: &Container,
    context: &RustContext<'_>,
) -> Result<TokenStream, ProtoError> {
    let tokens = match value {
        ValueType::Scalar(scalar) => scalar.rust_type(),
        ValueType::Null => quote!(()),
        ValueType::WellKnown(known) => known.rust_type().ok_or_else(|| {
            unsupported(context.file, parent, "well-known type without a Rust form")
        })?,
        ValueType::Enum { definition, .. } => {
            let name = ident(context, parent, &rust_type_name(definition))?;
            quote!(#name)
        }
        ValueType::Message {
            definition,
            full_name,
        } => {
            let name = ident(context, parent, &rust_type_name(definition))?;
            let singular = matches!(container, Container::Single);
            if singular && (context.is_recursive)(full_name, parent) {
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
    context: &RustContext<'_>,
    element: &str,
    proto_name: &str,
    taken: &mut BTreeSet<String>,
) -> Result<Ident, ProtoError> {
    let name = rust_field_name(proto_name);
    if !taken.insert(name.clone()) {
        return Err(ProtoError::NameCollision {
            file: context.file.to_owned(),
            element: element.to_owned(),
            name,
            other: "another field of the same message".to_owned(),
        });
    }
    ident(context, element, &name)
}

fn ident(context: &RustContext<'_>, element: &str, name: &str) -> Result<Ident, ProtoError> {
    syn::parse_str::<Ident>(name).map_err(|_| {
        unsupported(
            context.file,
            element,
            &format!("`{name}` is not a Rust identifier"),
        )
    })
}
