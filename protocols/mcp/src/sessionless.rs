//! The session revisions (2024-11-05 … 2025-11-25) on an endpoint without sessions
//! (`SessionMode::Sessionless`), as the other SDKs' stateless modes serve them. Each rule here
//! once:
//!
//! - `initialize` is answered and forgotten: no session is issued, nothing is kept, and the
//!   capabilities no longer offer `resources.subscribe`.
//! - Every later request speaks the revision its `MCP-Protocol-Version` header names (absent:
//!   2025-03-26, as 2025-06-18 says; one not served was already refused with 400 by
//!   `stateless::admit`). The stateless revision (2026-07-28) is served as it always is.
//! - The client's capabilities are unknown: what `initialize` declared is gone. A request is
//!   served with those its `_meta` declares (`io.modelcontextprotocol/clientCapabilities`, as
//!   a 2026-07-28 client sends them) and none otherwise, so sampling, elicitation and roots are
//!   refused to the handler as undeclared (the Python SDK refuses them too) rather than sent to
//!   a client that may not take them.
//! - What needs a session is refused: `resources/subscribe` and `resources/unsubscribe` (no
//!   stream would carry `notifications/resources/updated`); the transport answers `GET` and
//!   `DELETE` with 405 itself.
//! - An error goes out with the status its revision gives it: 200 for a session revision.

use http::HeaderMap;
use protocols_runtime::{ErrorObject, Served, jsonrpc};
use serde_json::Value;

use crate::generated::v2025_11_25::methods;
use crate::revision::Revision;
use crate::stateless;

/// The revision a request without a session speaks: its version header's, else 2025-03-26.
pub(crate) fn revision(headers: &HeaderMap) -> Result<Revision, ErrorObject> {
    match stateless::header_revision(headers) {
        Ok(named) => Ok(named.unwrap_or(Revision::ASSUMED_WITHOUT_HEADER)),
        Err(requested) => Err(stateless::unsupported_version(&requested)),
    }
}

/// How a request is answered: as in a session, unless its header names the stateless revision.
pub(crate) fn served(headers: &HeaderMap) -> Served {
    let version = headers
        .get(&stateless::VERSION_HEADER)
        .and_then(|value| value.to_str().ok());
    if stateless::names_stateless_header(version) {
        Served::Sessionless
    } else {
        Served::InSession
    }
}

/// The refusal of a method that needs a session, `None` for any other.
pub(crate) fn refusal(method: &str) -> Option<ErrorObject> {
    matches!(
        method,
        methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE
    )
    .then(|| {
        ErrorObject::new(
            jsonrpc::codes::METHOD_NOT_FOUND,
            format!("{method} needs a session, and this server is sessionless"),
        )
    })
}

/// An `initialize` result as a server without sessions gives it: no `resources.subscribe`,
/// which it refuses.
pub(crate) fn described(mut result: Value) -> Value {
    if let Some(Value::Object(resources)) = result
        .get_mut("capabilities")
        .and_then(|capabilities| capabilities.get_mut("resources"))
    {
        resources.remove("subscribe");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

    fn with_version(version: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(stateless::VERSION_HEADER, HeaderValue::from_static(version));
        headers
    }

    #[test]
    fn a_request_without_a_version_header_speaks_2025_03_26_and_one_with_it_its_revision() {
        assert_eq!(revision(&HeaderMap::new()), Ok(Revision::V2025_03_26));
        assert_eq!(
            revision(&with_version("2025-06-18")),
            Ok(Revision::V2025_06_18)
        );
        assert!(revision(&with_version("1999-01-01")).is_err());
    }

    #[test]
    fn only_a_stateless_revision_is_answered_as_stateless() {
        assert_eq!(served(&HeaderMap::new()), Served::InSession);
        assert_eq!(served(&with_version("2025-11-25")), Served::InSession);
        assert_eq!(served(&with_version("2026-07-28")), Served::Sessionless);
    }

    #[test]
    fn subscriptions_are_refused_and_not_offered() {
        assert!(refusal(methods::RESOURCES_SUBSCRIBE).is_some());
        assert!(refusal(methods::RESOURCES_UNSUBSCRIBE).is_some());
        assert!(refusal(methods::TOOLS_CALL).is_none());
        let result = described(
            json!({"capabilities": {"resources": {"subscribe": true, "listChanged": true}}}),
        );
        assert_eq!(
            result["capabilities"]["resources"],
            json!({"listChanged": true})
        );
    }
}
