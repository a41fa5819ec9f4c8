//! The protobuf front end: parses a `.proto` (with protox, pure Rust) and maps its messages,
//! enums and services onto a [`RevisionModel`] per the proto3 JSON mapping — one JSON Schema
//! definition per message and enum, a codegen-emitted type for messages with a `oneof` (typify
//! cannot express one), the proto field names accepted on input beside the JSON names, and the
//! method table with each rpc's streaming and `google.api.http` routes. Errors name the file
//! relative to the schema cache, with line and column.

mod error;
mod fields;
mod locate;
mod names;
mod options;
mod rust;
mod schema;
mod well_known;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use miette::Diagnostic;
use prost_reflect::{DescriptorPool, FileDescriptor, Kind, MessageDescriptor, MethodDescriptor};
use sha2::{Digest, Sha256};

pub use error::{Place, ProtoError};

use crate::model::{
    Direction, MethodKind, MethodRow, Origins, Peers, RevisionModel, SourceFile, Streaming,
};
use fields::unsupported;
use locate::{Locator, element_lines, own_directory};
use names::{NameTable, definition_name};
use options::Annotations;
use rust::OneofMessage;
use schema::{MessagePlan, enum_schema};
use well_known::WellKnown;

/// Which revision a `.proto` is, as the back end names it.
#[derive(Debug, Clone)]
pub struct ProtoRevision {
    /// `a2a`.
    pub protocol: String,
    /// `1.0.1`.
    pub revision: String,
    /// `v1_0_1`.
    pub module: String,
    /// The path recorded in `sources` (cache-relative, e.g. `a2a/1.0.1/a2a.proto`).
    pub source_path: String,
    /// The upstream page of the file at its pinned commit, for doc links.
    pub browse_url: Option<String>,
    /// How the protocol names its peers.
    pub peers: Peers,
}

/// Parses `proto_file` (imports resolved against its own directory, then `include_dirs` — each
/// on disk and as the cache spells it —, then protox's bundled `google/protobuf/*`) and builds
/// the revision model of every message, enum and service rpc the file declares, plus every type
/// they reference.
pub fn load(
    proto_file: &Path,
    include_dirs: &[(PathBuf, String)],
    revision: &ProtoRevision,
) -> Result<RevisionModel, ProtoError> {
    let bytes = std::fs::read(proto_file).map_err(|source| ProtoError::Io {
        file: revision.source_path.clone(),
        source,
    })?;
    let sha256 = hex(&Sha256::digest(&bytes));
    let name = proto_file
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default()
        .to_owned();
    let own = (
        own_directory(proto_file),
        parent_of(&revision.source_path).to_owned(),
    );
    let includes: Vec<(PathBuf, String)> = std::iter::once(own)
        .chain(include_dirs.iter().cloned())
        .collect();
    let locator = Locator::new(&name, &revision.source_path, &includes);
    let (pool, file) = compile(&name, &includes, &locator)?;
    let annotations = Annotations::from_pool(&pool);
    let mut names = collect_types(&locator, &file)?;
    let lines = element_lines(&pool, &name);
    let mut model = RevisionModel {
        protocol: revision.protocol.clone(),
        revision: revision.revision.clone(),
        module: revision.module.clone(),
        sources: vec![SourceFile {
            path: revision.source_path.clone(),
            sha256,
        }],
        definitions: BTreeMap::new(),
        origins: Origins {
            file: revision.source_path.clone(),
            browse_url: revision.browse_url.clone(),
            ..Origins::default()
        },
        custom_types: BTreeMap::new(),
        methods: Vec::new(),
        peers: revision.peers.clone(),
        message_unions: Vec::new(),
        dispatched_enums: Vec::new(),
        field_aliases: BTreeMap::new(),
        feature: None,
    };
    add_definitions(
        &locator,
        &pool,
        &mut names,
        &annotations,
        &lines,
        &mut model,
    )?;
    model.methods = method_table(&locator, &file, &names, &annotations)?;
    Ok(model)
}

/// The descriptor pool of a pinned `.proto` and its imports (for checks that parse ProtoJSON).
pub fn descriptor_pool(
    proto_file: &Path,
    include_dirs: &[(PathBuf, String)],
    source_path: &str,
) -> Result<DescriptorPool, ProtoError> {
    let name = proto_file
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default()
        .to_owned();
    let includes: Vec<(PathBuf, String)> =
        std::iter::once((own_directory(proto_file), parent_of(source_path).to_owned()))
            .chain(include_dirs.iter().cloned())
            .collect();
    let locator = Locator::new(&name, source_path, &includes);
    compile(&name, &includes, &locator).map(|(pool, _)| pool)
}

fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// Runs protox on the file named `name` in the first include directory.
fn compile(
    name: &str,
    includes: &[(PathBuf, String)],
    locator: &Locator,
) -> Result<(DescriptorPool, FileDescriptor), ProtoError> {
    let on_disk = includes.iter().map(|(dir, _)| dir.clone());
    let mut compiler = protox::Compiler::new(on_disk).map_err(|e| parse_error(&e, locator))?;
    compiler.include_imports(true);
    compiler.include_source_info(true);
    compiler
        .open_file(name)
        .map_err(|e| parse_error(&e, locator))?;
    let pool = compiler.descriptor_pool();
    let file = pool
        .get_file_by_name(name)
        .ok_or_else(|| ProtoError::Parse {
            place: locator.main_file(),
            message: "protox returned no descriptor for the file".to_owned(),
        })?;
    Ok((pool, file))
}

