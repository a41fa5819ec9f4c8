//! The `Host` allow-list and the `Origin` check that stop DNS rebinding: a browser page on a
//! foreign site must not reach a server listening on loopback.
//!
//! Both are on by default: a server that does not know its bind address allows the loopback
//! names on any port; one bound to a loopback address allows them on that port only. A request
//! without `Origin` is allowed (non-browser clients send none); `Origin: null` is foreign.
//!
//! The check runs on every request, so the values a policy admits in their usual spellings
//! (`127.0.0.1:8080`, `http://localhost:8080`, ...) are worked out when it is built and compared
//! with the raw header bytes first; only a value that is not one of them is parsed.

use http::uri::{Authority, Scheme};
use http::{HeaderMap, HeaderValue, Uri, header};

use super::HardeningError;
use super::refusal::Refusal;
use crate::header_scan::find_two;

/// The names a loopback server answers to.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Which port an allowed authority may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PortRule {
    Any,
    Exactly(u16),
}

impl PortRule {
    /// Whether an authority whose port is `port` (or the scheme default, when absent) matches.
    fn admits(self, port: Option<u16>, default_port: u16) -> bool {
        match self {
            Self::Any => true,
            Self::Exactly(wanted) => port.unwrap_or(default_port) == wanted,
        }
    }
}

/// One allowed authority: a lower-case host (IPv6 in brackets) and a port rule.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AllowedAuthority {
    host: String,
    port: PortRule,
}

impl AllowedAuthority {
    fn parse(text: &str) -> Option<Self> {
        let authority: Authority = text.parse().ok()?;
        if text.contains('@') {
            return None;
        }
        Some(Self {
            host: authority.host().to_ascii_lowercase(),
            port: authority
                .port_u16()
                .map_or(PortRule::Any, PortRule::Exactly),
        })
    }

    fn admits(&self, (host, port): (&str, Option<u16>), default_port: u16) -> bool {
        host.eq_ignore_ascii_case(&self.host) && self.port.admits(port, default_port)
    }
}

/// Which `Host` values this server answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPolicy {
    /// Any host: for servers behind a proxy that already pins the authority.
    AnyHost,
    /// The loopback names, on `port` when known.
    Loopback {
        /// The port the loopback names must carry; `None` admits any.
        port: Option<u16>,
    },
    /// Exactly these authorities (`name` for any port, `name:port` for one).
    Allow(Vec<String>),
}

/// Which browser origins may call this server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginPolicy {
    /// Any origin: for a public API that serves browsers from anywhere.
    AnyOrigin,
    /// `http` and `https` origins on the loopback names, on `port` when known.
    Loopback {
        /// The port the loopback origins must carry; `None` admits any.
        port: Option<u16>,
    },
    /// Exactly these origins (`scheme://host[:port]`).
    Allow(Vec<String>),
}

/// The parsed host and origin rules, checked on every request.
#[derive(Debug, Clone)]
pub(crate) struct SiteCheck {
    hosts: Option<Rules<AllowedAuthority>>,
    origins: Option<Rules<OriginRule>>,
}

impl SiteCheck {
    pub(crate) fn new(hosts: &HostPolicy, origins: &OriginPolicy) -> Result<Self, HardeningError> {
        Ok(Self {
            hosts: parse_hosts(hosts)?.map(Rules::new),
            origins: parse_origins(origins)?.map(Rules::new),
        })
    }

