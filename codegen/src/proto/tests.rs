//! Tests of the proto front end: the field mapping on small inline protos written to a temp
//! directory, and the whole pinned `a2a.proto` (read from the schema cache, or the shared mirror
//! when the cache has not been synced).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{ProtoError, ProtoRevision, load};
use crate::model::{Direction, HttpRouteRow, MethodKind, RevisionModel, Streaming};
use crate::types_emit::TypeNames;

const A2A_PROTO: &str = "a2a/1.0.1/a2a.proto";
const A2A_INCLUDE: &str = "a2a/1.0.1/include";

/// The synced schema cache holding the pinned A2A files.
fn schema_root() -> PathBuf {
    let cache = crate::sources::Layout::discover().cache();
    assert!(
        cache.join(A2A_PROTO).is_file(),
        "{}",
        crate::samples::SYNC_HINT
    );
    cache
}

fn revision(source_path: &str) -> ProtoRevision {
    ProtoRevision {
        protocol: "a2a".to_owned(),
        revision: "1.0.1".to_owned(),
        module: "v1_0_1".to_owned(),
        source_path: source_path.to_owned(),
        browse_url: Some("https://github.com/o/r/blob/c/a2a.proto".to_owned()),
        peers: crate::model::Peers::new("Client", "Agent"),
    }
}

fn include() -> Vec<(PathBuf, String)> {
    vec![(schema_root().join(A2A_INCLUDE), A2A_INCLUDE.to_owned())]
}

/// A custom type's items, emitted with typify's names for every definition of the model.
fn custom_source(model: &RevisionModel, definition: &str) -> String {
    let names = TypeNames::of(model.definitions.keys().map(String::as_str)).unwrap();
    let tokens = model.custom_types[definition].emit(&names).unwrap();
    prettyplease::unparse(&syn::parse2(tokens).unwrap())
}

fn load_a2a() -> RevisionModel {
    let root = schema_root();
    load(&root.join(A2A_PROTO), &include(), &revision(A2A_PROTO)).unwrap()
}

/// The pinned proto compiled independently of the front end, for counting what it declares.
fn a2a_pool() -> prost_reflect::DescriptorPool {
    let root = schema_root();
    let mut compiler =
        protox::Compiler::new([root.join("a2a/1.0.1"), root.join(A2A_INCLUDE)]).unwrap();
    compiler.include_imports(true);
    compiler.open_file("a2a.proto").unwrap();
    compiler.descriptor_pool()
}

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "codegen-proto-test-{}-{unique}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `source` as `demo.proto` in a fresh temp dir and loads it; the googleapis includes
/// of the pinned A2A revision are on the include path.
fn load_inline(source: &str) -> Result<RevisionModel, ProtoError> {
    let dir = TempDir::new();
    let file = dir.0.join("demo.proto");
    std::fs::write(&file, source).unwrap();
    load(&file, &include(), &revision("demo/demo.proto"))
}

const SAMPLE: &str = r#"
syntax = "proto3";
package demo.v1;
import "google/api/field_behavior.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";

enum Color {
  COLOR_UNSPECIFIED = 0;
  COLOR_RED = 1;
}

message Sample {
  message Inner {
    bytes blob = 1;
  }
  int64 big = 1;
  uint64 unsigned_big = 2;
  int32 small = 3;
  Color color = 4;
  google.protobuf.Timestamp created_at = 5;
  google.protobuf.Struct attributes = 6;
  map<string, int32> counts = 7;
  repeated string tags = 8;
  string display_name = 9;
  oneof choice {
    string text = 10;
    Inner inner = 11;
    google.protobuf.Value json_value = 15;
  }
  optional bool flag = 12;
  Inner must_have = 13 [(google.api.field_behavior) = REQUIRED];
  string must_name = 14 [(google.api.field_behavior) = REQUIRED];
  Color must_color = 16 [(google.api.field_behavior) = REQUIRED];
  repeated Inner inners = 17;
  google.protobuf.ListValue list = 18;
  double ratio = 19;
}
"#;

