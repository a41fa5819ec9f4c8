//! MCP log levels (syslog's eight, least severe first) and the filter `logging/setLevel` sets.

use std::str::FromStr;

/// A log level; the derived order is by severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Level {
    /// Detailed debugging information.
    Debug,
    /// Normal operational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl Level {
    const ALL: [Self; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// The level's name on the wire (`debug` … `emergency`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }

    /// The level a session stored as its index (the server's own bookkeeping).
    #[cfg(feature = "server")]
    pub(crate) fn from_index(index: u8) -> Option<Self> {
        Self::ALL.get(usize::from(index)).copied()
    }

    /// Whether a message at this level passes a client's `floor` (none set: everything does).
    pub fn passes(self, floor: Option<Self>) -> bool {
        floor.is_none_or(|floor| self >= floor)
    }
}

/// The text is not an MCP log level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown log level `{0}`")]
pub struct UnknownLevel(pub String);

impl FromStr for Level {
    type Err = UnknownLevel;

    fn from_str(text: &str) -> Result<Self, UnknownLevel> {
        Self::ALL
            .into_iter()
            .find(|level| level.as_str() == text)
            .ok_or_else(|| UnknownLevel(text.to_owned()))
    }
}

/// The generated 2025-11-25 level (what `logging/setLevel` params hold) as the server's own.
impl From<crate::types::LoggingLevel> for Level {
    fn from(level: crate::types::LoggingLevel) -> Self {
        use crate::types::LoggingLevel as Wire;
        match level {
            Wire::Debug => Self::Debug,
            Wire::Info => Self::Info,
            Wire::Notice => Self::Notice,
            Wire::Warning => Self::Warning,
            Wire::Error => Self::Error,
            Wire::Critical => Self::Critical,
            Wire::Alert => Self::Alert,
            Wire::Emergency => Self::Emergency,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_passes_only_a_floor_at_or_below_its_level() {
        assert!(Level::Warning.passes(Some(Level::Info)));
        assert!(Level::Info.passes(Some(Level::Info)));
        assert!(!Level::Debug.passes(Some(Level::Info)));
        assert!(Level::Debug.passes(None));
    }

    #[test]
    fn levels_parse_from_their_wire_names() {
        for level in Level::ALL {
            assert_eq!(level.as_str().parse::<Level>(), Ok(level));
        }
        assert!("verbose".parse::<Level>().is_err());
    }

    #[test]
    fn a_generated_level_converts_to_the_level_of_its_wire_name() {
        for level in Level::ALL {
            let wire: crate::types::LoggingLevel =
                serde_json::from_value(serde_json::json!(level.as_str())).unwrap();
            assert_eq!(Level::from(wire), level);
        }
    }
}
