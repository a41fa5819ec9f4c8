//! A2A's HTTP+JSON route matcher (`protocols_a2a::rest`) on any request line. Input:
//! `VERB /path?query`. Claims: nothing panics; a path no template of the method table fits is
//! unknown, one only templates of other verbs fit is the wrong verb, and otherwise it is routed
//! to a row of this verb whose template fits; the variables bound fill that template back into
//! exactly the path asked for; every query pair is read.

#![no_main]

use http::Method;
use libfuzzer_sys::fuzz_target;
use protocols_a2a::rest::Template;
use protocols_a2a::rest::fuzzing::{Routed, json_name, query, route, served_verbs};
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
    // Each fitting row with the verbs it is served with (HTTP verbs are case-sensitive).
    let fitting: Vec<(&[&str], &str, &str)> = protocols_a2a::v1::METHODS
        .iter()
        .flat_map(|spec| spec.http.iter().map(move |row| (spec, row)))
        .filter(|(_, row)| Template::parse(row.path).matches(&segments).is_some())
        .map(|(spec, row)| (served_verbs(spec, row), spec.name, row.path))
        .collect();
    let serves_this_verb = |served: &[&str]| served.contains(&verb.as_str());
    match route(&verb, &segments) {
        Routed::Unknown => assert!(
            fitting.is_empty(),
            "{verb} {path}: unknown, yet {fitting:?} fit"
        ),
        Routed::WrongVerb { allowed } => {
            assert!(
                !fitting.is_empty() && !fitting.iter().any(|(served, ..)| serves_this_verb(served)),
                "{verb} {path}: wrong verb, yet {fitting:?} fit"
            );
            assert!(
                allowed
                    .iter()
                    .all(|allowed| fitting.iter().any(|(served, ..)| served.contains(allowed))),
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
                fitting
                    .iter()
                    .any(|(served, name, fitting_template)| *name == method
                        && *fitting_template == template
                        && serves_this_verb(served)),
                "{verb} {path} routed to {row_verb} {template}, which does not serve {verb}"
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
