//! The checks every pinned revision goes through, over the list a protocol crate's generated
//! test support hands in. Each reads the revision's source independently of the front end that
//! generated it (the method names a schema's `method` consts, `meta.json` or the proto's `rpc`
//! lines give), so a front end that misses something fails here. A failed check panics with
//! every failure of every revision at once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use serde_json::value::RawValue;

use super::{
    Dispatched, GeneratedRevision, Receiver, minimal_params, minimal_result, note, revision_model,
    sources, spec,
};
use crate::model::RevisionModel;
use crate::sources::{FrontEnd, Layout, RevisionSpec};
use crate::sync::parse_manifest;

/// The generated list is exactly the pinned revisions of `protocol` (drafts only when the
/// crate is built with `unstable`), in pin order: pinning and generating a revision is all
/// it takes to put it under test.
pub fn every_pinned_revision_is_generated(
    protocol: &str,
    revisions: &[GeneratedRevision],
    unstable: bool,
) {
    let sources = sources();
    let pinned: Vec<(String, String)> = sources
        .revisions
        .iter()
        .filter(|spec| spec.protocol == protocol && (unstable || spec.feature().is_none()))
        .map(|spec| (spec.revision.clone(), spec.module.clone()))
        .collect();
    let generated: Vec<(String, String)> = revisions
        .iter()
        .map(|r| (r.revision.to_string(), r.module.to_string()))
        .collect();
    assert_eq!(
        generated, pinned,
        "generated test support differs from the pins; run `cargo run -p codegen`"
    );
}

