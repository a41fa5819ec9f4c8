//! The protocol-neutral demo behaviour: what every demo agent answers to a piece of user text.

use std::time::Duration;

/// What the demo does with one user message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DemoAction {
    /// Answer at once with this text.
    Echo(String),
    /// Work for a while, reporting progress every `tick`, then answer with `reply`; a client may
    /// cancel meanwhile.
    Slow {
        reply: String,
        tick: Duration,
        total: Duration,
    },
}

/// The text (an A2A message's, or the MCP tool's name) that makes the demo name its caller.
pub const WHOAMI: &str = "whoami";

/// How the demo names its caller: the subject the server authenticated, or `anonymous` on a
/// server without authentication (and over stdio).
pub fn whoami(subject: Option<&str>) -> String {
    format!("subject: {}", subject.unwrap_or("anonymous"))
}

/// The prefix that makes the demo take its time.
pub const SLOW_PREFIX: &str = "slow";

/// Decides what the demo does with `text`.
pub fn plan(text: &str) -> DemoAction {
    let reply = echo(text);
    if text.trim_start().starts_with(SLOW_PREFIX) {
        DemoAction::Slow {
            reply,
            tick: Duration::from_millis(500),
            total: Duration::from_secs(8),
        }
    } else {
        DemoAction::Echo(reply)
    }
}

/// The demo's answer to `text`.
pub fn echo(text: &str) -> String {
    format!("echo: {text}")
}

/// The prefix that makes the demo ask a question before it answers (a multi-turn exchange).
pub const ASK_PREFIX: &str = "ask";

/// The question the demo asks before answering `text`, when `text` starts with
/// [`ASK_PREFIX`]; the exchange waits for the client's answer.
pub fn question_for(text: &str) -> Option<String> {
    text.trim_start()
        .starts_with(ASK_PREFIX)
        .then(|| "What should I add?".to_owned())
}

/// The demo's answer once the client answered its question: the first text, then the answer.
pub fn answer_after_question(first: &str, answer: &str) -> String {
    format!("echo: {first} / {answer}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_echoed_with_prefix() {
        assert_eq!(plan("hi"), DemoAction::Echo("echo: hi".into()));
    }

    #[test]
    fn whoami_names_the_subject_or_anonymous() {
        assert_eq!(whoami(Some("alice")), "subject: alice");
        assert_eq!(whoami(None), "subject: anonymous");
    }

    #[test]
    fn text_starting_with_slow_takes_its_time() {
        assert!(matches!(plan("slow please"), DemoAction::Slow { .. }));
    }

    #[test]
    fn text_starting_with_ask_asks_first_and_answers_with_both_texts() {
        assert!(question_for("ask me").is_some());
        assert_eq!(question_for("hello"), None);
        assert_eq!(
            answer_after_question("ask me", "more"),
            "echo: ask me / more"
        );
    }
}
