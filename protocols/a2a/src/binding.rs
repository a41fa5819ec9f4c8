//! What both sides of the HTTP+JSON binding read off the generated method table: the
//! `google.api.http` path templates (filled in by the client, matched by the server), the
//! proto-to-JSON naming of their variables and the verbs each route is served with. Compiled
//! with either side, so the client does not build the server's router for them.

use protocols_runtime::method::{HttpRoute, MethodSpec};
use serde_json::{Map, Value};

/// One segment of a route template: literal text, or a variable with an optional literal
/// suffix (`{id=*}:cancel`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Variable { name: String, suffix: String },
}

/// A parsed `google.api.http` path template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    segments: Vec<Segment>,
}

impl Template {
    /// Parses a path template such as `/tasks/{id=*}:cancel` into its segments.
    pub fn parse(path: &str) -> Self {
        let segments = path
            .split('/')
            .filter(|segment| !segment.is_empty())
            .map(
                |segment| match segment.strip_prefix('{').and_then(|s| s.split_once('}')) {
                    Some((inner, suffix)) => Segment::Variable {
                        name: inner.split('=').next().unwrap_or(inner).to_owned(),
                        suffix: suffix.to_owned(),
                    },
                    None => Segment::Literal(segment.to_owned()),
                },
            )
            .collect();
        Self { segments }
    }

    /// The concrete path for `params`, taking each variable's value out of them (the client
    /// side); `None` when a variable has no string value.
    pub fn fill(&self, params: &mut Map<String, Value>) -> Option<String> {
        let mut path = String::new();
        for segment in &self.segments {
            path.push('/');
            match segment {
                Segment::Literal(text) => path.push_str(text),
                Segment::Variable { name, suffix } => {
                    let value = params.remove(&json_name(name))?;
                    path.push_str(value.as_str()?);
                    path.push_str(suffix);
                }
            }
        }
        Some(path)
    }

    /// How much fixed text the template has; the more, the more specific.
    #[cfg(feature = "server")]
    pub(crate) fn literal_len(&self) -> usize {
        self.segments
            .iter()
            .map(|segment| match segment {
                Segment::Literal(text) => text.len(),
                Segment::Variable { suffix, .. } => suffix.len(),
            })
            .sum()
    }

    /// The variables' values when `path` (split into segments) fits the template.
    pub fn matches(&self, path: &[&str]) -> Option<Vec<(String, String)>> {
        if path.len() != self.segments.len() {
            return None;
        }
        let mut bound = Vec::new();
        for (segment, text) in self.segments.iter().zip(path) {
            match segment {
                Segment::Literal(literal) if literal == text => {}
                Segment::Literal(_) => return None,
                Segment::Variable { name, suffix } => {
                    let value = text.strip_suffix(suffix.as_str())?;
                    if value.is_empty() {
                        return None;
                    }
                    bound.push((name.clone(), value.to_owned()));
                }
            }
        }
        Some(bound)
    }
}

/// `task_id` → `taskId`: path variables are named as in the proto, params as in its JSON.
pub(crate) fn json_name(proto_name: &str) -> String {
    let mut out = String::with_capacity(proto_name.len());
    let mut upper = false;
    for character in proto_name.chars() {
        if character == '_' {
            upper = true;
        } else if upper {
            out.extend(character.to_uppercase());
            upper = false;
        } else {
            out.push(character);
        }
    }
    out
}

/// The verbs a route is served with: its annotation's, and `POST` for `SubscribeToTask`, whose
/// annotation says `GET` where the specification's binding table (§5.3) and the official
/// clients say `POST`.
pub(crate) fn verbs(spec: &MethodSpec, route: &HttpRoute) -> &'static [&'static str] {
    match (spec.name, route.verb) {
        (crate::v1::methods::SUBSCRIBE_TO_TASK, "GET") => &["POST", "GET"],
        (_, "GET") => &["GET"],
        (_, "POST") => &["POST"],
        (_, "DELETE") => &["DELETE"],
        (_, "PUT") => &["PUT"],
        (_, "PATCH") => &["PATCH"],
        _ => &[],
    }
}
