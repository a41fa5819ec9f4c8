//! The `Host` allow-list and the `Origin` check that stop DNS rebinding: a browser page on a
//! foreign site must not reach a server listening on loopback.
//!
//! Both are on by default: a server that does not know its bind address allows the loopback
//! names on any port; one bound to a loopback address allows them on that port only. A request
//! without `Origin` is allowed (non-browser clients send none); `Origin: null` is foreign.

use http::uri::{Authority, Scheme};
use http::{HeaderMap, Uri, header};

use super::HardeningError;
use super::refusal::Refusal;

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
    Loopback { port: Option<u16> },
    /// Exactly these authorities (`name` for any port, `name:port` for one).
    Allow(Vec<String>),
}

/// Which browser origins may call this server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginPolicy {
    /// Any origin: for a public API that serves browsers from anywhere.
    AnyOrigin,
    /// `http` and `https` origins on the loopback names, on `port` when known.
    Loopback { port: Option<u16> },
    /// Exactly these origins (`scheme://host[:port]`).
    Allow(Vec<String>),
}

/// The parsed host and origin rules, checked on every request.
#[derive(Debug, Clone)]
pub(crate) struct SiteCheck {
    hosts: Option<Vec<AllowedAuthority>>,
    origins: Option<Vec<(Option<Scheme>, AllowedAuthority)>>,
}

impl SiteCheck {
    pub(crate) fn new(hosts: &HostPolicy, origins: &OriginPolicy) -> Result<Self, HardeningError> {
        Ok(Self {
            hosts: parse_hosts(hosts)?,
            origins: parse_origins(origins)?,
        })
    }

    /// Refuses a request whose `Host` or `Origin` is not allowed.
    pub(crate) fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), Refusal> {
        if let Some(allowed) = &self.hosts {
            check_host(allowed, headers, uri)?;
        }
        if let Some(allowed) = &self.origins {
            check_origin(allowed, headers)?;
        }
        Ok(())
    }
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

/// Splits `host[:port]` (IPv6 hosts in brackets) without allocating: this runs on every
/// request. Anything that is not that shape is `None`.
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

/// The authority the request names: `Host` for HTTP/1.1, the URI's authority for HTTP/2.
fn check_host(allowed: &[AllowedAuthority], headers: &HeaderMap, uri: &Uri) -> Result<(), Refusal> {
    let text = match headers.get(header::HOST) {
        Some(value) => value.to_str().ok(),
        None => uri.authority().map(Authority::as_str),
    };
    let Some(named) = text.and_then(split_authority) else {
        return Err(Refusal::MisdirectedHost);
    };
    if allowed.iter().any(|rule| rule.admits(named, 80)) {
        Ok(())
    } else {
        Err(Refusal::MisdirectedHost)
    }
}

fn check_origin(allowed: &[OriginRule], headers: &HeaderMap) -> Result<(), Refusal> {
    let Some(value) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let parsed = value.to_str().ok().and_then(split_origin);
    let Some((scheme, authority)) = parsed else {
        return Err(Refusal::ForbiddenOrigin);
    };
    let default = default_port(&scheme);
    let named = (authority.host(), authority.port_u16());
    let admitted = allowed.iter().any(|(wanted_scheme, rule)| {
        wanted_scheme
            .as_ref()
            .is_none_or(|wanted| *wanted == scheme)
            && rule.admits(named, default)
    });
    if admitted {
        Ok(())
    } else {
        Err(Refusal::ForbiddenOrigin)
    }
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
}
