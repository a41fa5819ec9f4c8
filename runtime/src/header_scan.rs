//! Finding two request headers in one pass. A request carries a handful of headers, and
//! walking them costs less than hashing two names and probing the map for each (about a hundred
//! instructions a lookup); past [`SCAN_LIMIT`] names the hashed lookups cost less, and are used.
//! The transport (`Content-Type`, `Accept`) and the hardening (`Host`, `Origin`) both read the
//! headers they judge a request by through here.

use http::{HeaderMap, HeaderName, HeaderValue};

/// Past this many header names, two hashed lookups cost less than one pass over them all.
const SCAN_LIMIT: usize = 8;

/// One header as found: its first value, as [`HeaderMap::get`] returns it, and whether it has
/// more than one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found<'a> {
    pub(crate) first: Option<&'a HeaderValue>,
    pub(crate) repeated: bool,
}

/// The headers `names` in `headers`, in the order named. Inlined, so that comparing with
/// well-known names stays a comparison with constants.
#[inline]
pub(crate) fn find_two<'a>(headers: &'a HeaderMap, names: [&HeaderName; 2]) -> [Found<'a>; 2] {
    if headers.keys_len() > SCAN_LIMIT {
        return looked_up(headers, names);
    }
    let mut found = [Found {
        first: None,
        repeated: false,
    }; 2];
    for (name, value) in headers {
        let Some(at) = names.iter().position(|wanted| *wanted == name) else {
            continue;
        };
        if let Some(slot) = found.get_mut(at) {
            slot.repeated |= slot.first.is_some();
            slot.first.get_or_insert(value);
        }
    }
    found
}

#[cold]
#[inline(never)]
fn looked_up<'a>(headers: &'a HeaderMap, names: [&HeaderName; 2]) -> [Found<'a>; 2] {
    names.map(|name| {
        let mut values = headers.get_all(name).iter();
        Found {
            first: values.next(),
            repeated: values.next().is_some(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header;

    #[test]
    fn two_headers_are_found_as_get_finds_them_in_small_and_large_requests() {
        for extra_headers in [0, 3, 20] {
            let mut headers = HeaderMap::new();
            for index in 0..extra_headers {
                let name = HeaderName::try_from(format!("x-extra-{index}")).unwrap();
                headers.insert(name, HeaderValue::from_static("1"));
            }
            headers.append(header::HOST, HeaderValue::from_static("first:1"));
            headers.append(header::ORIGIN, HeaderValue::from_static("http://a"));
            headers.append(header::HOST, HeaderValue::from_static("second:2"));
            let [host, origin] = find_two(&headers, [&header::HOST, &header::ORIGIN]);
            assert_eq!(host.first, headers.get(header::HOST), "{extra_headers}");
            assert_eq!(origin.first, headers.get(header::ORIGIN), "{extra_headers}");
            assert!(host.repeated && !origin.repeated, "{extra_headers}");
        }
        let empty = HeaderMap::new();
        let [host, origin] = find_two(&empty, [&header::HOST, &header::ORIGIN]);
        assert!(host.first.is_none() && origin.first.is_none());
        assert!(!host.repeated && !origin.repeated);
    }
}
