//! The protobuf front end: parses a `.proto` (with protox, pure Rust) and maps its messages,
//! enums and services onto a [`RevisionModel`] per the proto3 JSON mapping — one JSON Schema
//! definition per message and enum, Rust source for messages with a `oneof` (typify cannot
//! express one), and the method table with each rpc's `google.api.http` routes.

mod error;
mod fields;
mod names;
mod options;
mod rust;
mod schema;
mod well_known;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use prost_reflect::{DescriptorPool, FileDescriptor, Kind, MessageDescriptor, MethodDescriptor};
use sha2::{Digest, Sha256};

pub use error::ProtoError;

use crate::model::{Direction, MethodKind, MethodRow, RevisionModel, SourceFile};
use fields::unsupported;
use names::{NameTable, definition_name};
use options::Annotations;
use rust::{RustContext, oneof_message_source};
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
}

/// Parses `proto_file` (imports resolved against its own directory, then `include_dirs`, then
/// protox's bundled `google/protobuf/*`) and builds the revision model of every message, enum
/// and service rpc the file declares, plus every type they reference.
pub fn load(
    proto_file: &Path,
    include_dirs: &[PathBuf],
    revision: &ProtoRevision,
) -> Result<RevisionModel, ProtoError> {
    let bytes = std::fs::read(proto_file).map_err(|source| ProtoError::Io {
        file: proto_file.to_owned(),
        source,
    })?;
    let sha256 = hex(&Sha256::digest(&bytes));
    let (pool, file) = compile(proto_file, include_dirs)?;
    let annotations = Annotations::from_pool(&pool);
    let mut names = collect_types(proto_file, &file)?;
    let mut model = RevisionModel {
        protocol: revision.protocol.clone(),
        revision: revision.revision.clone(),
        module: revision.module.clone(),
        sources: vec![SourceFile {
            path: revision.source_path.clone(),
            sha256,
        }],
        definitions: BTreeMap::new(),
        custom_types: BTreeMap::new(),
        methods: Vec::new(),
        feature: None,
    };
    let provenance = format!(
        "{} {}, from `{}`",
        revision.protocol, revision.revision, revision.source_path
    );
    add_definitions(
        proto_file,
        &pool,
        &mut names,
        &annotations,
        &provenance,
        &mut model,
    )?;
    model.methods = method_table(proto_file, &file, &names, &annotations)?;
    Ok(model)
}

/// Runs protox; the file is opened by its name relative to its own directory, which therefore
/// comes first among the include paths.
fn compile(
    proto_file: &Path,
    include_dirs: &[PathBuf],
) -> Result<(DescriptorPool, FileDescriptor), ProtoError> {
    let parse_error = |message: String| ProtoError::Parse {
        file: proto_file.to_owned(),
        message,
    };
    let directory = proto_file
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = proto_file
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| parse_error("the file name is not UTF-8".to_owned()))?;
    let includes = std::iter::once(directory.to_owned()).chain(include_dirs.iter().cloned());
    let mut compiler = protox::Compiler::new(includes).map_err(|e| parse_error(e.to_string()))?;
    compiler.include_imports(true);
    compiler
        .open_file(name)
        .map_err(|e| parse_error(protox_message(&e)))?;
    let pool = compiler.descriptor_pool();
    let file = pool
        .get_file_by_name(name)
        .ok_or_else(|| parse_error("protox returned no descriptor for the file".to_owned()))?;
    Ok((pool, file))
}

/// protox's message plus the file and line it points at, when it has them.
fn protox_message(error: &protox::Error) -> String {
    match error.file() {
        Some(file) => format!("{error} (in {file})"),
        None => error.to_string(),
    }
}

