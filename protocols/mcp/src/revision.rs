//! The rules that differ between MCP revisions: which one an `initialize` negotiates, which
//! accept JSON-RPC batches, which carry the version header, and which is stateless. One place
//! for each rule, so the handler never compares date strings. The list of revisions itself is
//! the generated [`Revision`] (one variant per revision pinned in `schema/sources.toml`, oldest
//! first); the rules here are written against its order, so a newly pinned revision takes the
//! rules of the newest one before it without an edit here.

use std::str::FromStr;

pub use crate::generated::Revision;

/// The version string is not a revision this crate serves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported MCP protocol version `{0}`")]
pub struct UnsupportedRevision(pub String);

impl Revision {
    /// The newest revision with an `initialize` handshake; what the handler's types are from.
    pub const NEWEST_SESSION: Self = Self::V2025_11_25;

    /// What a request without a version header is assumed to speak (per 2025-06-18).
    pub const ASSUMED_WITHOUT_HEADER: Self = Self::V2025_03_26;

    /// The first revision whose requests stand alone; every later one keeps that.
    const FIRST_STATELESS: Self = Self::V2026_07_28;

    /// The revision an `initialize` offering `offered` gets: the offered one when it is a
    /// session revision we serve, otherwise the newest session revision (the client then
    /// decides whether it can speak it).
    pub fn negotiate(offered: &str) -> Self {
        match offered.parse::<Self>() {
            Ok(revision) if revision.has_initialize() => revision,
            _ => Self::NEWEST_SESSION,
        }
    }

    /// Whether this revision opens a session with `initialize` (all but the stateless ones).
    pub const fn has_initialize(self) -> bool {
        !self.is_stateless()
    }

    /// Whether every request stands alone, carrying its version and client capabilities in
    /// `_meta` (from 2026-07-28).
    pub const fn is_stateless(self) -> bool {
        self.is_from(Self::FIRST_STATELESS)
    }

    /// Whether a JSON-RPC batch is allowed: only 2025-03-26 had them.
    pub const fn accepts_batches(self) -> bool {
        matches!(self, Self::V2025_03_26)
    }

    /// Whether HTTP requests after initialization carry `MCP-Protocol-Version` (from
    /// 2025-06-18).
    pub const fn has_version_header(self) -> bool {
        self.is_from(Self::V2025_06_18)
    }

    /// Whether results carry `resultType` (the stateless revisions).
    pub const fn has_result_type(self) -> bool {
        self.is_stateless()
    }

    /// Whether the client may be asked to fill in a form (`elicitation/create`, from
    /// 2025-06-18).
    pub const fn has_elicitation(self) -> bool {
        self.is_from(Self::V2025_06_18)
    }

    /// Whether content may be audio (from 2025-03-26).
    pub const fn has_audio_content(self) -> bool {
        self.is_from(Self::V2025_03_26)
    }

    /// Whether content may be a resource link (from 2025-06-18).
    pub const fn has_resource_links(self) -> bool {
        self.is_from(Self::V2025_06_18)
    }

    /// Whether every content kind the handler's revision has exists here, so content passes
    /// through unchanged.
    pub const fn has_every_content_kind(self) -> bool {
        self.has_audio_content() && self.has_resource_links()
    }

    /// Whether progress notifications carry a `message` (all after 2024-11-05).
    pub const fn has_progress_message(self) -> bool {
        !matches!(self, Self::V2024_11_05)
    }

    /// Whether tasks are the experimental `tasks/*` methods of 2025-11-25 (the only revision
    /// that had them).
    pub const fn has_experimental_tasks(self) -> bool {
        matches!(self, Self::V2025_11_25)
    }

    /// Whether tasks are served as the tasks extension (the stateless revisions).
    pub const fn has_tasks_extension(self) -> bool {
        self.is_stateless()
    }

    /// Whether this revision is `first` or pinned after it: the derived order, in a form
    /// `const fn`s can use (a fieldless enum's discriminants follow its variants).
    const fn is_from(self, first: Self) -> bool {
        self as u8 >= first as u8
    }

    /// The version strings, oldest first (what `-32022` lists as supported).
    pub fn supported() -> Vec<String> {
        Self::ALL
            .iter()
            .map(|revision| revision.as_str().to_owned())
            .collect()
    }
}

impl FromStr for Revision {
    type Err = UnsupportedRevision;

    fn from_str(text: &str) -> Result<Self, UnsupportedRevision> {
        Self::from_text(text).ok_or_else(|| UnsupportedRevision(text.to_owned()))
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