/// Each method table lists exactly the methods its source names.
pub fn method_tables_list_exactly_the_methods_of_their_sources(revisions: &[GeneratedRevision]) {
    let sources = sources();
    let mut failures = Vec::new();
    for revision in revisions {
        let spec = spec(&sources, revision.protocol, revision.revision);
        let ours: BTreeSet<String> = (revision.methods)()
            .iter()
            .map(|m| m.name.to_string())
            .collect();
        let theirs = methods_named_by_source(&spec);
        if ours != theirs {
            let missing: Vec<_> = theirs.difference(&ours).collect();
            let extra: Vec<_> = ours.difference(&theirs).collect();
            failures.push(format!(
                "{} {}: missing {missing:?}, not in the source {extra:?}",
                revision.protocol, revision.revision
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The method names a revision's source gives, read without its front end.
fn methods_named_by_source(spec: &RevisionSpec) -> BTreeSet<String> {
    let read_json = |relative: &str| -> Value {
        let bytes = super::read_cache_file(relative).unwrap_or_else(|error| panic!("{error}"));
        serde_json::from_slice(&bytes).unwrap_or_else(|error| panic!("{relative}: {error}"))
    };
    let main = spec.inputs.first().map(String::as_str).unwrap_or_default();
    match spec.front_end {
        FrontEnd::Mcp | FrontEnd::A2aJson => {
            let schema = read_json(main);
            let definitions = schema
                .get("definitions")
                .or_else(|| schema.get("$defs"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            definitions
                .values()
                .filter_map(|d| d.pointer("/properties/method/const")?.as_str())
                .map(str::to_string)
                .collect()
        }
        FrontEnd::Acp => {
            let meta = read_json(spec.inputs.get(1).map(String::as_str).unwrap_or_default());
            ["agentMethods", "clientMethods", "protocolMethods"]
                .iter()
                .filter_map(|group| meta.get(*group).and_then(Value::as_object))
                .flat_map(|group| group.values())
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        }
        FrontEnd::A2aProto => {
            let bytes = super::read_cache_file(main).unwrap_or_else(|error| panic!("{error}"));
            String::from_utf8_lossy(&bytes)
                .lines()
                .filter_map(|line| line.trim().strip_prefix("rpc "))
                .filter_map(|rest| rest.split(|c: char| c == '(' || c.is_whitespace()).next())
                .map(str::to_string)
                .collect()
        }
    }
}

fn raw(value: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|error| panic!("{error}"))
}

fn receivers(method: &super::Method) -> Vec<Receiver> {
    let mut receivers = Vec::new();
    if method.from_client {
        receivers.push(Receiver::Server);
    }
    if method.from_server {
        receivers.push(Receiver::Client);
    }
    receivers
}

/// Every method a binding serves reaches its own handler method on the peer that receives it,
/// decoded by its name (never by shape): the smallest params its schema accepts arrive at that
/// method and encode again to the same JSON; params of the wrong shape are -32602 naming it;
/// an unknown method is -32601; a method no binding serves has no handler method.
pub fn every_method_reaches_its_own_handler_method(revisions: &[GeneratedRevision]) {
    let mut failures = Vec::new();
    for revision in revisions {
        let model = model(revision);
        let label = format!("{} {}", revision.protocol, revision.revision);
        let (mut reached, mut refused_samples) = (0, 0);
        for method in (revision.methods)() {
            let params = minimal_params(&model, method.name);
            let sent = params.as_ref().map(raw);
            for receiver in receivers(&method) {
                let outcome =
                    (revision.dispatch)(receiver, method.request, method.name, sent.as_deref());
                if !method.json_rpc {
                    let unanswered = matches!(outcome, Dispatched::NoHandler)
                        || matches!(&outcome, Dispatched::Refused { code: -32601, .. });
                    if !unanswered {
                        failures.push(format!("{label} {}: unbound, yet {outcome:?}", method.name));
                    }
                    continue;
                }
                let invalid = format!("invalid params for {}", method.name);
                match outcome {
                    Dispatched::Handled {
                        method: routed,
                        params: echoed,
                    } if routed == method.name => {
                        reached += 1;
                        if let (Some(sent), Some(Ok(echoed))) = (&params, echoed)
                            && echoed != *sent
                        {
                            failures.push(format!(
                                "{label} {}: params changed on the way\n  sent: {sent}\n  got:  {echoed}",
                                method.name
                            ));
                        }
                    }
                    Dispatched::Refused {
                        code: -32602,
                        message,
                    } if message.starts_with(&invalid) => {
                        refused_samples += 1;
                    }
                    other => failures.push(format!(
                        "{label} {} to {receiver:?}: {other:?}",
                        method.name
                    )),
                }
                if params.is_some() {
                    let misshapen = raw(&Value::String("not params".into()));
                    match (revision.dispatch)(
                        receiver,
                        method.request,
                        method.name,
                        Some(&misshapen),
                    ) {
                        Dispatched::Refused {
                            code: -32602,
                            message,
                        } if message.starts_with(&invalid) => {}
                        other => failures.push(format!(
                            "{label} {} with misshapen params: {other:?}",
                            method.name
                        )),
                    }
                }
                if method.request && method.params_optional && receiver == Receiver::Server {
                    match (revision.dispatch)(receiver, true, method.name, None) {
                        Dispatched::Handled { method: routed, .. } if routed == method.name => {}
                        other => failures
                            .push(format!("{label} {} without params: {other:?}", method.name)),
                    }
                }
            }
        }
        for receiver in [Receiver::Server, Receiver::Client] {
            for request in [true, false] {
                match (revision.dispatch)(receiver, request, "no/such/method", None) {
                    Dispatched::Refused { code: -32601, .. } | Dispatched::NoHandler => {}
                    other => failures.push(format!("{label} an unknown method: {other:?}")),
                }
            }
        }
        if reached == 0 {
            failures.push(format!("{label}: no method reached a handler"));
        }
        note(&format!(
            "{label}: {reached} dispatches reached their handler method with the smallest params \
             the schema accepts, {refused_samples} were routed there and refused the sample"
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn model(revision: &GeneratedRevision) -> RevisionModel {
    revision_model(revision.protocol, revision.revision).unwrap_or_else(|error| panic!("{error}"))
}

/// Every definition with a type decodes the smallest instance its schema accepts and encodes
/// it to the same JSON; nearly all of those instances decode.
pub fn every_definition_round_trips(revisions: &[GeneratedRevision]) {
    let mut failures = Vec::new();
    for revision in revisions {
        let model = model(revision);
        let label = format!("{} {}", revision.protocol, revision.revision);
        let (mut same, mut undecoded) = (0usize, Vec::new());
        for (definition, schema) in &model.definitions {
            let sample = super::minimal_instance(&model.definitions, schema);
            match (revision.round_trip)(definition, sample.clone()) {
                None => {}
                Some(Ok(again)) if again == sample => same += 1,
                Some(Ok(again)) => failures.push(format!(
                    "{label} {definition}: round trip differs\n  in:  {sample}\n  out: {again}"
                )),
                Some(Err(error)) => undecoded.push(format!("{definition} ({error})")),
            }
        }
        if undecoded.len() * 10 > same + undecoded.len() {
            failures.push(format!(
                "{label}: {} of {} samples do not decode: {undecoded:?}",
                undecoded.len(),
                same + undecoded.len()
            ));
        }
        note(&format!(
            "{label}: {same} definitions round-trip their smallest instance; {} samples the \
             sample builder cannot satisfy",
            undecoded.len()
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every upstream example message of a revision that pins examples decodes into the type its
/// folder names and encodes to the same JSON. An example the pinned schema accepts only by
/// letting an object carry members it does not declare is an upstream inconsistency: reported,
/// not held against the generated types. A revision without examples says so.
pub fn every_example_round_trips(revisions: &[GeneratedRevision]) {
    let sources = sources();
    let layout = super::layout();
    let mut failures = Vec::new();
    for revision in revisions {
        let label = format!("{} {}", revision.protocol, revision.revision);
        let Some(manifest) = sources.examples_manifest(revision.protocol, revision.revision) else {
            note(&format!(
                "{label}: no upstream examples pinned; none checked"
            ));
            continue;
        };
        let spec = spec(&sources, revision.protocol, revision.revision);
        let schema = closed(&read_json(
            &layout,
            spec.inputs.first().map(String::as_str).unwrap_or_default(),
        ));
        let text = String::from_utf8_lossy(
            &super::read_cache_file(&manifest.path).unwrap_or_else(|error| panic!("{error}")),
        )
        .into_owned();
        let entries =
            parse_manifest(&manifest.path, &text).unwrap_or_else(|error| panic!("{error}"));
        let base = manifest.path.rsplit_once('/').map_or("", |(dir, _)| dir);
        let mut invalid_upstream = Vec::new();
        let mut checked = 0;
        for entry in &entries {
            let relative = format!("{base}/{}", entry.path);
            let type_name = Path::new(&entry.path)
                .parent()
                .and_then(Path::file_name)
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            let original = read_json(&layout, &relative);
            if !valid_against(
                &schema,
                &format!("#/{}/{type_name}", defs_key(&schema)),
                &original,
            ) {
                invalid_upstream.push(relative);
                continue;
            }
            checked += 1;
            match (revision.round_trip)(&type_name, original.clone()) {
                None => failures.push(format!("{relative}: no generated type {type_name}")),
                Some(Err(e)) => failures.push(format!("{relative}: does not deserialize: {e}")),
                Some(Ok(again)) if again != original => failures.push(format!(
                    "{relative}: round trip differs:\n  in:  {original}\n  out: {again}"
                )),
                Some(Ok(_)) => {}
            }
        }
        if invalid_upstream.len() * 10 >= entries.len() {
            failures.push(format!(
                "{label}: too many examples excluded: {invalid_upstream:?}"
            ));
        }
        note(&format!(
            "{label}: {checked} upstream examples round-trip; excluded as valid only with \
             undeclared members: {invalid_upstream:?}"
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn read_json(layout: &Layout, relative: &str) -> Value {
    let bytes = std::fs::read(layout.cache().join(relative))
        .unwrap_or_else(|error| panic!("{relative}: {error}; {}", super::SYNC_HINT));
    serde_json::from_slice(&bytes).unwrap_or_else(|error| panic!("{relative}: {error}"))
}

fn defs_key(schema: &Value) -> &'static str {
    if schema.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    }
}

/// The pinned schema with every object closed (`additionalProperties: false` where it says
/// nothing), so output carrying a member its schema does not declare fails. Left open: objects
/// that compose others (`allOf`, unions, `$ref`), whose members are spread over several
/// subschemas, and the definitions an `allOf` extends, which another's members complete.
fn closed(schema: &Value) -> Value {
    let mut bases = BTreeSet::new();
    collect_all_of_bases(schema, &mut bases);
    close(schema, &bases)
}

fn collect_all_of_bases(schema: &Value, bases: &mut BTreeSet<String>) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::Array(members)) = object.get("allOf") {
                bases.extend(
                    members
                        .iter()
                        .filter_map(|member| member.get("$ref")?.as_str())
                        .filter_map(|reference| reference.rsplit('/').next())
                        .map(str::to_string),
                );
            }
            object
                .values()
                .for_each(|value| collect_all_of_bases(value, bases));
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| collect_all_of_bases(item, bases)),
        _ => {}
    }
}

fn close(schema: &Value, bases: &BTreeSet<String>) -> Value {
    match schema {
        Value::Object(object) => {
            let mut out = serde_json::Map::new();
            for (key, value) in object {
                let inner = match (key.as_str(), value) {
                    ("allOf" | "examples" | "const" | "enum" | "default", _) => value.clone(),
                    ("$defs" | "definitions", Value::Object(definitions)) => Value::Object(
                        definitions
                            .iter()
                            .map(|(name, definition)| {
                                let kept = if bases.contains(name) {
                                    definition.clone()
                                } else {
                                    close(definition, bases)
                                };
                                (name.clone(), kept)
                            })
                            .collect(),
                    ),
                    _ => close(value, bases),
                };
                out.insert(key.clone(), inner);
            }
            let composed = ["allOf", "anyOf", "oneOf", "$ref", "unevaluatedProperties"]
                .iter()
                .any(|key| out.contains_key(*key));
            if out.contains_key("properties")
                && !out.contains_key("additionalProperties")
                && !composed
            {
                out.insert("additionalProperties".into(), Value::Bool(false));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|item| close(item, bases)).collect()),
        other => other.clone(),
    }
}

/// A validator of the definition at `pointer`. String formats are not asserted: codegen keeps
/// every string exactly as written (no `format` becomes a type), so a sample's format is the
/// sample builder's, not something the generated types could get wrong.
fn validator(root: &Value, pointer: &str) -> jsonschema::Validator {
    // Only the definitions and the dialect of the document: ACP's root also holds an `anyOf` of
    // whole JSON-RPC messages, which a definition's instance is not.
    let mut document = serde_json::Map::new();
    if let Value::Object(object) = root {
        for key in ["$schema", "$id", "$defs", "definitions"] {
            if let Some(value) = object.get(key) {
                document.insert(key.to_string(), value.clone());
            }
        }
    }
    document.insert("$ref".into(), Value::String(pointer.to_string()));
    let root = Value::Object(document);
    jsonschema::options()
        .should_validate_formats(false)
        .build(&root)
        .unwrap_or_else(|error| panic!("{pointer}: {error}"))
}

fn valid_against(root: &Value, pointer: &str, instance: &Value) -> bool {
    validator(root, pointer).is_valid(instance)
}

/// What the generated types write is valid per the pinned source: for every method a binding
/// serves, the params a handler received (encoded again) and the smallest result, decoded and
/// encoded again, validate against the pinned JSON Schema (closed: no undeclared member), or
/// for a proto revision parse as the proto's message with a ProtoJSON parser.
pub fn generated_output_is_valid_on_the_wire(revisions: &[GeneratedRevision]) {
    let sources = sources();
    let mut failures = Vec::new();
    for revision in revisions {
        let model = model(revision);
        let spec = spec(&sources, revision.protocol, revision.revision);
        let label = format!("{} {}", revision.protocol, revision.revision);
        let wire = Wire::of(&spec);
        let mut validated = 0;
        for method in (revision.methods)().iter().filter(|m| m.json_rpc) {
            let Some(row) = model.methods.iter().find(|row| row.name == method.name) else {
                continue;
            };
            let mut outputs: Vec<(&str, Value)> = Vec::new();
            if let (Some(definition), Some(params)) =
                (&row.params, minimal_params(&model, method.name))
            {
                let receiver = receivers(method)
                    .first()
                    .copied()
                    .unwrap_or(Receiver::Server);
                if let Dispatched::Handled {
                    params: Some(Ok(echoed)),
                    ..
                } =
                    (revision.dispatch)(receiver, method.request, method.name, Some(&raw(&params)))
                {
                    outputs.push((definition.as_str(), echoed));
                }
            }
            if let (Some(definition), Some(result)) =
                (&row.result, minimal_result(&model, method.name))
                && let Some(Ok(encoded)) = (revision.round_trip)(definition, result)
            {
                outputs.push((definition.as_str(), encoded));
            }
            for (definition, output) in outputs {
                match wire.check(&model, definition, &output) {
                    Ok(()) => validated += 1,
                    Err(error) => failures.push(format!(
                        "{label} {}: {definition} output {output} is invalid: {error}",
                        method.name
                    )),
                }
            }
        }
        if validated == 0 {
            failures.push(format!("{label}: nothing validated"));
        }
        note(&format!(
            "{label}: {validated} params and results valid on the wire"
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What a revision's wire form is checked against.
enum Wire {
    Schema {
        root: Value,
        validators: std::cell::RefCell<BTreeMap<String, jsonschema::Validator>>,
    },
    Proto(prost_reflect::DescriptorPool),
}

impl Wire {
    fn of(spec: &RevisionSpec) -> Self {
        let layout = super::layout();
        match spec.front_end {
            FrontEnd::A2aProto => Self::Proto(
                crate::frontend::proto_pool(spec, &layout.cache())
                    .unwrap_or_else(|error| panic!("{error}")),
            ),
            _ => {
                let main = spec.inputs.first().map(String::as_str).unwrap_or_default();
                Self::Schema {
                    root: closed(&read_json(&layout, main)),
                    validators: Default::default(),
                }
            }
        }
    }

    fn check(&self, model: &RevisionModel, definition: &str, output: &Value) -> Result<(), String> {
        match self {
            Self::Schema { root, validators } => {
                let pointer = model
                    .origins
                    .places
                    .get(definition)
                    .ok_or_else(|| format!("{definition} is not in the upstream file"))?;
                let mut validators = validators.borrow_mut();
                let validator = validators
                    .entry(pointer.clone())
                    .or_insert_with(|| validator(root, pointer));
                let errors: Vec<String> = validator
                    .iter_errors(output)
                    .map(|error| format!("{} at {}", error, error.instance_path))
                    .collect();
                if errors.is_empty() {
                    Ok(())
                } else {
                    Err(errors.join("; "))
                }
            }
            Self::Proto(pool) => {
                let Some(full_name) = model.origins.elements.get(definition) else {
                    return Ok(());
                };
                let Some(message) = pool.get_message_by_name(full_name) else {
                    return Err(format!("{full_name} is not a message of the proto"));
                };
                let text = output.to_string();
                let mut deserializer = serde_json::Deserializer::from_str(&text);
                prost_reflect::DynamicMessage::deserialize(message, &mut deserializer)
                    .map(|_| ())
                    .map_err(|error| error.to_string())
            }
        }
    }
}