/// Names every message and enum that gets a definition: those the file declares (nested ones
/// included, map entries excluded), its rpcs' input and output types, and everything they
/// reference. Well-known types are mapped inline and get a definition only when they must be
/// named (`Empty`, or a well-known rpc input/output).
fn collect_types(file_path: &Path, file: &FileDescriptor) -> Result<NameTable, ProtoError> {
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
        if WellKnown::of(message.full_name()) == Some(WellKnown::Any) {
            return Err(unsupported(
                file_path,
                message.full_name(),
                "google.protobuf.Any needs a type registry to map to JSON",
            ));
        }
        let definition = definition_name(message.full_name(), message.package_name());
        names.claim(file_path, message.full_name(), &definition)?;
        pending.extend(message.child_messages());
        enums.extend(message.child_enums());
        if WellKnown::of(message.full_name()).is_none() {
            push_field_types(&message, &mut pending, &mut enums);
        }
    }
    for descriptor in enums {
        if descriptor.full_name() != "google.protobuf.NullValue" {
            let definition = definition_name(descriptor.full_name(), descriptor.package_name());
            names.claim(file_path, descriptor.full_name(), &definition)?;
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

/// Fills `definitions` (every named type) and `custom_types` (every message with a oneof).
fn add_definitions(
    file_path: &Path,
    pool: &DescriptorPool,
    names: &mut NameTable,
    annotations: &Annotations,
    provenance: &str,
    model: &mut RevisionModel,
) -> Result<(), ProtoError> {
    let named: Vec<(String, String)> = names
        .definitions()
        .map(|(full, definition)| (full.to_owned(), definition.to_owned()))
        .collect();
    let is_recursive = |from: &str, target: &str| reaches(pool, from, target);
    let context = RustContext {
        file: file_path,
        provenance: provenance.to_owned(),
        is_recursive: &is_recursive,
    };
    for (full_name, definition) in named {
        if let Some(descriptor) = pool.get_enum_by_name(&full_name) {
            model
                .definitions
                .insert(definition, enum_schema(&descriptor));
            continue;
        }
        let Some(message) = pool.get_message_by_name(&full_name) else {
            return Err(unsupported(
                file_path,
                &full_name,
                "named type vanished from the pool",
            ));
        };
        if let Some(schema) = WellKnown::of(&full_name).and_then(WellKnown::schema) {
            model.definitions.insert(definition, schema);
            continue;
        }
        let plan = MessagePlan::new(file_path, &message, &definition, names, annotations)?;
        model.definitions.insert(definition.clone(), plan.schema());
        if !plan.oneofs.is_empty() {
            let source = oneof_message_source(&plan, &context, names)?;
            model.custom_types.insert(definition, source);
        }
    }
    Ok(())
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
    file_path: &Path,
    file: &FileDescriptor,
    names: &NameTable,
    annotations: &Annotations,
) -> Result<Vec<MethodRow>, ProtoError> {
    let mut rows: Vec<MethodRow> = Vec::new();
    for service in file.services() {
        for method in service.methods() {
            if rows.iter().any(|row| row.name == method.name()) {
                return Err(ProtoError::NameCollision {
                    file: file_path.to_owned(),
                    element: method.full_name().to_owned(),
                    name: method.name().to_owned(),
                    other: "an rpc of another service".to_owned(),
                });
            }
            rows.push(method_row(file_path, &method, names, annotations)?);
        }
    }
    Ok(rows)
}

fn method_row(
    file_path: &Path,
    method: &MethodDescriptor,
    names: &NameTable,
    annotations: &Annotations,
) -> Result<MethodRow, ProtoError> {
    if method.is_client_streaming() {
        return Err(unsupported(
            file_path,
            method.full_name(),
            "client-streaming rpcs have no JSON-RPC or REST binding",
        ));
    }
    let params = message_definition(file_path, method, &method.input(), names)?;
    let result = message_definition(file_path, method, &method.output(), names)?;
    // JSON-RPC may omit `params` only when the input message asks for nothing.
    let input = method.input();
    let params_optional = input.oneofs().all(|oneof| oneof.is_synthetic())
        && input.fields().all(|field| !annotations.is_required(&field));
    Ok(MethodRow {
        name: method.name().to_owned(),
        direction: Direction::ClientToServer,
        kind: MethodKind::Request,
        params_type: Some(params),
        params_optional,
        result_type: Some(result),
        streaming: method.is_server_streaming(),
        http: annotations.http_routes(method),
    })
}

/// The definition key of an rpc's input or output message.
fn message_definition(
    file_path: &Path,
    method: &MethodDescriptor,
    message: &MessageDescriptor,
    names: &NameTable,
) -> Result<String, ProtoError> {
    names
        .definition(message.full_name())
        .map(str::to_owned)
        .ok_or_else(|| {
            unsupported(
                file_path,
                method.full_name(),
                &format!("{} has no definition", message.full_name()),
            )
        })
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}