fn sample() -> (RevisionModel, Value) {
    let model = load_inline(SAMPLE).unwrap();
    let schema = model.definitions["Sample"].clone();
    (model, schema)
}

fn property(schema: &Value, name: &str) -> Value {
    schema["properties"][name].clone()
}

#[test]
fn int64_fields_are_decimal_strings_and_int32_fields_integers() {
    let (_, schema) = sample();
    assert_eq!(
        property(&schema, "big"),
        json!({"type": "string", "format": "int64"})
    );
    assert_eq!(
        property(&schema, "unsignedBig"),
        json!({"type": "string", "format": "uint64"})
    );
    assert_eq!(
        property(&schema, "small"),
        json!({"type": "integer", "format": "int32"})
    );
    assert_eq!(
        property(&schema, "ratio"),
        json!({"type": "number", "format": "double"})
    );
}

#[test]
fn enum_fields_refer_to_a_string_enum_of_the_proto_value_names() {
    let (model, schema) = sample();
    assert_eq!(
        property(&schema, "color"),
        json!({"$ref": "#/definitions/Color"})
    );
    assert_eq!(
        model.definitions["Color"],
        json!({"type": "string", "enum": ["COLOR_UNSPECIFIED", "COLOR_RED"],
            "default": "COLOR_UNSPECIFIED"})
    );
}

#[test]
fn every_field_is_accepted_under_its_proto_name_beside_its_json_name() {
    let (model, _) = sample();
    let compact: String = custom_source(&model, "Sample")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    for (json_name, proto_name) in [
        ("displayName", "display_name"),
        ("mustHave", "must_have"),
        ("unsignedBig", "unsigned_big"),
    ] {
        assert!(
            compact.contains(&format!("rename=\"{json_name}\",alias=\"{proto_name}\"")),
            "{json_name}: {compact}"
        );
    }
    let model = load_a2a();
    let emitted = crate::emit::emit_revision(&model).unwrap().source;
    let pool = a2a_pool();
    for message in pool
        .all_messages()
        .filter(|m| m.package_name() == "lf.a2a.v1")
    {
        for field in message.fields().filter(|f| f.name() != f.json_name()) {
            // A plain field carries a serde alias, a oneof member is a second key of its match.
            let alias = format!("alias = \"{}\"", field.name());
            let key = format!("| \"{}\" =>", field.name());
            assert!(
                emitted.contains(&alias) || emitted.contains(&key),
                "{}",
                field.full_name()
            );
        }
    }
}

#[test]
fn timestamp_is_a_date_time_string_and_struct_value_list_are_json() {
    let (_, schema) = sample();
    assert_eq!(
        property(&schema, "createdAt"),
        json!({"type": "string", "format": "date-time"})
    );
    assert_eq!(
        property(&schema, "attributes"),
        json!({"type": "object", "additionalProperties": {}})
    );
    assert_eq!(property(&schema, "jsonValue"), json!({}));
    assert_eq!(
        property(&schema, "list"),
        json!({"type": "array", "items": {}})
    );
}

#[test]
fn map_is_an_object_and_repeated_an_array() {
    let (_, schema) = sample();
    assert_eq!(
        property(&schema, "counts"),
        json!({"type": "object", "additionalProperties": {"type": "integer", "format": "int32"}})
    );
    assert_eq!(
        property(&schema, "tags"),
        json!({"type": "array", "items": {"type": "string"}})
    );
    assert_eq!(
        property(&schema, "inners"),
        json!({"type": "array", "items": {"$ref": "#/definitions/Sample_Inner"}})
    );
}

#[test]
fn property_names_are_the_lower_camel_case_json_names() {
    let (_, schema) = sample();
    let names: BTreeSet<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for expected in [
        "displayName",
        "createdAt",
        "unsignedBig",
        "mustHave",
        "jsonValue",
    ] {
        assert!(
            names.contains(expected),
            "{expected} missing from {names:?}"
        );
    }
    assert!(names.iter().all(|name| !name.contains('_')), "{names:?}");
}

