//! A generation run: load each selected revision, emit its module and its test support, build
//! each protocol's `generated/mod.rs` (the modules, the `Revision` list and `match_revision!`),
//! all in memory; the caller writes or checks the result. A run also says which files the pins
//! expect, so that files no pin produces are found (`output::plan`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Instant;

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

use crate::emit::{Revision, emit_revision, header, revision_label, type_names};
use crate::error::{CodegenError, Result};
use crate::frontend::{LoadedRevision, load};
use crate::model::{MethodKind, Peer, RevisionModel};
use crate::normalize::Treatments;
use crate::output::GeneratedFile;
use crate::sources::{DRAFT_FEATURE, Layout, RevisionSpec, Sources};
use crate::tag_dispatch::TagDispatch;

/// Which revisions to generate.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub protocol: Option<String>,
    pub revision: Option<String>,
}

impl Selection {
    fn includes(&self, spec: &RevisionSpec) -> bool {
        self.protocol.as_ref().is_none_or(|p| *p == spec.protocol)
            && self.revision.as_ref().is_none_or(|r| *r == spec.revision)
    }

    /// Whether every revision is generated (so the whole tree can be compared with the pins).
    pub fn is_everything(&self) -> bool {
        self.protocol.is_none() && self.revision.is_none()
    }
}

