//! Front ends: turn one pinned revision's files into a `RevisionModel` (definitions normalized
//! for typify, where each is upstream, the method table derived from the source) and say what
//! is protocol-specific: how the peers are named, which upstream unions the method table
//! replaces, which peers' messages still get method-dispatched enums. JSON Schema protocols share
//! loading and normalization; each protocol derives its method table its own way.

mod a2a;
mod acp;
mod mcp;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{CodegenError, Result};
use crate::model::{
    MessageUnion, Origins, Peer, Peers, RevisionModel, SourceFile, UnionKind, browse_url,
};
use crate::normalize::{Definitions, Treatments, normalize};
use crate::proto::ProtoRevision;
use crate::schema_doc::{SchemaDoc, definition_lines, ref_target, walk_with_pointer};
use crate::sources::{FrontEnd, RevisionSpec, Role, Sources};
use crate::sync::read_cached;

/// A front end's output plus what normalization had to do to it.
#[derive(Debug, Clone)]
pub struct LoadedRevision {
    pub model: RevisionModel,
    pub treatments: Treatments,
}

/// What a JSON Schema front end knows about its protocol that the schema does not say.
struct Protocol {
    /// How the client and the server are named in generated items.
    peers: (&'static str, &'static str),
    /// Upstream unions of one peer's messages, by definition name.
    unions: &'static [(&'static str, Peer, UnionKind)],
    /// Peers whose messages get method-dispatched enums though no definition references them.
    dispatched_enums: &'static [Peer],
    methods: &'static MethodDeriver,
}

const MCP: Protocol = Protocol {
    peers: ("Client", "Server"),
    unions: &[
        ("ClientRequest", Peer::Client, UnionKind::Request),
        ("ClientNotification", Peer::Client, UnionKind::Notification),
        ("ClientResult", Peer::Client, UnionKind::Result),
        ("ServerRequest", Peer::Server, UnionKind::Request),
        ("ServerNotification", Peer::Server, UnionKind::Notification),
        ("ServerResult", Peer::Server, UnionKind::Result),
    ],
    // The MCP glue re-expresses what a server sends in the revision its peer speaks by decoding
    // it as that revision's `ServerRequest`/`ServerNotification`/`ServerResult` (`wire.rs`).
    dispatched_enums: &[Peer::Server],
    methods: &mcp::methods,
};

const ACP: Protocol = Protocol {
    peers: ("Client", "Agent"),
    unions: &[
        ("ClientRequest", Peer::Client, UnionKind::Request),
        ("ClientNotification", Peer::Client, UnionKind::Notification),
        ("ClientResponse", Peer::Client, UnionKind::Result),
        ("AgentRequest", Peer::Server, UnionKind::Request),
        ("AgentNotification", Peer::Server, UnionKind::Notification),
        ("AgentResponse", Peer::Server, UnionKind::Result),
    ],
    dispatched_enums: &[],
    methods: &acp::methods,
};

const A2A_JSON: Protocol = Protocol {
    peers: A2A_PEERS,
    unions: &[("A2ARequest", Peer::Client, UnionKind::Request)],
    dispatched_enums: &[],
    methods: &a2a::methods,
};

const A2A_PEERS: (&str, &str) = ("Client", "Agent");

/// Loads one revision through its front end.
pub fn load(spec: &RevisionSpec, sources: &Sources, cache: &Path) -> Result<LoadedRevision> {
    match spec.front_end {
        FrontEnd::Mcp => load_json(spec, sources, cache, &MCP),
        FrontEnd::Acp => load_json(spec, sources, cache, &ACP),
        FrontEnd::A2aJson => load_json(spec, sources, cache, &A2A_JSON),
        FrontEnd::A2aProto => load_proto(spec, sources, cache),
    }
}

/// What a JSON Schema front end sees when deriving its method table.
#[derive(Debug)]
pub struct MethodInput<'a> {
    pub doc: &'a SchemaDoc,
    /// Definitions as upstream wrote them (for `x-method`/`x-side`).
    pub raw: &'a Definitions,
    /// Definitions after normalization (hoisted params/results, consts as enums).
    pub normalized: &'a Definitions,
    /// The other input files of the revision (ACP's meta.json), parsed.
    pub extra: &'a [(String, Value)],
}