#[test]
fn nested_messages_are_named_outer_underscore_inner_and_bytes_are_base64() {
    let (model, _) = sample();
    assert_eq!(
        model.definitions["Sample_Inner"]["properties"]["blob"],
        json!({"type": "string", "contentEncoding": "base64"})
    );
}

#[test]
fn required_with_presence_is_required_and_without_presence_defaults_to_the_proto_zero() {
    let (_, schema) = sample();
    assert_eq!(schema["required"], json!(["mustHave"]));
    assert_eq!(property(&schema, "mustName")["default"], json!(""));
    assert_eq!(
        property(&schema, "mustColor")["default"],
        json!("COLOR_UNSPECIFIED")
    );
    // Not REQUIRED: absent stays absent, no default.
    assert!(property(&schema, "displayName").get("default").is_none());
    assert!(property(&schema, "flag").get("default").is_none());
}

#[test]
fn oneof_is_exactly_one_member_in_schema_and_a_flattened_enum_in_rust() {
    let (model, schema) = sample();
    assert_eq!(
        schema["oneOf"],
        json!([{"required": ["text"]}, {"required": ["inner"]}, {"required": ["jsonValue"]}])
    );
    let source = &custom_source(&model, "Sample");
    let file = syn::parse_file(source).unwrap();
    let compact: String = source.chars().filter(|c| !c.is_whitespace()).collect();
    let sample = item_struct(&file, "Sample");
    let choice = sample
        .fields
        .iter()
        .find(|field| field.ident.as_ref().is_some_and(|ident| ident == "choice"))
        .unwrap();
    assert!(has_serde_word(&choice.attrs, "flatten"));
    let variants: Vec<String> = item_enum(&file, "SampleChoice")
        .variants
        .iter()
        .map(|variant| variant.ident.to_string())
        .collect();
    assert_eq!(variants, ["Text", "Inner", "JsonValue"]);
    // Members read JSON null as "not set", except a Value member, for which null is a value.
    let arm = |from: &str, to: &str| {
        let start = compact.find(from).unwrap();
        let end = start + compact[start..].find(to).unwrap();
        compact[start..end].to_owned()
    };
    let text_arm = arm("\"text\"=>", "\"inner\"=>");
    assert!(
        text_arm.contains("Option<::std::string::String>"),
        "{text_arm}"
    );
    assert!(text_arm.contains(".map(SampleChoice::Text)"), "{text_arm}");
    // The proto field name is a key too (ProtoJSON parsers accept both).
    let value_arm = arm("\"jsonValue\"|\"json_value\"=>", "_=>");
    assert!(
        value_arm.contains("Some(SampleChoice::JsonValue(map.next_value::<::serde_json::Value>()?"),
        "{value_arm}"
    );
    // The hand-written Deserialize refuses two members and none.
    assert!(source.contains("more than one of `text`, `inner`, `jsonValue`"));
    assert!(source.contains("missing one of `text`, `inner`, `jsonValue`"));
}

