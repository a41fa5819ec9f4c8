//! The MCP revisions this crate serves and the rules that differ between them: which one an
//! `initialize` negotiates, which accept JSON-RPC batches, which carry the version header, and
//! which is stateless. One place for each rule, so the handler never compares date strings.

use std::fmt;
use std::str::FromStr;

/// One MCP protocol revision, oldest first (the derived order is chronological).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

/// The version string is not a revision this crate serves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported MCP protocol version `{0}`")]
pub struct UnsupportedRevision(pub String);

impl Revision {
    /// Every served revision, oldest first.
    pub const ALL: [Self; 5] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];

    /// The newest revision with an `initialize` handshake; what the handler's types are from.
    pub const NEWEST_SESSION: Self = Self::V2025_11_25;

    /// What a request without a version header is assumed to speak (per 2025-06-18).
    pub const ASSUMED_WITHOUT_HEADER: Self = Self::V2025_03_26;

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// The revision an `initialize` offering `offered` gets: the offered one when it is a
    /// session revision we serve, otherwise the newest session revision (the client then
    /// decides whether it can speak it).
    pub fn negotiate(offered: &str) -> Self {
        match offered.parse::<Self>() {
            Ok(revision) if revision.has_initialize() => revision,
            _ => Self::NEWEST_SESSION,
        }
    }

    /// Whether this revision opens a session with `initialize` (all but the stateless one).
    pub const fn has_initialize(self) -> bool {
        !self.is_stateless()
    }

    /// Whether every request stands alone, carrying its version and client capabilities in
    /// `_meta` (2026-07-28).
    pub const fn is_stateless(self) -> bool {
        matches!(self, Self::V2026_07_28)
    }

    /// Whether a JSON-RPC batch is allowed: only 2025-03-26 had them.
    pub const fn accepts_batches(self) -> bool {
        matches!(self, Self::V2025_03_26)
    }

    /// Whether HTTP requests after initialization carry `MCP-Protocol-Version`.
    pub const fn has_version_header(self) -> bool {
        matches!(
            self,
            Self::V2025_06_18 | Self::V2025_11_25 | Self::V2026_07_28
        )
    }

    /// Whether results carry `resultType` (2026-07-28).
    pub const fn has_result_type(self) -> bool {
        self.is_stateless()
    }

    /// Whether the client may be asked to fill in a form (`elicitation/create`).
    pub const fn has_elicitation(self) -> bool {
        matches!(
            self,
            Self::V2025_06_18 | Self::V2025_11_25 | Self::V2026_07_28
        )
    }

    /// Whether content may be audio (from 2025-03-26).
    pub fn has_audio_content(self) -> bool {
        self >= Self::V2025_03_26
    }

    /// Whether content may be a resource link (from 2025-06-18).
    pub fn has_resource_links(self) -> bool {
        self >= Self::V2025_06_18
    }

    /// Whether every content kind the handler's revision has exists here, so content passes
    /// through unchanged.
    pub fn has_every_content_kind(self) -> bool {
        self.has_audio_content() && self.has_resource_links()
    }

    /// Whether progress notifications carry a `message`.
    pub const fn has_progress_message(self) -> bool {
        !matches!(self, Self::V2024_11_05)
    }

    /// The version strings, oldest first (what `-32022` lists as supported).
    pub fn supported() -> Vec<String> {
        Self::ALL
            .iter()
            .map(|revision| revision.as_str().to_owned())
            .collect()
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Revision {
    type Err = UnsupportedRevision;

    fn from_str(text: &str) -> Result<Self, UnsupportedRevision> {
        Self::ALL
            .into_iter()
            .find(|revision| revision.as_str() == text)
            .ok_or_else(|| UnsupportedRevision(text.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_session_revision_is_negotiated_as_offered() {
        for revision in [
            Revision::V2024_11_05,
            Revision::V2025_03_26,
            Revision::V2025_06_18,
        ] {
            assert_eq!(Revision::negotiate(revision.as_str()), revision);
        }
    }

    #[test]
    fn an_unknown_or_newer_offer_gets_the_newest_session_revision() {
        for offered in ["2099-01-01", "draft", "", "2026-07-28"] {
            assert_eq!(
                Revision::negotiate(offered),
                Revision::NEWEST_SESSION,
                "{offered}"
            );
        }
    }

    #[test]
    fn every_content_kind_exists_from_2025_06_18_on() {
        let complete: Vec<Revision> = Revision::ALL
            .into_iter()
            .filter(|revision| revision.has_every_content_kind())
            .collect();
        assert_eq!(
            complete,
            vec![
                Revision::V2025_06_18,
                Revision::V2025_11_25,
                Revision::V2026_07_28
            ]
        );
    }

    #[test]
    fn only_2025_03_26_accepts_batches() {
        let batching: Vec<Revision> = Revision::ALL
            .into_iter()
            .filter(|revision| revision.accepts_batches())
            .collect();
        assert_eq!(batching, vec![Revision::V2025_03_26]);
    }

    #[test]
    fn revisions_parse_back_from_their_strings_and_nothing_else_parses() {
        for revision in Revision::ALL {
            assert_eq!(revision.as_str().parse::<Revision>(), Ok(revision));
        }
        assert!("2025-13-01".parse::<Revision>().is_err());
    }
}