type MethodDeriver = dyn Fn(&MethodInput<'_>) -> Result<Vec<crate::model::MethodRow>> + Sync;

/// Parses a JSON Schema file into a normalized model; the file and sha256 come from the pins.
fn load_json(
    spec: &RevisionSpec,
    sources: &Sources,
    cache: &Path,
    protocol: &Protocol,
) -> Result<LoadedRevision> {
    let mut files = Vec::new();
    let mut parsed_extra = Vec::new();
    let (schema_path, extra_paths) =
        spec.inputs
            .split_first()
            .ok_or_else(|| CodegenError::Revision {
                protocol: spec.protocol.clone(),
                revision: spec.revision.clone(),
                message: "no inputs".into(),
            })?;
    let bytes = read_cached(sources, cache, schema_path)?;
    files.push(source_file(sources, schema_path));
    for path in extra_paths {
        let extra = read_cached(sources, cache, path)?;
        let value = serde_json::from_slice(&extra).map_err(|source| CodegenError::NotJson {
            file: path.clone(),
            source,
        })?;
        files.push(source_file(sources, path));
        parsed_extra.push((path.clone(), value));
    }
    let (doc, treatments, normalized) = parse_and_normalize(schema_path, &bytes)?;
    let methods = (protocol.methods)(&MethodInput {
        doc: &doc,
        raw: &doc.definitions,
        normalized: &normalized,
        extra: &parsed_extra,
    })?;
    let origins = json_origins(schema_path, &bytes, &doc, &normalized, sources);
    let message_unions = protocol
        .unions
        .iter()
        .filter(|(name, _, _)| normalized.contains_key(*name))
        .map(|(name, sender, kind)| MessageUnion {
            definition: (*name).to_string(),
            sender: *sender,
            kind: *kind,
        })
        .collect();
    Ok(LoadedRevision {
        model: RevisionModel {
            protocol: spec.protocol.clone(),
            revision: spec.revision.clone(),
            module: spec.module.clone(),
            sources: files,
            definitions: normalized,
            origins,
            custom_types: Default::default(),
            methods,
            peers: Peers::new(protocol.peers.0, protocol.peers.1),
            message_unions,
            dispatched_enums: protocol.dispatched_enums.to_vec(),
            field_aliases: Default::default(),
            feature: spec.feature().map(str::to_owned),
        },
        treatments,
    })
}

/// Where each normalized definition is in the file: its own definition, or for one hoisted out
/// of a message (`XRequestParams`), the `params`/`result` property it was hoisted from.
fn json_origins(
    file: &str,
    bytes: &[u8],
    doc: &SchemaDoc,
    normalized: &Definitions,
    sources: &Sources,
) -> Origins {
    let lines = definition_lines(bytes, &doc.defs_key);
    let mut origins = Origins {
        file: file.to_string(),
        browse_url: sources.pin(file).and_then(|pin| browse_url(&pin.url)),
        ..Origins::default()
    };
    for name in normalized.keys() {
        let upstream = if doc.definitions.contains_key(name) {
            Some((name.as_str(), String::new()))
        } else {
            [("Params", "params"), ("Result", "result")]
                .iter()
                .find_map(|(suffix, field)| {
                    let stem = name.strip_suffix(suffix)?;
                    doc.definitions
                        .contains_key(stem)
                        .then(|| (stem, format!("/properties/{field}")))
                })
        };
        if let Some((definition, inner)) = upstream {
            origins
                .places
                .insert(name.clone(), format!("#{}{inner}", doc.pointer(definition)));
            if let Some(line) = lines.get(definition) {
                origins.lines.insert(name.clone(), *line);
            }
        }
    }
    origins
}

/// Parses, checks every reference and normalizes one JSON Schema file.
pub fn parse_and_normalize(
    file: &str,
    bytes: &[u8],
) -> Result<(SchemaDoc, Treatments, Definitions)> {
    let doc = SchemaDoc::parse(file, bytes)?;
    check_references(&doc)?;
    crate::constructs::check(&doc)?;
    let mut normalized = doc.definitions.clone();
    let treatments = normalize(&mut normalized)
        .map_err(|e| CodegenError::schema(file, &doc.pointer(&e.definition), e.message))?;
    Ok((doc, treatments, normalized))
}

/// Every `$ref` must be local and name an existing definition; the error points at the `$ref`.
fn check_references(doc: &SchemaDoc) -> Result<()> {
    for (name, schema) in &doc.definitions {
        let mut failure = None;
        walk_with_pointer(schema, &doc.pointer(name), &mut |object, pointer| {
            let Some(reference) = object.get("$ref") else {
                return;
            };
            if failure.is_some() {
                return;
            }
            let target = reference.as_str().and_then(ref_target);
            failure = match target {
                None => Some((pointer.to_string(), format!("unsupported $ref {reference}"))),
                Some(target) if !doc.definitions.contains_key(target) => Some((
                    pointer.to_string(),
                    format!("$ref to missing definition `{target}`"),
                )),
                Some(_) => None,
            };
        });
        if let Some((pointer, message)) = failure {
            return Err(CodegenError::schema(&doc.file, &pointer, message));
        }
    }
    Ok(())
}

fn source_file(sources: &Sources, path: &str) -> SourceFile {
    SourceFile {
        path: path.to_string(),
        sha256: sources
            .pin(path)
            .map(|p| p.sha256.clone())
            .unwrap_or_default(),
    }
}

/// The include directories of a proto revision: on disk, and as the cache spells them.
fn proto_includes(spec: &RevisionSpec, cache: &Path) -> Vec<(PathBuf, String)> {
    spec.include_dirs
        .iter()
        .map(|dir| (cache.join(dir), dir.clone()))
        .collect()
}

/// The descriptor pool of a proto revision (its main input and includes), from the cache.
pub fn proto_pool(spec: &RevisionSpec, cache: &Path) -> Result<prost_reflect::DescriptorPool> {
    let proto_path = spec.inputs.first().ok_or_else(|| CodegenError::Revision {
        protocol: spec.protocol.clone(),
        revision: spec.revision.clone(),
        message: "no inputs".into(),
    })?;
    crate::proto::descriptor_pool(
        &cache.join(proto_path),
        &proto_includes(spec, cache),
        proto_path,
    )
    .map_err(|e| CodegenError::Proto(e.to_string()))
}

/// The A2A 1.0 proto front end: every pinned input (proto and includes) is verified first, then
/// `crate::proto` maps the `.proto` onto the model. Its definitions need no normalization.
fn load_proto(spec: &RevisionSpec, sources: &Sources, cache: &Path) -> Result<LoadedRevision> {
    let proto_path = spec.inputs.first().ok_or_else(|| CodegenError::Revision {
        protocol: spec.protocol.clone(),
        revision: spec.revision.clone(),
        message: "no inputs".into(),
    })?;
    for pin in sources.files.iter().filter(|f| {
        f.protocol == spec.protocol
            && f.revision == spec.revision
            && matches!(f.role, Role::Proto | Role::ProtoInclude)
    }) {
        read_cached(sources, cache, &pin.path)?;
    }
    let include_dirs = proto_includes(spec, cache);
    let revision = ProtoRevision {
        protocol: spec.protocol.clone(),
        revision: spec.revision.clone(),
        module: spec.module.clone(),
        source_path: proto_path.clone(),
        browse_url: sources.pin(proto_path).and_then(|pin| browse_url(&pin.url)),
        peers: Peers::new(A2A_PEERS.0, A2A_PEERS.1),
    };
    let mut model = crate::proto::load(&cache.join(proto_path), &include_dirs, &revision)
        .map_err(|e| CodegenError::Proto(e.to_string()))?;
    model.feature = spec.feature().map(str::to_owned);
    Ok(LoadedRevision {
        model,
        treatments: Treatments::new(),
    })
}

/// The `$ref` target of `definitions[name].properties[field]`, if it is a plain reference.
pub fn property_ref<'a>(definitions: &'a Definitions, name: &str, field: &str) -> Option<&'a str> {
    definitions
        .get(name)?
        .get("properties")?
        .get(field)?
        .get("$ref")?
        .as_str()
        .and_then(ref_target)
}

/// Whether `field` is listed in `definitions[name].required`.
pub fn is_required(definitions: &Definitions, name: &str, field: &str) -> bool {
    definitions
        .get(name)
        .and_then(|d| d.get("required"))
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|v| v.as_str() == Some(field)))
}

/// The definition names an `anyOf`/`oneOf` union definition lists by `$ref`.
pub fn union_members(definitions: &Definitions, name: &str) -> Vec<String> {
    let Some(schema) = definitions.get(name) else {
        return Vec::new();
    };
    ["anyOf", "oneOf"]
        .iter()
        .filter_map(|key| schema.get(*key).and_then(Value::as_array))
        .flatten()
        .filter_map(|member| {
            member
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(ref_target)
        })
        .map(str::to_string)
        .collect()
}
