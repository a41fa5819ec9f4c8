//! Protocol version negotiation: which ACP revision a connection speaks. The client names the
//! latest version it supports; the agent answers with that version when it serves it, and
//! otherwise with the latest version it does serve (the client then decides whether to stay).
//! Version 2 exists only in builds with the `unstable` feature: upstream still marks it draft, so
//! without the feature a client asking for 2 is answered with 1.

use serde_json::Value;

/// An ACP protocol revision this crate can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    /// Protocol version 1, the stable revision.
    V1,
    /// Protocol version 2, still unstable upstream.
    #[cfg(feature = "unstable")]
    V2,
}

impl Revision {
    /// The integer the revision is named by on the wire (`protocolVersion`).
    pub const fn number(self) -> u16 {
        match self {
            Self::V1 => 1,
            #[cfg(feature = "unstable")]
            Self::V2 => 2,
        }
    }

    /// The revision a wire number names, if this crate knows it.
    pub const fn from_number(number: u64) -> Option<Self> {
        match number {
            1 => Some(Self::V1),
            #[cfg(feature = "unstable")]
            2 => Some(Self::V2),
            _ => None,
        }
    }
}

/// The revision to answer a client that asked for `requested`, among `served` (never empty in
/// practice; `V1` when it is).
pub fn negotiate(requested: Option<u64>, served: &[Revision]) -> Revision {
    let latest = served.iter().copied().max().unwrap_or(Revision::V1);
    requested
        .and_then(Revision::from_number)
        .filter(|wanted| served.contains(wanted))
        .unwrap_or(latest)
}

/// The `protocolVersion` an `initialize` request's params name, when it is a number.
pub fn requested_version(params: &Value) -> Option<u64> {
    params.get("protocolVersion").and_then(Value::as_u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "unstable")]
    #[test]
    fn a_served_requested_version_is_granted() {
        let served = [Revision::V1, Revision::V2];
        assert_eq!(negotiate(Some(1), &served), Revision::V1);
        assert_eq!(negotiate(Some(2), &served), Revision::V2);
    }

    #[test]
    fn an_unserved_version_is_answered_with_the_latest_served() {
        assert_eq!(negotiate(Some(2), &[Revision::V1]), Revision::V1);
        assert_eq!(negotiate(None, &[Revision::V1]), Revision::V1);
    }

    #[cfg(feature = "unstable")]
    #[test]
    fn an_unknown_version_is_answered_with_the_latest_served() {
        assert_eq!(
            negotiate(Some(99), &[Revision::V1, Revision::V2]),
            Revision::V2
        );
    }

    #[cfg(not(feature = "unstable"))]
    #[test]
    fn without_the_unstable_feature_version_2_is_unknown_and_1_is_answered() {
        assert_eq!(Revision::from_number(2), None);
        assert_eq!(negotiate(Some(2), &[Revision::V1]), Revision::V1);
    }

    #[test]
    fn the_requested_version_is_read_from_initialize_params() {
        let params = serde_json::json!({"protocolVersion": 2});
        assert_eq!(requested_version(&params), Some(2));
        assert_eq!(
            requested_version(&serde_json::json!({"protocolVersion": "2"})),
            None
        );
    }
}
