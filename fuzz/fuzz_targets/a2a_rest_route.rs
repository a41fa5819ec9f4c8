//! A2A's HTTP+JSON route matcher (`protocols_a2a::rest`) on any request line. Input:
//! `VERB /path?query`. Claims: nothing panics; a path no template of the method table fits is
//! unknown, one only templates of other verbs fit is the wrong verb, and otherwise it is routed
//! to a row of this verb whose template fits; the variables bound fill that template back into
//! exactly the path asked for; every query pair is read.

#![no_main]

use http::Method;
use libfuzzer_sys::fuzz_target;
use protocols_a2a::rest::Template;
use protocols_a2a::rest::fuzzing::{Routed, json_name, query, route};
use serde_json::{Map, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let (verb, target) = line.split_once(' ').unwrap_or(("GET", line));
    let Ok(verb) = Method::from_bytes(verb.as_bytes()) else {
        return;
    };
    let (path, query_text) = target.split_once('?').unwrap_or((target, ""));
    // As the binding splits what follows its prefix.
    let segments: Vec<&str> = path
        .split('/')
        .filter(|segment| !segment.is_empty())
        .collect();
    let fitting: Vec<(&str, &str)> = protocols_a2a::v1::METHODS
        .iter()
        .flat_map(|spec| spec.http)
        .filter(|row| Template::parse(row.path).matches(&segments).is_some())
        .map(|row| (row.verb, row.path))
        .collect();
    let of_this_verb = |row_verb: &str| row_verb.eq_ignore_ascii_case(verb.as_str());
    match route(&verb, &segments) {
        Routed::Unknown => assert!(
            fitting.is_empty(),
            "{verb} {path}: unknown, yet {fitting:?} fit"
        ),
        Routed::WrongVerb { allowed } => {
            assert!(
                !fitting.is_empty() && !fitting.iter().any(|(row_verb, _)| of_this_verb(*row_verb)),
                "{verb} {path}: wrong verb, yet {fitting:?} fit"
            );
            assert!(
                allowed.iter().all(|allowed| fitting
                    .iter()
                    .any(|(row_verb, _)| row_verb.eq_ignore_ascii_case(allowed))),
                "{verb} {path}: allowed {allowed:?}, but only {fitting:?} fit"
            );
        }
        Routed::Found {
            method,
            verb: row_verb,
            template,
            bound,
        } => {
            assert!(
                of_this_verb(row_verb),
                "{verb} {path} routed to {row_verb} {template}"
            );
            let parsed = Template::parse(template);
            assert_eq!(parsed.matches(&segments).as_ref(), Some(&bound), "{method}");
            let mut params: Map<String, Value> = bound
                .iter()
                .map(|(name, value)| (json_name(name), Value::String(value.clone())))
                .collect();
            let filled = parsed.fill(&mut params);
            let asked = format!("/{}", segments.join("/"));
            assert_eq!(
                filled.as_deref(),
                Some(asked.as_str()),
                "{method} {template}"
            );
            assert!(
                params.is_empty(),
                "{method}: a bound variable was not in the template"
            );
        }
    }
    let pairs = query(query_text);
    let written = query_text
        .split('&')
        .filter(|pair| !pair.is_empty())
        .count();
    assert_eq!(pairs.len(), written, "a query pair was lost");
});