/// What one revision produced, for the per-revision line and `--report`.
#[derive(Debug, Clone)]
pub struct RevisionSummary {
    pub protocol: String,
    pub revision: String,
    pub file: PathBuf,
    pub definitions: usize,
    pub methods: usize,
    pub millis: u128,
    pub treatments: Treatments,
    pub replaced_unions: Vec<String>,
    pub tag_dispatched: Vec<TagDispatch>,
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct Generation {
    pub files: Vec<GeneratedFile>,
    pub summaries: Vec<RevisionSummary>,
    /// The directories whose `.rs` files are all generated, for the protocols this run covered;
    /// a file in one that the pins do not produce is an orphan.
    pub generated_dirs: Vec<PathBuf>,
    /// Every file the pins produce in those directories (this run's, and for a partial run the
    /// other pinned revisions' files, which it leaves alone).
    pub expected: BTreeSet<PathBuf>,
}

/// The directory of a protocol's generated revision modules.
pub fn modules_dir(protocol: &str) -> PathBuf {
    PathBuf::from("protocols")
        .join(protocol)
        .join("src")
        .join("generated")
}

/// The directory of a protocol's generated test support.
pub fn support_dir(protocol: &str) -> PathBuf {
    PathBuf::from("protocols")
        .join(protocol)
        .join("tests")
        .join("support")
        .join("generated")
}

/// Generates every selected revision plus the `mod.rs` files of each protocol touched. A
/// partial run lists in `mod.rs` the other pinned revisions whose module file exists in `layout`.
pub fn generate(sources: &Sources, layout: &Layout, selection: &Selection) -> Result<Generation> {
    let cache = layout.cache();
    let mut files = Vec::new();
    let mut summaries = Vec::new();
    let mut touched: Vec<&str> = Vec::new();
    for spec in sources.revisions.iter().filter(|s| selection.includes(s)) {
        let started = Instant::now();
        let LoadedRevision { model, treatments } = load(spec, sources, &cache)?;
        let emitted = emit_revision(&model)?;
        let file = modules_dir(&spec.protocol).join(format!("{}.rs", spec.module));
        files.push(GeneratedFile {
            path: file.clone(),
            contents: emitted.source,
        });
        files.push(GeneratedFile {
            path: support_dir(&spec.protocol).join(format!("{}.rs", spec.module)),
            contents: emit_support(&model)?,
        });
        summaries.push(RevisionSummary {
            protocol: spec.protocol.clone(),
            revision: spec.revision.clone(),
            file,
            definitions: emitted.definitions,
            methods: emitted.methods,
            millis: started.elapsed().as_millis(),
            treatments,
            replaced_unions: emitted.replaced,
            tag_dispatched: emitted.tag_dispatched,
        });
        if !touched.contains(&spec.protocol.as_str()) {
            touched.push(&spec.protocol);
        }
    }
    let mut expected = BTreeSet::new();
    let mut generated_dirs = Vec::new();
    let protocols: Vec<String> = if selection.is_everything() {
        protocol_crates(layout, sources)
    } else {
        touched.iter().map(|p| p.to_string()).collect()
    };
    for protocol in &protocols {
        let listed: Vec<&RevisionSpec> = sources
            .revisions
            .iter()
            .filter(|spec| spec.protocol == *protocol)
            .filter(|spec| {
                selection.includes(spec)
                    || layout
                        .root
                        .join(modules_dir(protocol))
                        .join(format!("{}.rs", spec.module))
                        .is_file()
            })
            .collect();
        for spec in sources.revisions.iter().filter(|s| s.protocol == *protocol) {
            expected.insert(modules_dir(protocol).join(format!("{}.rs", spec.module)));
            expected.insert(support_dir(protocol).join(format!("{}.rs", spec.module)));
        }
        if !listed.is_empty() {
            let modules = mod_file(protocol, &listed)?;
            let support = support_mod_file(protocol, &listed)?;
            expected.insert(modules.path.clone());
            expected.insert(support.path.clone());
            files.push(modules);
            files.push(support);
        }
        generated_dirs.push(modules_dir(protocol));
        generated_dirs.push(support_dir(protocol));
    }
    Ok(Generation {
        files,
        summaries,
        generated_dirs,
        expected,
    })
}

/// Every protocol crate of the workspace that has a generated directory or a pinned revision.
fn protocol_crates(layout: &Layout, sources: &Sources) -> Vec<String> {
    let mut protocols: BTreeSet<String> = sources
        .protocols()
        .into_iter()
        .map(str::to_string)
        .collect();
    if let Ok(entries) = std::fs::read_dir(layout.root.join("protocols")) {
        for entry in entries.flatten() {
            if entry.path().join("src").join("generated").is_dir() {
                protocols.insert(entry.file_name().to_string_lossy().into_owned());
            }
        }
    }
    protocols.into_iter().collect()
}

/// The variant naming a revision module (`v2025_06_18` → `V2025_06_18`, `v1_unstable` →
/// `V1Unstable`): upper camel case that keeps an underscore between digits.
pub fn revision_variant(module: &str) -> String {
    let mut out = String::with_capacity(module.len());
    let mut upper = true;
    let mut previous: Option<char> = None;
    let mut chars = module.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '_' {
            let next_is_digit = chars.peek().is_some_and(char::is_ascii_digit);
            if previous.is_some_and(|p| p.is_ascii_digit()) && next_is_digit {
                out.push('_');
            } else {
                upper = true;
            }
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
        previous = Some(c);
    }
    out
}

fn ident(name: &str, what: &str) -> Result<Ident> {
    syn::parse_str::<Ident>(name).map_err(|_| CodegenError::Config {
        path: "schema/sources.toml".into(),
        message: format!("{what} `{name}` is not a Rust identifier"),
    })
}

/// A `#[cfg(feature = "unstable")]` for a draft revision, nothing for a stable one.
fn gate(spec: &RevisionSpec) -> TokenStream {
    match spec.feature() {
        Some(feature) => quote! { #[cfg(feature = #feature)] },
        None => TokenStream::new(),
    }
}

fn formatted(file_header: &str, tokens: TokenStream, what: &str) -> Result<String> {
    let file: syn::File = syn::parse2(tokens).map_err(|e| CodegenError::Config {
        path: "schema/sources.toml".into(),
        message: format!("the generated {what} does not parse: {e}"),
    })?;
    Ok(format!("{file_header}{}", prettyplease::unparse(&file)))
}

const MOD_HEADER: &str =
    "// @generated by `cargo run -p codegen`; do not edit.\n// source: schema/sources.toml\n\n";

/// `protocols/<p>/src/generated/mod.rs`: the revision modules, the `Revision` enum listing them
/// and `match_revision!`, which expands a body once per revision, so code that must handle every
/// revision gets a compile error naming a newly pinned one instead of a forgotten match arm.
fn mod_file(protocol: &str, specs: &[&RevisionSpec]) -> Result<GeneratedFile> {
    let door = crate::door::path();
    let upper = protocol.to_uppercase();
    let mut modules = Vec::new();
    let mut variants = Vec::new();
    let mut all = Vec::new();
    let mut as_str = Vec::new();
    let mut module_names = Vec::new();
    let mut methods = Vec::new();
    let mut drafts = Vec::new();
    for spec in specs {
        let gate = gate(spec);
        let module = ident(&spec.module, "module")?;
        let variant = ident(&revision_variant(&spec.module), "revision variant")?;
        let module_name = &spec.module;
        let doc = format!(" `{}` (module [`{module_name}`]).", spec.revision);
        modules.push(quote! { #gate pub mod #module; });
        variants.push(quote! { #[doc = #doc] #gate #variant, });
        all.push(quote! { #gate Self::#variant, });
        as_str.push(quote! { #gate Self::#variant => #module::REVISION, });
        module_names.push(quote! { #gate Self::#variant => #module_name, });
        methods.push(quote! { #gate Self::#variant => #module::METHODS, });
        let draft = spec.feature().is_some();
        drafts.push(quote! { #gate Self::#variant => #draft, });
    }
    let count = revision_count(specs);
    let macros = revision_macros(specs)?;
    let module_doc = format!(
        " Generated {upper} revision modules, one per pinned revision, and [`Revision`], the list \
         of them."
    );
    let enum_doc = format!(
        " Every generated {upper} revision, in `schema/sources.toml` order; a draft one exists \
         only with the `{DRAFT_FEATURE}` feature. A `match` on it, or [`match_revision!`], makes \
         the compiler point at every place a newly pinned revision needs handling."
    );
    let tokens = quote! {
        #![doc = #module_doc]
        #(#modules)*

        #[doc = #enum_doc]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Revision { #(#variants)* }

        impl Revision {
            /// How many revisions this build has (a draft one counts only with the feature).
            pub const COUNT: usize = #count;

            /// Every generated revision, in `schema/sources.toml` order, which is also the
            /// derived order: a revision compares greater than every one pinned before it.
            pub const ALL: [Self; Self::COUNT] = [#(#all)*];

            /// The revision as the protocol spells it (the module's `REVISION`).
            pub const fn as_str(self) -> &'static str {
                match self { #(#as_str)* }
            }

            /// The generated revision `text` names, if there is one.
            pub fn from_text(text: &str) -> ::std::option::Option<Self> {
                Self::ALL.iter().copied().find(|revision| revision.as_str() == text)
            }

            /// The name of the revision's generated module.
            pub const fn module(self) -> &'static str {
                match self { #(#module_names)* }
            }

            /// The revision's method table.
            pub fn methods(self) -> &'static [#door::MethodSpec] {
                match self { #(#methods)* }
            }

            /// Whether upstream still marks the revision draft.
            pub const fn is_draft(self) -> bool {
                match self { #(#drafts)* }
            }
        }

        impl ::std::fmt::Display for Revision {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        #macros
    };
    Ok(GeneratedFile {
        path: modules_dir(protocol).join("mod.rs"),
        contents: formatted(MOD_HEADER, tokens, "mod.rs")?,
    })
}

/// `Revision::COUNT`: the stable revisions, plus the drafts when the draft feature is on, so
/// `ALL` can be an array (iterated by value) in every feature set.
fn revision_count(specs: &[&RevisionSpec]) -> TokenStream {
    let drafts = specs.iter().filter(|spec| spec.feature().is_some()).count();
    let stable = Literal::usize_unsuffixed(specs.len() - drafts);
    if drafts == 0 {
        return quote! { #stable };
    }
    let drafts = Literal::usize_unsuffixed(drafts);
    quote! { #stable + if cfg!(feature = #DRAFT_FEATURE) { #drafts } else { 0 } }
}

/// `match_revision!(revision, module => body)`: a `match` over `Revision` whose every arm
/// evaluates `body` with `module` naming that revision's generated module. Defined once per
/// feature set in the crate that owns the modules, since a `cfg` inside an exported macro would
/// be judged by the crate expanding it.
fn revision_macros(specs: &[&RevisionSpec]) -> Result<TokenStream> {
    let arms = |with_drafts: bool| -> Result<Vec<TokenStream>> {
        specs
            .iter()
            .filter(|spec| with_drafts || spec.feature().is_none())
            .map(|spec| {
                let module = ident(&spec.module, "module")?;
                let variant = ident(&revision_variant(&spec.module), "revision variant")?;
                Ok(quote! {
                    $crate::generated::Revision::#variant => {
                        use $crate::generated::#module as $module;
                        $body
                    }
                })
            })
            .collect()
    };
    let doc = " Expands to a `match` on a [`generated::Revision`](crate::generated::Revision) \
               whose every arm evaluates `$body` with `$module` naming that revision's generated \
               module, e.g. `match_revision!(revision, module => module::METHODS.len())`.";
    let define = |arms: Vec<TokenStream>| {
        quote! {
            #[doc = #doc]
            #[macro_export]
            macro_rules! match_revision {
                ($revision:expr, $module:ident => $body:expr) => {
                    match $revision { #(#arms)* }
                };
            }
        }
    };
    let has_drafts = specs.iter().any(|spec| spec.feature().is_some());
    if !has_drafts {
        return Ok(define(arms(false)?));
    }
    let stable = define(arms(false)?);
    let everything = define(arms(true)?);
    Ok(quote! {
        #[cfg(feature = #DRAFT_FEATURE)]
        #everything
        #[cfg(not(feature = #DRAFT_FEATURE))]
        #stable
    })
}

/// `protocols/<p>/tests/support/generated/mod.rs`: the revisions' test support, listed.
fn support_mod_file(protocol: &str, specs: &[&RevisionSpec]) -> Result<GeneratedFile> {
    let door = crate::door::path();
    let mut modules = Vec::new();
    let mut entries = Vec::new();
    for spec in specs {
        let gate = gate(spec);
        let module = ident(&spec.module, "module")?;
        modules.push(quote! { #gate pub mod #module; });
        entries.push(quote! { #gate #module::REVISION, });
    }
    let doc = format!(
        " Test support generated for every pinned {} revision: what `codegen::samples` needs to \
         check a revision against its pinned source (method table, dispatch to each handler \
         method, round trips, examples, wire validation), so pinning a revision puts it under \
         test with no test code written.",
        protocol.to_uppercase()
    );
    let tokens = quote! {
        #![doc = #doc]
        #![allow(dead_code, clippy::all)]
        #(#modules)*

        /// Every generated revision's test support, in `schema/sources.toml` order.
        pub static REVISIONS: &[::codegen::samples::GeneratedRevision] = &[#(#entries)*];

        /// The plain description `codegen::samples` reads of a method table.
        pub fn methods_of(table: &[#door::MethodSpec]) -> ::std::vec::Vec<::codegen::samples::Method> {
            table.iter().map(|spec| ::codegen::samples::Method {
                name: spec.name,
                request: spec.kind == #door::MethodKind::Request,
                from_client: spec.direction.from_client(),
                from_server: spec.direction.from_server(),
                params_optional: spec.params_optional,
                json_rpc: spec.json_rpc,
                rest_routes: spec.http.len(),
            }).collect()
        }

        /// What a recording handler answers every request with.
        pub fn recorded() -> #door::ErrorObject {
            #door::ErrorObject {
                code: ::codegen::samples::RECORDED,
                message: ::std::borrow::Cow::Borrowed("recorded"),
                data: ::std::option::Option::None,
            }
        }

        /// A dispatcher's answer, whatever the side's dispatcher returns.
        pub trait IntoReply {
            fn into_reply(self) -> ::std::result::Result<(), #door::ErrorObject>;
        }

        impl IntoReply for #door::Reply {
            fn into_reply(self) -> ::std::result::Result<(), #door::ErrorObject> {
                self.map(|_| ())
            }
        }

        impl IntoReply for #door::Answer {
            fn into_reply(self) -> ::std::result::Result<(), #door::ErrorObject> {
                match self {
                    #door::Answer::Reply(reply) => reply.map(|_| ()),
                    #door::Answer::Stream(_) => ::std::result::Result::Ok(()),
                }
            }
        }

        /// How a request dispatch ended, read against the calls the recorder saw.
        pub fn request_outcome(reply: impl IntoReply, calls: ::codegen::samples::Calls) -> ::codegen::samples::Dispatched {
            match reply.into_reply() {
                ::std::result::Result::Err(error) if error.code == ::codegen::samples::RECORDED => calls.into_handled(),
                ::std::result::Result::Err(error) => ::codegen::samples::Dispatched::Refused { code: error.code, message: error.message.into_owned() },
                ::std::result::Result::Ok(()) => ::codegen::samples::Dispatched::Refused { code: 0, message: "answered without the recorder".into() },
            }
        }

        /// How a notification dispatch ended.
        pub fn notification_outcome(delivered: ::std::result::Result<(), #door::DispatchError>, calls: ::codegen::samples::Calls) -> ::codegen::samples::Dispatched {
            match delivered {
                ::std::result::Result::Ok(()) => calls.into_handled(),
                ::std::result::Result::Err(error) => ::codegen::samples::Dispatched::Refused { code: error.code(), message: error.to_string() },
            }
        }

        /// Decodes `value` as `T` and encodes it again.
        pub fn round_trip<T: ::serde::Serialize + ::serde::de::DeserializeOwned>(value: ::serde_json::Value) -> ::std::result::Result<::serde_json::Value, ::std::string::String> {
            let typed: T = ::serde_json::from_value(value).map_err(|error| error.to_string())?;
            ::serde_json::to_value(&typed).map_err(|error| error.to_string())
        }
    };
    Ok(GeneratedFile {
        path: support_dir(protocol).join("mod.rs"),
        contents: formatted(MOD_HEADER, tokens, "test support mod.rs")?,
    })
}

/// `protocols/<p>/tests/support/generated/<module>.rs`: a handler recording every call for each
/// side, the dispatch through the generated dispatchers, and a round trip through the type of
/// every definition.
pub fn emit_support(model: &RevisionModel) -> Result<String> {
    let door = crate::door::path();
    let unions: BTreeSet<&str> = model
        .message_unions
        .iter()
        .map(|union| union.definition.as_str())
        .collect();
    let typed: BTreeMap<String, serde_json::Value> = model
        .definitions
        .iter()
        .filter(|(name, _)| !unions.contains(name.as_str()))
        .map(|(name, schema)| (name.clone(), schema.clone()))
        .collect();
    let names = type_names(model, &typed)?;
    let revision = Revision::new(model, names)?;
    let crate_name = format_ident!("protocols_{}", model.protocol);
    let module = ident(&model.module, "module")?;
    let module_name = &model.module;
    let protocol = &model.protocol;
    let peers = &model.peers;
    let mut impls = Vec::new();
    let mut arms = Vec::new();
    for (side, receiver, sender) in [
        (&peers.server, quote! { Server }, Peer::Client),
        (&peers.client, quote! { Client }, Peer::Server),
    ] {
        let received: Vec<_> = revision
            .bound_rows()
            .filter(|rpc| rpc.row.direction.sent_by(sender))
            .collect();
        if received.is_empty() {
            continue;
        }
        let trait_ident = side.clone();
        let lower = side.to_string().to_lowercase();
        let request_dispatcher = format_ident!("dispatch_{}_request", lower);
        let notification_dispatcher = format_ident!("dispatch_{}_notification", lower);
        let mut seen = BTreeSet::new();
        let methods = received
            .iter()
            .filter(|rpc| seen.insert(rpc.handler.to_string()))
            .map(|rpc| {
                let handler = &rpc.handler;
                let konst = &rpc.konst;
                let params = rpc.params_arg_type().map(|ty| quote! { params: #ty, });
                let record = if rpc.params.is_some() {
                    quote! { cx.record(rev::methods::#konst, &params) }
                } else {
                    quote! { cx.record_bare(rev::methods::#konst) }
                };
                match rpc.row.kind {
                    MethodKind::Request => {
                        let result = rpc.result_type();
                        let output = if rpc.row.streaming.results() {
                            quote! { #door::ResultStream<#result> }
                        } else {
                            result
                        };
                        quote! {
                            fn #handler(&self, #params cx: &Self::Context) -> impl ::std::future::Future<Output = ::std::result::Result<#output, #door::ErrorObject>> + ::std::marker::Send {
                                #record;
                                ::std::future::ready(::std::result::Result::Err(super::recorded()))
                            }
                        }
                    }
                    MethodKind::Notification => quote! {
                        fn #handler(&self, #params cx: &Self::Context) -> impl ::std::future::Future<Output = ()> + ::std::marker::Send {
                            #record;
                            ::std::future::ready(())
                        }
                    },
                }
            });
        impls.push(quote! {
            impl rev::#trait_ident for Recorder {
                type Context = ::codegen::samples::Calls;
                #(#methods)*
            }
        });
        arms.push(quote! {
            (::codegen::samples::Receiver::#receiver, true) => {
                let calls = ::codegen::samples::Calls::default();
                let reply = ::codegen::samples::ready(rev::#request_dispatcher(&Recorder, method, params, &calls));
                super::request_outcome(reply, calls)
            }
            (::codegen::samples::Receiver::#receiver, false) => {
                let calls = ::codegen::samples::Calls::default();
                let delivered = ::codegen::samples::ready(rev::#notification_dispatcher(&Recorder, method, params, &calls));
                super::notification_outcome(delivered, calls)
            }
        });
    }
    let round_trips = revision.names.iter().map(|(definition, ident)| {
        quote! { #definition => ::std::option::Option::Some(super::round_trip::<types::#ident>(value)), }
    });
    let doc = format!(
        " Test support for {}: every call recorded, every definition round-tripped.",
        revision_label(model)
    );
    let tokens = quote! {
        #![doc = #doc]
        use #crate_name::generated::#module as rev;
        use rev::types;

        /// The revision's entry in [`super::REVISIONS`].
        pub const REVISION: ::codegen::samples::GeneratedRevision = ::codegen::samples::GeneratedRevision {
            protocol: #protocol,
            revision: rev::REVISION,
            module: #module_name,
            methods,
            dispatch,
            round_trip,
        };

        fn methods() -> ::std::vec::Vec<::codegen::samples::Method> {
            super::methods_of(rev::METHODS)
        }

        /// A handler recording each call (its method and params, encoded again) and answering
        /// every request with `recorded()`.
        struct Recorder;
        #(#impls)*

        /// Runs one message through the generated dispatcher of the peer receiving it.
        fn dispatch(receiver: ::codegen::samples::Receiver, request: bool, method: &str, params: ::std::option::Option<&::serde_json::value::RawValue>) -> ::codegen::samples::Dispatched {
            #[allow(unreachable_patterns)]
            match (receiver, request) {
                #(#arms)*
                _ => ::codegen::samples::Dispatched::NoHandler,
            }
        }

        /// Decodes `value` as the type of `definition` and encodes it again; `None` for a name
        /// that is no type.
        fn round_trip(definition: &str, value: ::serde_json::Value) -> ::std::option::Option<::std::result::Result<::serde_json::Value, ::std::string::String>> {
            match definition {
                #(#round_trips)*
                _ => ::std::option::Option::None,
            }
        }
    };
    formatted(&header(model), tokens, "test support")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(revision: &str, module: &str, draft: bool) -> RevisionSpec {
        toml::from_str(&format!(
            "protocol = \"acp\"\nrevision = \"{revision}\"\nmodule = \"{module}\"\n\
             front_end = \"acp\"\ninputs = []\n{}",
            if draft { "stability = \"draft\"" } else { "" }
        ))
        .unwrap()
    }

    #[test]
    fn the_mod_file_gates_exactly_the_draft_revisions_behind_unstable() {
        let (v1, v2) = (spec("v1", "v1", false), spec("v2", "v2", true));
        let contents = mod_file("acp", &[&v1, &v2]).unwrap().contents;
        assert!(
            contents.contains("\npub mod v1;\n#[cfg(feature = \"unstable\")]\npub mod v2;\n"),
            "{contents}"
        );
        assert!(
            contents.contains("    #[cfg(feature = \"unstable\")]\n    V2,\n"),
            "{contents}"
        );
        assert!(
            contents.contains("#[cfg(not(feature = \"unstable\"))]"),
            "{contents}"
        );
    }

    #[test]
    fn revision_variants_are_camel_case_keeping_underscores_between_digits() {
        for (module, variant) in [
            ("v2025_06_18", "V2025_06_18"),
            ("v1_unstable", "V1Unstable"),
            ("v0_3_0", "V0_3_0"),
            ("v1", "V1"),
            ("v2_unstable", "V2Unstable"),
        ] {
            assert_eq!(revision_variant(module), variant);
        }
    }
}
