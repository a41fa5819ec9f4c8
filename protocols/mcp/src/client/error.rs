//! The client's transport errors: an HTTP answer that is not an MCP answer keeps its status,
//! its parsed `WWW-Authenticate` challenge and (bounded, quoted) body, so a caller can tell a
//! missing token from a dead session from a broken server.

use std::fmt;

use http::{HeaderMap, StatusCode};
use protocols_runtime::ErrorObject;
use protocols_runtime::method::ClientError;
use protocols_runtime::quote::quote;

/// A `WWW-Authenticate` challenge (RFC 9110 §11.6.1), with the parameters RFC 6750 and
/// RFC 9728 define read out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Challenge {
    /// The auth scheme (`Bearer`, `DPoP`), as sent.
    pub scheme: String,
    /// Every `name=value` parameter, names lowercased, quoted values unescaped.
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// The challenges of every `WWW-Authenticate` header, the first Bearer one first.
    pub fn from_headers(headers: &HeaderMap) -> Vec<Self> {
        let mut challenges: Vec<Self> = headers
            .get_all(http::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(parse_challenges)
            .collect();
        challenges.sort_by_key(|challenge| !challenge.scheme.eq_ignore_ascii_case("bearer"));
        challenges
    }

    /// The parameter `name` (case-insensitive).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// RFC 6750's `error` (`invalid_token`, `insufficient_scope`).
    pub fn error(&self) -> Option<&str> {
        self.param("error")
    }

    /// RFC 6750's `scope`: what the resource wants the token to carry.
    pub fn scope(&self) -> Option<&str> {
        self.param("scope")
    }

    /// RFC 9728's `resource_metadata`: where the protected-resource metadata lives.
    pub fn resource_metadata(&self) -> Option<&str> {
        self.param("resource_metadata")
    }
}

/// Parses one header value into its challenges: `scheme [token68 | param *("," param)]`,
/// challenges separated by commas too (a new one starts where a token is not followed by `=`).
fn parse_challenges(value: &str) -> Vec<Challenge> {
    let mut challenges: Vec<Challenge> = Vec::new();
    let mut rest = value.trim();
    while !rest.is_empty() {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        let token_end = rest.find([' ', '\t', ',', '=']).unwrap_or(rest.len());
        let (token, after) = rest.split_at(token_end);
        if token.is_empty() {
            break;
        }
        let after_space = after.trim_start_matches([' ', '\t']);
        if let Some(value_part) = after_space.strip_prefix('=')
            && let Some(current) = challenges.last_mut()
        {
            let (value, remaining) = read_value(value_part.trim_start_matches([' ', '\t']));
            current.params.push((token.to_ascii_lowercase(), value));
            rest = remaining;
        } else {
            challenges.push(Challenge {
                scheme: token.to_owned(),
                params: Vec::new(),
            });
            rest = after;
        }
    }
    challenges
}

/// A quoted string (backslash escapes undone) or a token, and what follows it.
fn read_value(text: &str) -> (String, &str) {
    let Some(quoted) = text.strip_prefix('"') else {
        let end = text.find([',', ' ', '\t']).unwrap_or(text.len());
        let (value, rest) = text.split_at(end);
        return (value.to_owned(), rest);
    };
    let mut value = String::new();
    let mut chars = quoted.char_indices();
    while let Some((index, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    value.push(escaped);
                }
            }
            '"' => return (value, quoted.get(index + 1..).unwrap_or_default()),
            other => value.push(other),
        }
    }
    (value, "")
}

/// An HTTP answer that carried no MCP answer.
#[derive(Debug, Clone)]
pub struct HttpError {
    /// The status the server answered with.
    pub status: StatusCode,
    /// The parsed `WWW-Authenticate` challenges, the first Bearer one first.
    pub challenges: Vec<Challenge>,
    /// A JSON-RPC error the body carried, if it carried one.
    pub error: Option<ErrorObject>,
    /// The start of the body, quoted (bounded, control characters escaped).
    pub body: String,
}

impl HttpError {
    pub(crate) fn new(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Self {
        let error = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|value| value.get("error").cloned())
            .and_then(|error| serde_json::from_value(error).ok());
        Self {
            status,
            challenges: Challenge::from_headers(headers),
            error,
            body: quote(&String::from_utf8_lossy(body)).to_string(),
        }
    }

    /// The challenge the answer carried, if any (the Bearer one when there are several).
    pub fn challenge(&self) -> Option<&Challenge> {
        self.challenges.first()
    }

    /// The HTTP error inside a client error, when that is what it was.
    pub fn of(error: &ClientError) -> Option<&Self> {
        match error {
            ClientError::Transport(source) => source.downcast_ref(),
            _ => None,
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}", self.status)?;
        if let Some(challenge) = self.challenge() {
            write!(f, " ({} challenge", challenge.scheme)?;
            if let Some(error) = challenge.error() {
                write!(f, ": {}", quote(error))?;
            }
            write!(f, ")")?;
        }
        if let Some(error) = &self.error {
            write!(f, ": {} {}", error.code, quote(&error.message))?;
        } else if !self.body.is_empty() {
            write!(f, ": {}", self.body)?;
        }
        Ok(())
    }
}

impl std::error::Error for HttpError {}

impl From<HttpError> for ClientError {
    fn from(error: HttpError) -> Self {
        // A JSON-RPC error is the server's answer, whatever status carried it.
        match error.error {
            Some(rejection) if !matches!(error.status.as_u16(), 401 | 403 | 404) => {
                Self::Rejected(rejection)
            }
            _ => Self::Transport(Box::new(error)),
        }
    }
}

/// A failure the transport describes in words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TransportFailure(pub(crate) String);

pub(crate) fn failure(message: impl Into<String>) -> ClientError {
    ClientError::Transport(Box::new(TransportFailure(message.into())))
}

pub(crate) fn transport_error(
    error: impl std::error::Error + Send + Sync + 'static,
) -> ClientError {
    ClientError::Transport(Box::new(error))
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    #[test]
    fn a_bearer_challenge_reads_its_quoted_parameters() {
        let challenges = parse_challenges(
            r#"Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="http://a/.well-known/oauth-protected-resource", error_description="say \"no\"""#,
        );
        assert_eq!(challenges.len(), 1);
        let challenge = &challenges[0];
        assert_eq!(challenge.scheme, "Bearer");
        assert_eq!(challenge.error(), Some("insufficient_scope"));
        assert_eq!(challenge.scope(), Some("mcp:read mcp:write"));
        assert_eq!(
            challenge.resource_metadata(),
            Some("http://a/.well-known/oauth-protected-resource")
        );
        assert_eq!(challenge.param("error_description"), Some(r#"say "no""#));
    }

    #[test]
    fn several_challenges_in_one_header_are_told_apart_and_bearer_comes_first() {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Basic realm="x", Bearer realm=y, error=invalid_token"#),
        );
        let challenges = Challenge::from_headers(&headers);
        assert_eq!(challenges.len(), 2);
        assert_eq!(challenges[0].scheme, "Bearer");
        assert_eq!(challenges[0].param("realm"), Some("y"));
        assert_eq!(challenges[0].error(), Some("invalid_token"));
        assert_eq!(challenges[1].param("realm"), Some("x"));
    }

    #[test]
    fn an_http_error_names_its_status_and_challenge() {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer error="invalid_token""#),
        );
        let error = HttpError::new(StatusCode::UNAUTHORIZED, &headers, b"{\"error\":\"x\"}");
        let text = ClientError::from(error).to_string();
        assert!(text.contains("401"), "{text}");
        assert!(text.contains("invalid_token"), "{text}");
    }
}
