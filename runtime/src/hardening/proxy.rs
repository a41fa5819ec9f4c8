//! Who the peer really is behind a proxy: [`TrustedProxies`], the addresses (or networks) of
//! the load balancers in front of this server, whose `Forwarded` (RFC 7239) or
//! `X-Forwarded-For` header names the client for rate limiting and `peer_address()`. From any
//! other peer those headers are ignored: anyone can send them.
//!
//! The chain is read from the right, the hop nearest this server first: each hop a trusted
//! proxy added is skipped, and the first address no trusted proxy owns is the client. A hop
//! that names no address (`unknown`, an obfuscated identifier, a garbled value) ends the walk
//! at the last trusted hop, since nothing to its left can be believed.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr as _;

use axum::extract::{ConnectInfo, Request};
use http::{HeaderMap, HeaderName, header};
use ipnet::IpNet;

use super::HardeningError;

/// Hops of a forwarding chain read before giving up on finding the client: a chain through
/// more proxies than this is treated as coming from the last one read.
const MAX_FORWARDED_HOPS: usize = 16;

static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// The proxies whose forwarding headers are believed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Parses each entry as an address (`10.0.0.7`, `::1`) or a network (`10.0.0.0/8`).
    pub fn new(entries: impl IntoIterator<Item = impl AsRef<str>>) -> Result<Self, HardeningError> {
        entries
            .into_iter()
            .map(|entry| {
                let entry = entry.as_ref().trim();
                IpNet::from_str(entry)
                    .or_else(|_| IpAddr::from_str(entry).map(IpNet::from))
                    .map_err(|_| HardeningError::InvalidTrustedProxy(entry.to_owned()))
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    fn trusts(&self, address: IpAddr) -> bool {
        let address = address.to_canonical();
        self.0.iter().any(|network| network.contains(&address))
    }

    /// The client a request from `peer` came from: `peer` itself unless it is a trusted proxy
    /// whose forwarding header names someone further out.
    pub(crate) fn client(&self, headers: &HeaderMap, peer: SocketAddr) -> SocketAddr {
        if !self.trusts(peer.ip()) {
            return peer;
        }
        let mut client = peer;
        let hops = forwarded_hops(headers);
        for hop in hops.iter().rev().take(MAX_FORWARDED_HOPS) {
            let Some(address) = parse_hop(hop) else {
                break;
            };
            client = address;
            if !self.trusts(address.ip()) {
                break;
            }
        }
        client
    }

    /// The request's `ConnectInfo` replaced by the client it was forwarded for, so the rate
    /// limit and the handler's `peer_address()` see that client.
    pub(crate) fn resolve(&self, request: &mut Request) {
        let Some(ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<SocketAddr>>() else {
            return;
        };
        let client = self.client(request.headers(), *peer);
        if client != *peer {
            request.extensions_mut().insert(ConnectInfo(client));
        }
    }
}

/// Each hop's node, left to right: every `for=` of every `Forwarded` element when the request
/// has a `Forwarded` header, otherwise every entry of `X-Forwarded-For`. Repeated header lines
/// are one list, in order.
fn forwarded_hops(headers: &HeaderMap) -> Vec<&str> {
    let values = |name: &HeaderName| {
        headers
            .get_all(name)
            .iter()
            .map(|value| value.to_str().unwrap_or("\u{0}"))
            .collect::<Vec<_>>()
    };
    let forwarded = values(&header::FORWARDED);
    if !forwarded.is_empty() {
        return forwarded
            .iter()
            .flat_map(|line| line.split(','))
            .map(|element| {
                element
                    .split(';')
                    .find_map(|pair| {
                        let (name, value) = pair.trim().split_once('=')?;
                        name.trim()
                            .eq_ignore_ascii_case("for")
                            .then_some(value.trim())
                    })
                    // An element naming no `for` names no address: it ends the walk there.
                    .unwrap_or("")
            })
            .collect();
    }
    values(&X_FORWARDED_FOR)
        .iter()
        .flat_map(|line| line.split(','))
        .map(str::trim)
        .collect()
}

/// A hop's address: `1.2.3.4`, `1.2.3.4:80`, `[2001:db8::1]:80`, `2001:db8::1`, any of them in
/// quotes (as `Forwarded` requires for brackets and ports). A hop without a port gets 0.
fn parse_hop(hop: &str) -> Option<SocketAddr> {
    let hop = hop
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or(hop);
    if let Ok(address) = SocketAddr::from_str(hop) {
        return Some(SocketAddr::new(address.ip().to_canonical(), address.port()));
    }
    let bare = hop
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or(hop);
    IpAddr::from_str(bare)
        .ok()
        .map(|address| SocketAddr::new(address.to_canonical(), 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn proxies() -> TrustedProxies {
        TrustedProxies::new(["10.0.0.1", "192.168.0.0/16", "::1"]).unwrap()
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn client(peer: &str, pairs: &[(&str, &str)]) -> String {
        proxies()
            .client(&headers(pairs), peer.parse().unwrap())
            .to_string()
    }

    #[test]
    fn forwarding_headers_from_an_untrusted_peer_are_ignored() {
        let spoofed = [
            ("x-forwarded-for", "203.0.113.9"),
            ("forwarded", "for=203.0.113.9"),
        ];
        assert_eq!(client("198.51.100.7:5000", &spoofed), "198.51.100.7:5000");
    }

    #[test]
    fn a_trusted_proxy_names_the_client_in_x_forwarded_for() {
        let forwarded = [("x-forwarded-for", "203.0.113.9")];
        assert_eq!(client("10.0.0.1:5000", &forwarded), "203.0.113.9:0");
        // Through two trusted proxies: the rightmost untrusted address is the client, and what
        // the client claimed further left is not believed.
        let chain = [("x-forwarded-for", "1.1.1.1, 203.0.113.9, 192.168.4.4")];
        assert_eq!(client("10.0.0.1:5000", &chain), "203.0.113.9:0");
        let split = [
            ("x-forwarded-for", "1.1.1.1, 203.0.113.9"),
            ("x-forwarded-for", "192.168.4.4"),
        ];
        assert_eq!(client("10.0.0.1:5000", &split), "203.0.113.9:0");
    }

    #[test]
    fn a_trusted_proxy_names_the_client_in_forwarded_with_or_without_a_port() {
        let forwarded = [("forwarded", "for=\"[2001:db8::7]:4711\";proto=https")];
        assert_eq!(client("10.0.0.1:5000", &forwarded), "[2001:db8::7]:4711");
        let chain = [(
            "forwarded",
            "for=198.51.100.1, For=\"203.0.113.9:80\";by=x, for=192.168.1.1",
        )];
        assert_eq!(client("[::1]:5000", &chain), "203.0.113.9:80");
        // `Forwarded` wins over `X-Forwarded-For` when both are sent.
        let both = [
            ("forwarded", "for=203.0.113.9"),
            ("x-forwarded-for", "1.1.1.1"),
        ];
        assert_eq!(client("10.0.0.1:5000", &both), "203.0.113.9:0");
    }

    #[test]
    fn an_unknown_or_garbled_hop_ends_the_walk_at_the_last_trusted_one() {
        let hidden = [("forwarded", "for=203.0.113.9, for=_hidden, for=192.168.1.1")];
        assert_eq!(client("10.0.0.1:5000", &hidden), "192.168.1.1:0");
        let garbled = [("x-forwarded-for", "203.0.113.9, not-an-address")];
        assert_eq!(client("10.0.0.1:5000", &garbled), "10.0.0.1:5000");
        let nothing = [("x-forwarded-for", "")];
        assert_eq!(client("10.0.0.1:5000", &nothing), "10.0.0.1:5000");
        assert_eq!(client("10.0.0.1:5000", &[]), "10.0.0.1:5000");
    }

    #[test]
    fn a_chain_longer_than_the_bound_stops_at_the_bound() {
        let chain = std::iter::once("203.0.113.9".to_owned())
            .chain((0..MAX_FORWARDED_HOPS + 4).map(|hop| format!("192.168.0.{hop}")))
            .collect::<Vec<_>>()
            .join(", ");
        let last_read = format!("192.168.0.{}:0", 4);
        assert_eq!(
            client("10.0.0.1:5000", &[("x-forwarded-for", &chain)]),
            last_read
        );
    }

    #[test]
    fn an_ipv4_mapped_peer_is_the_ipv4_proxy_it_maps() {
        let forwarded = [("x-forwarded-for", "203.0.113.9")];
        assert_eq!(
            client("[::ffff:10.0.0.1]:5000", &forwarded),
            "203.0.113.9:0"
        );
    }

    #[test]
    fn an_entry_that_is_neither_an_address_nor_a_network_is_a_configuration_error() {
        assert_eq!(
            TrustedProxies::new(["10.0.0.1", "proxy.internal"]),
            Err(HardeningError::InvalidTrustedProxy("proxy.internal".into()))
        );
        assert!(TrustedProxies::new(["10.0.0.0/33"]).is_err());
    }
}