/// protox's error placed at its first label (line and column in the file it names), its message
/// on one line.
fn parse_error(error: &protox::Error, locator: &Locator) -> ProtoError {
    let file = error.file().map(str::to_owned);
    let offset = error
        .labels()
        .and_then(|mut labels| labels.next())
        .map(|label| label.offset());
    let place = match (&file, offset) {
        (Some(file), Some(offset)) => locator.offset(file, offset),
        (Some(file), None) => Place {
            file: locator.cache_path(file),
            line_column: None,
        },
        (None, _) => locator.main_file(),
    };
    let message = error.to_string().lines().collect::<Vec<_>>().join(" ");
    ProtoError::Parse { place, message }
}

/// Names every message and enum that gets a definition: those the file declares (nested ones
/// included, map entries excluded), its rpcs' input and output types, and everything they
/// reference. Well-known types are mapped inline and get a definition only when they must be
/// named (`Empty`, or a well-known rpc input/output).
fn collect_types(locator: &Locator, file: &FileDescriptor) -> Result<NameTable, ProtoError> {
    let mut names = NameTable::default();
    let mut pending: Vec<MessageDescriptor> = Vec::new();
    let mut enums = Vec::new();
    let mut seen = BTreeSet::new();
    pending.extend(file.messages());
    enums.extend(file.enums());
    for service in file.services() {
        for method in service.methods() {
            pending.push(method.input());
            pending.push(method.output());
        }
    }
    while let Some(message) = pending.pop() {
        if !seen.insert(message.full_name().to_owned()) {
            continue;
        }
        // A map entry is the object's value type, not a definition of its own.
        if message.is_map_entry() {
            push_field_types(&message, &mut pending, &mut enums);
            continue;
        }
        let place = locator.element(&message.parent_file(), message.path());
        if WellKnown::of(message.full_name()) == Some(WellKnown::Any) {
            return Err(unsupported(
                &place,
                message.full_name(),
                "google.protobuf.Any needs a type registry to map to JSON",
            ));
        }
        let definition = definition_name(message.full_name(), message.package_name());
        names.claim(&place, message.full_name(), &definition)?;
        pending.extend(message.child_messages());
        enums.extend(message.child_enums());
        if WellKnown::of(message.full_name()).is_none() {
            push_field_types(&message, &mut pending, &mut enums);
        }
    }
    for descriptor in enums {
        if descriptor.full_name() != "google.protobuf.NullValue" {
            let definition = definition_name(descriptor.full_name(), descriptor.package_name());
            let place = locator.element(&descriptor.parent_file(), descriptor.path());
            names.claim(&place, descriptor.full_name(), &definition)?;
        }
    }
    Ok(names)
}

/// Queues the message and enum types a message's fields refer to; inline well-known types
/// other than `Empty` need no definition (`Any` is refused later, naming the field).
fn push_field_types(
    message: &MessageDescriptor,
    pending: &mut Vec<MessageDescriptor>,
    enums: &mut Vec<prost_reflect::EnumDescriptor>,
) {
    for field in message.fields() {
        match field.kind() {
            Kind::Message(target) => match WellKnown::of(target.full_name()) {
                None | Some(WellKnown::Empty) => pending.push(target),
                Some(_) => {}
            },
            Kind::Enum(target) => enums.push(target),
            _ => {}
        }
    }
}

/// Fills `definitions` (every named type), `custom_types` (every message with a oneof), the
/// proto field names each message accepts beside its JSON names, and where each definition is.
fn add_definitions(
    locator: &Locator,
    pool: &DescriptorPool,
    names: &mut NameTable,
    annotations: &Annotations,
    lines: &BTreeMap<String, usize>,
    model: &mut RevisionModel,
) -> Result<(), ProtoError> {
    let named: Vec<(String, String)> = names
        .definitions()
        .map(|(full, definition)| (full.to_owned(), definition.to_owned()))
        .collect();
    let is_recursive = |from: &str, target: &str| reaches(pool, from, target);
    for (full_name, definition) in named {
        if let Some(line) = lines.get(&full_name) {
            model.origins.lines.insert(definition.clone(), *line);
        }
        if let Some(descriptor) = pool.get_enum_by_name(&full_name) {
            let place = locator.element(&descriptor.parent_file(), descriptor.path());
            record_place(model, &definition, &place, &full_name);
            model
                .definitions
                .insert(definition, enum_schema(&descriptor));
            continue;
        }
        let Some(message) = pool.get_message_by_name(&full_name) else {
            return Err(unsupported(
                &locator.main_file(),
                &full_name,
                "named type vanished from the pool",
            ));
        };
        let place = locator.element(&message.parent_file(), message.path());
        record_place(model, &definition, &place, &full_name);
        if let Some(schema) = WellKnown::of(&full_name).and_then(WellKnown::schema) {
            model.definitions.insert(definition, schema);
            continue;
        }
        let plan = MessagePlan::new(
            locator,
            &message,
            &definition,
            names,
            annotations,
            &is_recursive,
        )?;
        model.definitions.insert(definition.clone(), plan.schema());
        let aliases = plan.aliases();
        if plan.oneofs.is_empty() {
            if !aliases.is_empty() {
                model.field_aliases.insert(definition, aliases);
            }
        } else {
            let doc = type_doc(model, &definition, &full_name);
            let link = model.origins.link(&definition);
            model
                .custom_types
                .insert(definition, Arc::new(OneofMessage { plan, doc, link }));
        }
    }
    Ok(())
}