    /// Refuses a request whose `Host` or `Origin` is not allowed, or is ambiguous: a repeated
    /// `Host` (RFC 9112 §3.2) or `Origin` is malformed whatever its values, so it is refused
    /// with 400 before either value is judged. An absolute-form target names its own
    /// authority, which replaces `Host` (RFC 9112 §3.2.2) and is judged the same way.
    pub(crate) fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), Refusal> {
        let [host, origin] = find_two(headers, [&header::HOST, &header::ORIGIN]);
        if host.repeated {
            return Err(Refusal::MalformedHeader("host"));
        }
        if origin.repeated {
            return Err(Refusal::MalformedHeader("origin"));
        }
        if let Some(hosts) = &self.hosts
            && !hosts_admit(hosts, host.first, uri)
        {
            return Err(Refusal::MisdirectedHost);
        }
        if let Some(origins) = &self.origins
            && let Some(origin) = origin.first
            && !origins.admits(origin)
        {
            return Err(Refusal::ForbiddenOrigin);
        }
        Ok(())
    }

    /// The same check admitting `origins` (each `http[s]://host[:port]`) besides what its
    /// policy admits: the origins a deployment lets browsers call it from (CORS). A policy that
    /// admits any origin admits these already.
    pub(crate) fn admitting_also(mut self, origins: &[String]) -> Result<Self, HardeningError> {
        let extra = origins
            .iter()
            .map(|text| {
                parse_origin_rule(text)
                    .ok_or_else(|| HardeningError::InvalidAllowedOrigin(text.clone()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(rules) = self.origins.take() {
            let allowed = rules.allowed.into_iter().chain(extra).collect();
            self.origins = Some(Rules::new(allowed));
        }
        Ok(self)
    }

    /// The same check with no known spellings, so every value goes through the parser.
    #[cfg(test)]
    fn parser_only(mut self) -> Self {
        for known in [
            self.hosts.as_mut().map(|rules| &mut rules.known),
            self.origins.as_mut().map(|rules| &mut rules.known),
        ]
        .into_iter()
        .flatten()
        {
            known.0.clear();
        }
        self
    }
}

/// The authority the request names: the target's own when it has one (an absolute-form
/// HTTP/1.1 target, or HTTP/2's `:authority`), else `Host`.
fn hosts_admit(hosts: &Rules<AllowedAuthority>, host: Option<&HeaderValue>, uri: &Uri) -> bool {
    match (uri.authority(), host) {
        (None, Some(value)) => hosts.admits(value),
        (authority, _) => authority_admitted(hosts, authority),
    }
}

/// Kept apart from the `Host` header's path, which HTTP/1.1 requests (nearly all) take.
#[inline(never)]
fn authority_admitted(hosts: &Rules<AllowedAuthority>, authority: Option<&Authority>) -> bool {
    authority.is_some_and(|authority| hosts.admits_text(authority.as_str()))
}

/// A parsed allow-list and the header values it admits spelled out, so that the usual
/// request costs a comparison or two instead of a parse. The spellings are only a shortcut
/// to the parser's answer: each is kept only if the parser admits it, and a value that is
/// not one of them is parsed.
#[derive(Debug, Clone)]
struct Rules<R> {
    allowed: Vec<R>,
    known: KnownValues,
}

/// A parsed allow-list entry: what it admits, and how it is usually spelled.
trait Rule: Sized {
    /// Whether any of `allowed` admits the header value `text`; the one rule of the check.
    fn any_admits(allowed: &[Self], text: &str) -> bool;

    /// The header values this entry admits in their usual spellings (none when it admits
    /// any port, which has no one spelling).
    fn spellings(&self) -> Vec<String>;
}

impl<R: Rule> Rules<R> {
    fn new(allowed: Vec<R>) -> Self {
        let known = allowed
            .iter()
            .flat_map(Rule::spellings)
            .filter(|text| R::any_admits(&allowed, text))
            .filter_map(|text| FoldedText::new(text.as_bytes()))
            .collect();
        Self {
            allowed,
            known: KnownValues(known),
        }
    }

    fn admits(&self, value: &HeaderValue) -> bool {
        self.known.contains(value.as_bytes()) || self.parsed_admits(value)
    }

    fn admits_text(&self, text: &str) -> bool {
        self.known.contains(text.as_bytes()) || self.parsed_admits_text(text)
    }

    /// The parser's answer for a value that is not a known spelling: rare, so kept out of the
    /// known spellings' path, which stays a few cache lines long.
    #[cold]
    #[inline(never)]
    fn parsed_admits(&self, value: &HeaderValue) -> bool {
        value
            .to_str()
            .is_ok_and(|text| self.parsed_admits_text(text))
    }

    #[cold]
    #[inline(never)]
    fn parsed_admits_text(&self, text: &str) -> bool {
        R::any_admits(&self.allowed, text)
    }
}

impl Rule for AllowedAuthority {
    fn any_admits(allowed: &[Self], text: &str) -> bool {
        split_authority(text).is_some_and(|named| allowed.iter().any(|rule| rule.admits(named, 80)))
    }

    fn spellings(&self) -> Vec<String> {
        self.spellings_after("", 80)
    }
}

impl Rule for OriginRule {
    fn any_admits(allowed: &[Self], text: &str) -> bool {
        origin_admitted(allowed, text)
    }

    fn spellings(&self) -> Vec<String> {
        let (scheme, authority) = self;
        let schemes = match scheme {
            Some(scheme) => vec![scheme.clone()],
            None => vec![Scheme::HTTP, Scheme::HTTPS],
        };
        schemes
            .iter()
            .flat_map(|scheme| {
                authority.spellings_after(&format!("{scheme}://"), default_port(scheme))
            })
            .collect()
    }
}

impl AllowedAuthority {
    /// `prefix` then `host:port`, and `prefix` then the bare host when the port is the default.
    fn spellings_after(&self, prefix: &str, default_port: u16) -> Vec<String> {
        let PortRule::Exactly(port) = self.port else {
            return Vec::new();
        };
        let host = &self.host;
        let mut spellings = vec![format!("{prefix}{host}:{port}")];
        if port == default_port {
            spellings.push(format!("{prefix}{host}"));
        }
        spellings
    }
}

/// Header values compared as they arrive, before any parsing.
#[derive(Debug, Clone, Default)]
struct KnownValues(Vec<FoldedText>);

impl KnownValues {
    fn contains(&self, value: &[u8]) -> bool {
        // A value's first and last words are read once and compared with every known text.
        let ends = end_words(value);
        self.0.iter().any(|known| known.matches(value, ends))
    }
}

/// A text matched ASCII-case-insensitively eight bytes at a time, as little-endian words. Each
/// word is kept in lower case with a mask holding `0x20` (the bit that tells an ASCII letter's
/// cases apart) on each letter: a byte `b` matches the lower-case byte `l` exactly when
/// `b | mask == l`.
#[derive(Debug, Clone)]
struct FoldedText {
    len: usize,
    /// The first and last words, from [`end_words`].
    ends: [FoldedWord; 2],
    /// The words between them: eight bytes at each multiple of eight past the first word and
    /// short of the last one (empty for a text of up to sixteen bytes).
    middle: Vec<(usize, FoldedWord)>,
}

#[derive(Debug, Clone, Copy)]
struct FoldedWord {
    lower: u64,
    case_mask: u64,
}

impl FoldedWord {
    fn matches(self, word: u64) -> bool {
        word | self.case_mask == self.lower
    }
}

impl FoldedText {
    fn new(text: &[u8]) -> Option<Self> {
        let lower = text.to_ascii_lowercase();
        let case_mask: Vec<u8> = lower
            .iter()
            .map(|byte| if byte.is_ascii_lowercase() { 0x20 } else { 0 })
            .collect();
        let fold = |(lower, case_mask)| FoldedWord { lower, case_mask };
        let [lower_first, lower_last] = end_words(&lower);
        let [mask_first, mask_last] = end_words(&case_mask);
        let middle = middle_offsets(text.len())
            .map(|at| Some((at, fold((word_at(&lower, at)?, word_at(&case_mask, at)?)))))
            .collect::<Option<_>>()?;
        Some(Self {
            len: text.len(),
            ends: [
                fold((lower_first, mask_first)),
                fold((lower_last, mask_last)),
            ],
            middle,
        })
    }

    /// Whether `value`, whose [`end_words`] are `ends`, is this text in any ASCII case.
    fn matches(&self, value: &[u8], [first, last]: [u64; 2]) -> bool {
        let [known_first, known_last] = self.ends;
        value.len() == self.len
            && known_first.matches(first)
            && known_last.matches(last)
            && self
                .middle
                .iter()
                .all(|&(at, known)| word_at(value, at).is_some_and(|word| known.matches(word)))
    }
}

/// A text's first eight bytes and its last eight (overlapping when it is shorter than
/// sixteen), or the whole text zero-padded twice when it is shorter than eight.
fn end_words(bytes: &[u8]) -> [u64; 2] {
    match (bytes.first_chunk::<8>(), bytes.last_chunk::<8>()) {
        (Some(first), Some(last)) => [u64::from_le_bytes(*first), u64::from_le_bytes(*last)],
        _ => [padded_word(bytes); 2],
    }
}

/// A text shorter than a word, zero-padded: no usual `Host` or `Origin` is that short.
#[cold]
#[inline(never)]
fn padded_word(bytes: &[u8]) -> u64 {
    let mut word = [0; 8];
    for (slot, byte) in word.iter_mut().zip(bytes) {
        *slot = *byte;
    }
    u64::from_le_bytes(word)
}

/// Where the words between a text's first and last words start: 8, 16, ... while the word
/// ends before the last word starts. With the end words, every byte is in some word.
fn middle_offsets(len: usize) -> impl Iterator<Item = usize> {
    (8..len.saturating_sub(8)).step_by(8)
}

fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    let word = bytes.get(at..)?.first_chunk::<8>()?;
    Some(u64::from_le_bytes(*word))
}

fn loopback_authorities(port: Option<u16>) -> Vec<AllowedAuthority> {
    let port = port.map_or(PortRule::Any, PortRule::Exactly);
    LOOPBACK_HOSTS
        .iter()
        .map(|host| AllowedAuthority {
            host: (*host).to_owned(),
            port,
        })
        .collect()
}

fn parse_hosts(policy: &HostPolicy) -> Result<Option<Vec<AllowedAuthority>>, HardeningError> {
    match policy {
        HostPolicy::AnyHost => Ok(None),
        HostPolicy::Loopback { port } => Ok(Some(loopback_authorities(*port))),
        HostPolicy::Allow(list) => list
            .iter()
            .map(|text| {
                AllowedAuthority::parse(text)
                    .ok_or_else(|| HardeningError::InvalidAllowedHost(text.clone()))
            })
            .collect::<Result<_, _>>()
            .map(Some),
    }
}

type OriginRule = (Option<Scheme>, AllowedAuthority);

fn parse_origins(policy: &OriginPolicy) -> Result<Option<Vec<OriginRule>>, HardeningError> {
    match policy {
        OriginPolicy::AnyOrigin => Ok(None),
        OriginPolicy::Loopback { port } => Ok(Some(
            loopback_authorities(*port)
                .into_iter()
                .map(|authority| (None, authority))
                .collect(),
        )),
        OriginPolicy::Allow(list) => list
            .iter()
            .map(|text| {
                parse_origin_rule(text)
                    .ok_or_else(|| HardeningError::InvalidAllowedOrigin(text.clone()))
            })
            .collect::<Result<_, _>>()
            .map(Some),
    }
}

/// An exact origin: the port, when omitted, is the scheme's default rather than "any".
fn parse_origin_rule(text: &str) -> Option<OriginRule> {
    let (scheme, authority) = split_origin(text)?;
    let port = authority
        .port_u16()
        .unwrap_or_else(|| default_port(&scheme));
    Some((
        Some(scheme),
        AllowedAuthority {
            host: authority.host().to_ascii_lowercase(),
            port: PortRule::Exactly(port),
        },
    ))
}

/// `text` as a browser serialises that origin (RFC 6454: lower-case host, no default port), the
/// form a CORS answer names it in; `None` when `text` is not an origin.
pub(crate) fn canonical_origin(text: &str) -> Option<String> {
    let (scheme, rule) = parse_origin_rule(text)?;
    let scheme = scheme?;
    let host = rule.host;
    match rule.port {
        PortRule::Exactly(port) if port != default_port(&scheme) => {
            Some(format!("{scheme}://{host}:{port}"))
        }
        _ => Some(format!("{scheme}://{host}")),
    }
}

/// `scheme://authority` with nothing else: the serialisation RFC 6454 gives an origin.
fn split_origin(text: &str) -> Option<(Scheme, Authority)> {
    let uri: Uri = text.parse().ok()?;
    let scheme = uri.scheme()?.clone();
    let authority = uri.authority()?.clone();
    let bare = uri.path_and_query().is_none_or(|path| path.as_str() == "/");
    let is_web = scheme == Scheme::HTTP || scheme == Scheme::HTTPS;
    (bare && is_web && !authority.as_str().contains('@')).then_some((scheme, authority))
}

fn default_port(scheme: &Scheme) -> u16 {
    if *scheme == Scheme::HTTPS { 443 } else { 80 }
}

/// Splits `host[:port]` (IPv6 hosts in brackets) without allocating. Anything that is not
/// that shape is `None`.
fn split_authority(text: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if text.starts_with('[') {
        let close = text.find(']')?;
        let (host, rest) = text.split_at(close + 1);
        if rest.is_empty() {
            (host, None)
        } else {
            (host, Some(rest.strip_prefix(':')?))
        }
    } else {
        match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let port = match port {
        Some(digits) => Some(digits.parse::<u16>().ok()?),
        None => None,
    };
    (!host.is_empty()).then_some((host, port))
}

fn origin_admitted(allowed: &[OriginRule], text: &str) -> bool {
    let Some((scheme, authority)) = split_origin(text) else {
        return false;
    };
    let default = default_port(&scheme);
    let named = (authority.host(), authority.port_u16());
    allowed.iter().any(|(wanted_scheme, rule)| {
        wanted_scheme
            .as_ref()
            .is_none_or(|wanted| *wanted == scheme)
            && rule.admits(named, default)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Request;
    use http::request::Parts;

    trait CheckParts {
        fn check_parts(&self, parts: &Parts) -> Result<(), Refusal>;
    }

    impl CheckParts for SiteCheck {
        fn check_parts(&self, parts: &Parts) -> Result<(), Refusal> {
            SiteCheck::check(self, &parts.headers, &parts.uri)
        }
    }

    fn parts(host: Option<&str>, origin: Option<&str>) -> Parts {
        let mut builder = Request::builder().uri("/mcp");
        if let Some(host) = host {
            builder = builder.header(header::HOST, host);
        }
        if let Some(origin) = origin {
            builder = builder.header(header::ORIGIN, origin);
        }
        builder.body(()).unwrap().into_parts().0
    }

    fn loopback(port: u16) -> SiteCheck {
        SiteCheck::new(
            &HostPolicy::Loopback { port: Some(port) },
            &OriginPolicy::Loopback { port: Some(port) },
        )
        .unwrap()
    }

    #[test]
    fn loopback_names_on_the_bound_port_are_allowed() {
        let check = loopback(8080);
        for host in [
            "localhost:8080",
            "127.0.0.1:8080",
            "[::1]:8080",
            "LOCALHOST:8080",
        ] {
            assert_eq!(
                check.check_parts(&parts(Some(host), None)),
                Ok(()),
                "{host}"
            );
        }
    }

    #[test]
    fn a_foreign_or_wrong_port_host_is_misdirected() {
        let check = loopback(8080);
        for host in [
            "evil.example:8080",
            "localhost:9090",
            "localhost",
            "127.0.0.2:8080",
        ] {
            assert_eq!(
                check.check_parts(&parts(Some(host), None)),
                Err(Refusal::MisdirectedHost),
                "{host}"
            );
        }
        assert_eq!(
            check.check_parts(&parts(None, None)),
            Err(Refusal::MisdirectedHost)
        );
    }

    #[test]
    fn a_foreign_origin_is_forbidden_and_a_missing_one_is_allowed() {
        let check = loopback(8080);
        let host = Some("localhost:8080");
        assert_eq!(check.check_parts(&parts(host, None)), Ok(()));
        assert_eq!(
            check.check_parts(&parts(host, Some("http://localhost:8080"))),
            Ok(())
        );
        for origin in [
            "https://evil.example",
            "http://localhost:9090",
            "null",
            "http://localhost:8080/path",
            "not an origin",
        ] {
            assert_eq!(
                check.check_parts(&parts(host, Some(origin))),
                Err(Refusal::ForbiddenOrigin),
                "{origin}"
            );
        }
    }

    #[test]
    fn a_repeated_host_or_origin_is_malformed_whatever_its_values_and_policy() {
        for check in [
            loopback(8080),
            SiteCheck::new(&HostPolicy::AnyHost, &OriginPolicy::AnyOrigin).unwrap(),
        ] {
            let mut twice = parts(Some("localhost:8080"), Some("http://localhost:8080"));
            twice
                .headers
                .append(header::HOST, HeaderValue::from_static("localhost:8080"));
            assert_eq!(
                check.check_parts(&twice),
                Err(Refusal::MalformedHeader("host"))
            );
            let mut twice = parts(Some("localhost:8080"), Some("http://localhost:8080"));
            twice.headers.append(
                header::ORIGIN,
                HeaderValue::from_static("http://localhost:8080"),
            );
            assert_eq!(
                check.check_parts(&twice),
                Err(Refusal::MalformedHeader("origin"))
            );
        }
    }

    #[test]
    fn an_absolute_form_target_is_judged_by_its_authority_instead_of_host() {
        let check = loopback(8080);
        let mut foreign_target = parts(Some("localhost:8080"), None);
        foreign_target.uri = "http://evil.example/mcp".parse().unwrap();
        assert_eq!(
            check.check_parts(&foreign_target),
            Err(Refusal::MisdirectedHost)
        );
        let mut own_target = parts(Some("evil.example"), None);
        own_target.uri = "http://localhost:8080/mcp".parse().unwrap();
        assert_eq!(check.check_parts(&own_target), Ok(()));
    }

    #[test]
    fn an_explicit_origin_matches_scheme_host_and_default_port_exactly() {
        let check = SiteCheck::new(
            &HostPolicy::AnyHost,
            &OriginPolicy::Allow(vec!["https://app.example.com".into()]),
        )
        .unwrap();
        assert_eq!(
            check.check_parts(&parts(None, Some("https://app.example.com"))),
            Ok(())
        );
        assert_eq!(
            check.check_parts(&parts(None, Some("https://app.example.com:443"))),
            Ok(())
        );
        assert_eq!(
            check.check_parts(&parts(None, Some("http://app.example.com"))),
            Err(Refusal::ForbiddenOrigin)
        );
    }

    #[test]
    fn an_unknown_bind_port_allows_loopback_names_on_any_port() {
        let check = SiteCheck::new(
            &HostPolicy::Loopback { port: None },
            &OriginPolicy::Loopback { port: None },
        )
        .unwrap();
        assert_eq!(
            check.check_parts(&parts(
                Some("127.0.0.1:4000"),
                Some("http://localhost:3000")
            )),
            Ok(())
        );
        assert_eq!(
            check.check_parts(&parts(Some("example.com"), None)),
            Err(Refusal::MisdirectedHost)
        );
    }

    #[test]
    fn host_headers_split_into_host_and_port_or_are_refused() {
        assert_eq!(
            split_authority("localhost:8080"),
            Some(("localhost", Some(8080)))
        );
        assert_eq!(split_authority("[::1]:80"), Some(("[::1]", Some(80))));
        assert_eq!(split_authority("[::1]"), Some(("[::1]", None)));
        assert_eq!(split_authority("example.com"), Some(("example.com", None)));
        for bad in [
            "",
            ":80",
            "host:port",
            "host:99999",
            "[::1",
            "a:1:2",
            "[::1]x",
        ] {
            let check = loopback(80);
            assert_eq!(
                check.check_parts(&parts(Some(bad), None)),
                Err(Refusal::MisdirectedHost),
                "{bad}"
            );
        }
    }

    #[test]
    fn allow_lists_that_cannot_be_parsed_fail_at_construction() {
        let hosts = HostPolicy::Allow(vec!["bad host".into()]);
        assert!(matches!(
            SiteCheck::new(&hosts, &OriginPolicy::AnyOrigin),
            Err(HardeningError::InvalidAllowedHost(_))
        ));
        let origins = OriginPolicy::Allow(vec!["ftp://x.example".into()]);
        assert!(matches!(
            SiteCheck::new(&HostPolicy::AnyHost, &origins),
            Err(HardeningError::InvalidAllowedOrigin(_))
        ));
    }

    /// Host values around the loopback and allow-listed spellings: case, trailing dots, ports
    /// (missing, default, wrong, padded, out of range), IPv6, userinfo and stray bytes.
    const HOST_VALUES: &[&str] = &[
        "localhost:8080",
        "LOCALHOST:8080",
        "LocalHost:8080",
        "localhost.:8080",
        "localhost:8080.",
        "localhost",
        "LOCALHOST",
        "localhost:80",
        "localhost:443",
        "localhost:08080",
        "localhost:9090",
        "localhost:80800",
        "localhost:65536",
        "localhost:",
        "localhost :8080",
        " localhost:8080",
        "xlocalhost:8080",
        "localhost\u{f6}:8080",
        "127.0.0.1:8080",
        "127.0.0.1",
        "127.0.0.1:80",
        "127.000.000.001:8080",
        "127.0.0.2:8080",
        "[::1]:8080",
        "[::1]",
        "[::1]:80",
        "[0:0:0:0:0:0:0:1]:8080",
        "::1:8080",
        "[::1",
        "[::1]x",
        "user@localhost:8080",
        "localhost:8080@evil.example",
        "evil.example:8080",
        "evil.example",
        "",
        ":8080",
        "app.example.com:8443",
        "APP.Example.COM:8443",
        "app.example.com",
        "app.example.com:443",
        "api.example.com",
        "api.example.com:1234",
        "[fe80::1]:9000",
        "[FE80::1]:9000",
        "[fe80::1]",
    ];

    /// Origin values around the loopback and allow-listed origins: scheme and host case,
    /// default and explicit ports, paths, userinfo, `null` and non-web schemes.
    const ORIGIN_VALUES: &[&str] = &[
        "http://localhost:8080",
        "HTTP://LOCALHOST:8080",
        "https://LocalHost:8080",
        "http://localhost:8080/",
        "http://localhost:8080/path",
        "http://localhost:8080?query",
        "http://localhost.:8080",
        "http://localhost",
        "https://localhost",
        "http://localhost:80",
        "https://localhost:443",
        "http://localhost:443",
        "http://localhost:9090",
        "ws://localhost:8080",
        "ftp://localhost:8080",
        "http://127.0.0.1:8080",
        "https://127.0.0.1:8080",
        "http://127.0.0.1",
        "http://[::1]:8080",
        "http://[::1]",
        "http://[0:0:0:0:0:0:0:1]:8080",
        "http://user@localhost:8080",
        "http://localhost:8080@evil.example",
        "https://evil.example",
        "http://evil.example:8080",
        "null",
        "",
        "localhost:8080",
        "//localhost:8080",
        "https://app.example.com",
        "HTTPS://APP.EXAMPLE.COM",
        "https://app.example.com:443",
        "https://app.example.com:8443",
        "http://app.example.com",
        "http://localhost:3000",
        "https://localhost:3000",
    ];

    fn host_policies() -> Vec<HostPolicy> {
        vec![
            HostPolicy::Loopback { port: Some(8080) },
            HostPolicy::Loopback { port: Some(80) },
            HostPolicy::Loopback { port: None },
            HostPolicy::Allow(vec![
                "app.example.com:8443".into(),
                "api.example.com".into(),
                "[fe80::1]:9000".into(),
                "LocalHost:80".into(),
            ]),
        ]
    }

    fn origin_policies() -> Vec<OriginPolicy> {
        vec![
            OriginPolicy::Loopback { port: Some(8080) },
            OriginPolicy::Loopback { port: Some(80) },
            OriginPolicy::Loopback { port: Some(443) },
            OriginPolicy::Loopback { port: None },
            OriginPolicy::Allow(vec![
                "https://app.example.com".into(),
                "http://localhost:3000".into(),
                "http://[::1]".into(),
            ]),
        ]
    }

    fn parts_with_bytes(host: Option<&[u8]>, origin: Option<&[u8]>) -> Parts {
        let mut parts = parts(None, None);
        if let Some(host) = host {
            let value = HeaderValue::from_bytes(host).unwrap();
            parts.headers.insert(header::HOST, value);
        }
        if let Some(origin) = origin {
            let value = HeaderValue::from_bytes(origin).unwrap();
            parts.headers.insert(header::ORIGIN, value);
        }
        parts
    }

    #[test]
    fn the_known_host_shortcut_answers_as_the_parser_does() {
        for policy in host_policies() {
            let check = SiteCheck::new(&policy, &OriginPolicy::AnyOrigin).unwrap();
            let parser = check.clone().parser_only();
            for host in HOST_VALUES {
                let request = parts_with_bytes(Some(host.as_bytes()), None);
                assert_eq!(
                    check.check_parts(&request),
                    parser.check_parts(&request),
                    "{policy:?} {host:?}"
                );
                // HTTP/2 names the authority in the URI instead of a Host header.
                if let Ok(uri) = format!("http://{host}/mcp").parse::<Uri>() {
                    let mut request = parts(None, None);
                    request.uri = uri;
                    assert_eq!(
                        check.check_parts(&request),
                        parser.check_parts(&request),
                        "{policy:?} authority {host:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_known_origin_shortcut_answers_as_the_parser_does() {
        for policy in origin_policies() {
            let check = SiteCheck::new(&HostPolicy::AnyHost, &policy).unwrap();
            let parser = check.clone().parser_only();
            for origin in ORIGIN_VALUES {
                let request = parts_with_bytes(None, Some(origin.as_bytes()));
                assert_eq!(
                    check.check_parts(&request),
                    parser.check_parts(&request),
                    "{policy:?} {origin:?}"
                );
            }
        }
    }

    #[test]
    fn usual_loopback_spellings_are_answered_without_parsing() {
        let check = loopback(8080);
        let hosts = check.hosts.as_ref().unwrap();
        let origins = check.origins.as_ref().unwrap();
        for host in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
        ] {
            assert!(hosts.known.contains(host.as_bytes()), "{host}");
        }
        for refused in ["localhost:9090", "localhost", "evil.example:8080"] {
            assert!(!hosts.known.contains(refused.as_bytes()), "{refused}");
        }
        for origin in [
            "http://localhost:8080",
            "https://127.0.0.1:8080",
            "HTTP://[::1]:8080",
        ] {
            assert!(origins.known.contains(origin.as_bytes()), "{origin}");
        }
        // The default port may be left out, and only then.
        let default_port = loopback(80);
        let hosts = default_port.hosts.as_ref().unwrap();
        assert!(hosts.known.contains(b"localhost"));
        assert!(hosts.known.contains(b"[::1]:80"));
        let origins = default_port.origins.as_ref().unwrap();
        assert!(origins.known.contains(b"http://localhost"));
        assert!(!origins.known.contains(b"https://localhost"));
    }

    #[test]
    fn a_folded_text_matches_exactly_its_ascii_case_variants() {
        // Every length around the word boundaries, every byte value at every position.
        let source = b"Local-Host.Example:8080/abcdefghijklmnop";
        for len in 0..source.len() {
            let text = &source[..len];
            let folded = FoldedText::new(text).unwrap();
            let known = KnownValues(vec![folded]);
            assert!(known.contains(text));
            assert!(known.contains(&text.to_ascii_uppercase()));
            assert!(!known.contains(&source[..len + 1]));
            for at in 0..len {
                for byte in 0..=u8::MAX {
                    let mut variant = text.to_vec();
                    variant[at] = byte;
                    assert_eq!(
                        known.contains(&variant),
                        variant.eq_ignore_ascii_case(text),
                        "{len} {at} {byte}"
                    );
                }
            }
        }
    }
}