#[test]
fn oneof_struct_fields_use_the_json_names_and_typify_type_names() {
    let (model, _) = sample();
    let file = syn::parse_file(&custom_source(&model, "Sample")).unwrap();
    let sample = item_struct(&file, "Sample");
    let must_have = sample
        .fields
        .iter()
        .find(|field| {
            field
                .ident
                .as_ref()
                .is_some_and(|ident| ident == "must_have")
        })
        .unwrap();
    let ty = &must_have.ty;
    assert_eq!(quote::quote!(#ty).to_string(), "SampleInner");
    let attrs = &must_have.attrs;
    assert!(
        quote::quote!(#(#attrs)*)
            .to_string()
            .contains("\"mustHave\"")
    );
}

#[test]
fn a_oneof_member_that_contains_its_parent_is_boxed() {
    let model = load_inline(
        r#"syntax = "proto3";
        package tree;
        message Node { oneof kind { Node child = 1; string leaf = 2; } }"#,
    )
    .unwrap();
    let source = &custom_source(&model, "Node");
    syn::parse_file(source).unwrap();
    let compact: String = source.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(
        compact.contains("Child(::std::boxed::Box<Node>)"),
        "{source}"
    );
}

#[test]
fn a_self_referencing_map_maps_to_an_object_of_refs() {
    let model = load_inline(
        r#"syntax = "proto3";
        package tree;
        message Dir { map<string, Dir> children = 1; }"#,
    )
    .unwrap();
    assert_eq!(
        model.definitions["Dir"]["properties"]["children"],
        json!({"type": "object", "additionalProperties": {"$ref": "#/definitions/Dir"}})
    );
    assert_eq!(model.definitions.len(), 1);
}

#[test]
fn a_custom_http_pattern_keeps_its_verb_and_the_body_field() {
    let model = load_inline(
        r#"syntax = "proto3";
        package demo;
        import "google/api/annotations.proto";
        message A { string a = 1; }
        service S {
          rpc Head(A) returns (A) {
            option (google.api.http) = { custom: { kind: "HEAD" path: "/a/{a}" } body: "a" };
          }
          rpc Plain(A) returns (A);
        }"#,
    )
    .unwrap();
    assert_eq!(model.methods[0].http, [route("HEAD", "/a/{a}", "a")]);
    assert!(model.methods[1].http.is_empty());
}

#[test]
fn every_message_and_enum_of_lf_a2a_v1_has_a_definition() {
    let model = load_a2a();
    let pool = a2a_pool();
    let in_package = |package: &str| package == "lf.a2a.v1";
    let messages: Vec<_> = pool
        .all_messages()
        .filter(|message| in_package(message.package_name()) && !message.is_map_entry())
        .collect();
    let enums: Vec<_> = pool
        .all_enums()
        .filter(|descriptor| in_package(descriptor.package_name()))
        .collect();
    for message in &messages {
        assert!(
            model.definitions.contains_key(message.name()),
            "{}",
            message.full_name()
        );
    }
    for descriptor in &enums {
        assert!(
            model.definitions.contains_key(descriptor.name()),
            "{}",
            descriptor.full_name()
        );
    }
    // Plus `Empty`, the result of DeleteTaskPushNotificationConfig, and nothing else.
    assert_eq!(model.definitions.len(), messages.len() + enums.len() + 1);
    assert_eq!(
        model.definitions["Empty"],
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
}

#[test]
fn method_table_equals_the_rpcs_of_the_a2a_service() {
    let model = load_a2a();
    let pool = a2a_pool();
    let service = pool.get_service_by_name("lf.a2a.v1.A2AService").unwrap();
    let expected: Vec<(String, String, String, bool)> = service
        .methods()
        .map(|method| {
            (
                method.name().to_owned(),
                method.input().name().to_owned(),
                method.output().name().to_owned(),
                method.is_server_streaming(),
            )
        })
        .collect();
    let actual: Vec<(String, String, String, bool)> = model
        .methods
        .iter()
        .map(|row| {
            (
                row.name.clone(),
                row.params.clone().unwrap(),
                row.result.clone().unwrap(),
                row.streaming == Streaming::Results,
            )
        })
        .collect();
    assert_eq!(actual, expected);
    for row in &model.methods {
        assert_eq!(row.direction, Direction::ClientToServer);
        assert_eq!(row.kind, MethodKind::Request);
    }
}

fn route(verb: &str, path: &str, body: &str) -> HttpRouteRow {
    HttpRouteRow {
        verb: verb.to_owned(),
        path: path.to_owned(),
        body: body.to_owned(),
    }
}

#[test]
fn http_routes_include_every_binding_and_its_tenant_variant() {
    let model = load_a2a();
    let method = |name: &str| model.methods.iter().find(|row| row.name == name).unwrap();
    assert_eq!(
        method("SendMessage").http,
        [
            route("POST", "/message:send", "*"),
            route("POST", "/{tenant}/message:send", "*")
        ]
    );
    assert_eq!(
        method("GetTask").http,
        [
            route("GET", "/tasks/{id=*}", ""),
            route("GET", "/{tenant}/tasks/{id=*}", "")
        ]
    );
    assert_eq!(
        method("DeleteTaskPushNotificationConfig").http[0],
        route(
            "DELETE",
            "/tasks/{task_id=*}/pushNotificationConfigs/{id=*}",
            ""
        )
    );
    // Every rpc of this proto has one primary route and its `/{tenant}` twin.
    for row in &model.methods {
        assert_eq!(row.http.len(), 2, "{}", row.name);
        let tenant = &row.http[1];
        assert_eq!(tenant.verb, row.http[0].verb, "{}", row.name);
        assert_eq!(
            tenant.path,
            format!("/{{tenant}}{}", row.http[0].path),
            "{}",
            row.name
        );
    }
}

#[test]
fn params_may_be_omitted_only_when_the_input_requires_nothing() {
    let model = load_a2a();
    let optional = |name: &str| {
        model
            .methods
            .iter()
            .find(|row| row.name == name)
            .unwrap()
            .params_optional
    };
    assert!(optional("GetExtendedAgentCard"));
    assert!(optional("ListTasks"));
    assert!(!optional("GetTask"));
    assert!(!optional("SendMessage"));
}

#[test]
fn sources_record_the_proto_path_and_its_sha256() {
    let model = load_a2a();
    let bytes = std::fs::read(schema_root().join(A2A_PROTO)).unwrap();
    let digest: String = Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    assert_eq!(model.sources.len(), 1);
    assert_eq!(model.sources[0].path, A2A_PROTO);
    assert_eq!(model.sources[0].sha256, digest);
    assert_eq!(
        (
            model.protocol.as_str(),
            model.revision.as_str(),
            model.module.as_str()
        ),
        ("a2a", "1.0.1", "v1_0_1")
    );
}

#[test]
fn a2a_oneof_messages_are_custom_types_that_parse_as_rust() {
    let model = load_a2a();
    let pool = a2a_pool();
    let with_oneof: BTreeSet<String> = pool
        .all_messages()
        .filter(|message| message.package_name() == "lf.a2a.v1")
        .filter(|message| message.oneofs().any(|oneof| !oneof.is_synthetic()))
        .map(|message| message.name().to_owned())
        .collect();
    let custom: BTreeSet<String> = model.custom_types.keys().cloned().collect();
    assert_eq!(custom, with_oneof);
    let names = TypeNames::of(model.definitions.keys().map(String::as_str)).unwrap();
    for name in model.custom_types.keys() {
        let file = syn::parse_file(&custom_source(&model, name))
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        item_struct(&file, &names.ident(name).unwrap().to_string());
    }
}

/// The whole A2A model goes through the back end: typify takes its definitions, the custom
/// types take typify's names, and the module parses.
#[test]
fn the_a2a_model_emits_a_module_whose_types_cover_every_definition() {
    let model = load_a2a();
    let emitted = crate::emit::emit_revision(&model).unwrap();
    let file = syn::parse_file(&emitted.source).unwrap();
    let types = file
        .items
        .iter()
        .find_map(|item| match item {
            syn::Item::Mod(module) if module.ident == "types" => module.content.as_ref(),
            _ => None,
        })
        .unwrap();
    let items: BTreeSet<String> = types
        .1
        .iter()
        .filter_map(|item| match item {
            syn::Item::Struct(item) => Some(item.ident.to_string()),
            syn::Item::Enum(item) => Some(item.ident.to_string()),
            _ => None,
        })
        .collect();
    let names = TypeNames::of(model.definitions.keys().map(String::as_str)).unwrap();
    for (definition, ident) in names.iter() {
        assert!(
            items.contains(&ident.to_string()),
            "{definition} -> {ident} not among {items:?}"
        );
    }
}

#[test]
fn a_missing_import_is_a_parse_error_naming_the_file() {
    let error = load_inline(
        r#"syntax = "proto3";
        package demo;
        import "nowhere/missing.proto";
        message A { string a = 1; }"#,
    )
    .unwrap_err();
    let ProtoError::Parse { place, message } = &error else {
        panic!("not a parse error: {error}");
    };
    assert_eq!(place.file, "demo/demo.proto");
    assert_eq!(place.line_column, Some((3, 9)), "{error}");
    assert!(message.contains("nowhere/missing.proto"), "{message}");
}

#[test]
fn a_syntax_error_names_the_cache_relative_file_line_and_column_on_one_line() {
    let error = load_inline("syntax = \"proto3\";\nmessage A { string = 1; }\n").unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, ProtoError::Parse { .. }), "{error}");
    assert!(text.starts_with("demo/demo.proto:2:20: "), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
}

#[test]
fn an_any_field_is_refused_naming_the_field() {
    let error = load_inline(
        r#"syntax = "proto3";
        package demo;
        import "google/protobuf/any.proto";
        message A { google.protobuf.Any payload = 1; }"#,
    )
    .unwrap_err();
    let ProtoError::Unsupported { element, place, .. } = &error else {
        panic!("not unsupported: {error}");
    };
    assert_eq!(element, "demo.A.payload");
    assert_eq!(place.to_string(), "demo/demo.proto:4:21", "{error}");
}

#[test]
fn a_nested_name_colliding_with_a_top_level_name_is_refused() {
    let error = load_inline(
        r#"syntax = "proto3";
        package demo;
        message Outer { message Inner { string a = 1; } }
        message Outer_Inner { string b = 1; }"#,
    )
    .unwrap_err();
    assert!(matches!(error, ProtoError::NameCollision { .. }), "{error}");
    assert!(error.to_string().contains("Outer"), "{error}");
}

#[test]
fn streaming_rpcs_of_every_kind_get_their_types_and_a_row_saying_which_bindings_serve_them() {
    let model = load_inline(
        r#"syntax = "proto3";
        package demo;
        import "google/api/annotations.proto";
        message Chunk { string data = 1; }
        message Summary { int32 count = 1; }
        service S {
          rpc Upload(stream Chunk) returns (Summary) {
            option (google.api.http) = { post: "/upload" body: "*" };
          }
          rpc Live(stream Chunk) returns (stream Chunk);
          rpc Watch(Chunk) returns (stream Summary) { option (google.api.http) = { get: "/watch" }; }
          rpc Get(Chunk) returns (Summary);
        }"#,
    )
    .unwrap();
    let rows: Vec<(&str, Streaming, bool, usize)> = model
        .methods
        .iter()
        .map(|row| {
            (
                row.name.as_str(),
                row.streaming,
                row.on_json_rpc(),
                row.http.len(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("Upload", Streaming::Params, false, 0),
            ("Live", Streaming::Both, false, 0),
            ("Watch", Streaming::Results, true, 1),
            ("Get", Streaming::Unary, true, 0),
        ]
    );
    assert!(model.definitions.contains_key("Chunk") && model.definitions.contains_key("Summary"));
    let emitted = crate::emit::emit_revision(&model).unwrap().source;
    let squashed: String = emitted.split_whitespace().collect();
    assert!(squashed.contains("name:\"Live\",") && squashed.contains("json_rpc:false"));
    assert!(
        squashed.contains("fnwatch(") && squashed.contains("fnget("),
        "{emitted}"
    );
    assert!(
        !squashed.contains("fnupload(") && !squashed.contains("fnlive("),
        "{emitted}"
    );
}

#[test]
fn a_missing_proto_file_is_an_io_error_naming_it() {
    let dir = TempDir::new();
    let missing = dir.0.join("absent.proto");
    let error = load(&missing, &[], &revision("demo/absent.proto")).unwrap_err();
    assert!(matches!(error, ProtoError::Io { .. }), "{error}");
    assert!(error.to_string().contains("absent.proto"), "{error}");
}

fn item_struct<'a>(file: &'a syn::File, name: &str) -> &'a syn::ItemStruct {
    file.items
        .iter()
        .find_map(|item| match item {
            syn::Item::Struct(item) if item.ident == name => Some(item),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no struct {name}"))
}

fn item_enum<'a>(file: &'a syn::File, name: &str) -> &'a syn::ItemEnum {
    file.items
        .iter()
        .find_map(|item| match item {
            syn::Item::Enum(item) if item.ident == name => Some(item),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no enum {name}"))
}

fn has_serde_word(attrs: &[syn::Attribute], word: &str) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("serde") && quote::quote!(#attr).to_string().contains(word)
    })
}