/// Where an error about `definition` points: the line and column of its proto element.
fn record_place(model: &mut RevisionModel, definition: &str, place: &Place, full_name: &str) {
    let at = match place.line_column {
        Some((line, column)) => format!(":{line}:{column} (`{full_name}`)"),
        None => format!(" (`{full_name}`)"),
    };
    model.origins.places.insert(definition.to_owned(), at);
    model
        .origins
        .elements
        .insert(definition.to_owned(), full_name.to_owned());
}

/// The doc of a codegen-emitted message type: a link to it upstream, as every type has.
fn type_doc(model: &RevisionModel, definition: &str, full_name: &str) -> String {
    let label = format!("{} {}", model.protocol.to_uppercase(), model.revision);
    match model.origins.link(definition) {
        Some(link) => {
            format!(" [`{full_name}`]({link}) of {label}; each oneof is a flattened enum.")
        }
        None => format!(" `{full_name}`, which {label} imports; each oneof is a flattened enum."),
    }
}

/// Whether `from` leads to `target` through singular message fields (lists and maps already
/// put their items on the heap).
fn reaches(pool: &DescriptorPool, from: &str, target: &str) -> bool {
    let mut stack = vec![from.to_owned()];
    let mut visited = BTreeSet::new();
    while let Some(current) = stack.pop() {
        if current == target {
            return true;
        }
        if !visited.insert(current.clone()) {
            continue;
        }
        let Some(message) = pool.get_message_by_name(&current) else {
            continue;
        };
        for field in message.fields().filter(|f| !f.is_list() && !f.is_map()) {
            if let Kind::Message(next) = field.kind() {
                stack.push(next.full_name().to_owned());
            }
        }
    }
    false
}

/// One row per rpc of every service in the file, in declaration order.
fn method_table(
    locator: &Locator,
    file: &FileDescriptor,
    names: &NameTable,
    annotations: &Annotations,
) -> Result<Vec<MethodRow>, ProtoError> {
    let mut rows: Vec<MethodRow> = Vec::new();
    for service in file.services() {
        for method in service.methods() {
            let place = locator.element(&method.parent_file(), method.path());
            if rows.iter().any(|row| row.name == method.name()) {
                return Err(ProtoError::NameCollision {
                    place,
                    element: method.full_name().to_owned(),
                    name: method.name().to_owned(),
                    other: "an rpc of another service".to_owned(),
                });
            }
            rows.push(method_row(&place, &method, names, annotations)?);
        }
    }
    Ok(rows)
}

/// An rpc's row. A stream of params (client-streaming or bidirectional) has no JSON-RPC form and
/// HTTP/JSON transcoding cannot carry it either, so such a row has no binding: its types are
/// generated, no handler answers it.
fn method_row(
    place: &Place,
    method: &MethodDescriptor,
    names: &NameTable,
    annotations: &Annotations,
) -> Result<MethodRow, ProtoError> {
    let params = message_definition(place, method, &method.input(), names)?;
    let result = message_definition(place, method, &method.output(), names)?;
    // JSON-RPC may omit `params` only when the input message asks for nothing.
    let input = method.input();
    let params_optional = input.oneofs().all(|oneof| oneof.is_synthetic())
        && input.fields().all(|field| !annotations.is_required(&field));
    let streaming = match (method.is_client_streaming(), method.is_server_streaming()) {
        (false, false) => Streaming::Unary,
        (false, true) => Streaming::Results,
        (true, false) => Streaming::Params,
        (true, true) => Streaming::Both,
    };
    let http = if streaming.params() {
        Vec::new()
    } else {
        annotations.http_routes(method)
    };
    Ok(MethodRow {
        name: method.name().to_owned(),
        direction: Direction::ClientToServer,
        kind: MethodKind::Request,
        params: Some(params),
        params_optional,
        result: Some(result),
        streaming,
        http,
    })
}

/// The definition key of an rpc's input or output message.
fn message_definition(
    place: &Place,
    method: &MethodDescriptor,
    message: &MessageDescriptor,
    names: &NameTable,
) -> Result<String, ProtoError> {
    names
        .definition(message.full_name())
        .map(str::to_owned)
        .ok_or_else(|| {
            unsupported(
                place,
                method.full_name(),
                &format!("{} has no definition", message.full_name()),
            )
        })
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}
