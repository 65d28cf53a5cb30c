//! A HAR request's `url` split into the request target and the server's authority, and the
//! server's address from the authority or `serverIPAddress`.

use std::net::IpAddr;

/// `(scheme, authority, path?query)` of a URL; the fragment is dropped, an empty path is `/`.
pub(super) fn split_url(url: &str) -> (Option<&str>, &str, String) {
    let (scheme, rest) = match url.find("://") {
        Some(i)
            if url[..i]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            (Some(&url[..i]), &url[i + 3..])
        }
        _ => (None, ""),
    };
    let (authority, path) = if scheme.is_some() {
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        (&rest[..end], &rest[end..])
    } else {
        ("", url)
    };
    let path = path.split('#').next().unwrap_or("");
    let target = if path.is_empty() || path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    (scheme, authority, target)
}

fn host_port(authority: &str) -> (&str, Option<&str>) {
    let hostport = authority.rsplit('@').next().unwrap_or(authority);
    if let Some(rest) = hostport.strip_prefix('[') {
        let close = rest.find(']').unwrap_or(rest.len());
        let port = rest[close..].strip_prefix("]:");
        return (&rest[..close], port);
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (hostport, None),
    }
}

fn authority_port(authority: &str) -> Option<u16> {
    host_port(authority).1.and_then(|p| p.parse().ok())
}

/// The server's port: the authority's, else the scheme's default (0 without a scheme).
pub(super) fn port(scheme: Option<&str>, authority: &str) -> u16 {
    authority_port(authority).unwrap_or(match scheme {
        Some(s) if s.eq_ignore_ascii_case("https") || s.eq_ignore_ascii_case("wss") => 443,
        Some(_) => 80,
        None => 0,
    })
}

pub(super) fn host_ip(authority: &str) -> Option<IpAddr> {
    host_port(authority).0.parse().ok()
}

pub(super) fn parse_ip(s: &str) -> Option<IpAddr> {
    let s = s.trim().trim_start_matches('[');
    let s = s.split(']').next().unwrap_or(s);
    let s = s.split('%').next().unwrap_or(s);
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_target_and_port() {
        assert_eq!(
            split_url("http://127.0.0.1:3100/mcp?x=1#frag"),
            (Some("http"), "127.0.0.1:3100", "/mcp?x=1".to_string())
        );
        assert_eq!(
            split_url("https://example.com"),
            (Some("https"), "example.com", "/".into())
        );
        assert_eq!(split_url("http://h?q"), (Some("http"), "h", "/?q".into()));
        assert_eq!(authority_port("[::1]:8443"), Some(8443));
        assert_eq!(host_ip("[::1]:8443"), Some("::1".parse().unwrap()));
        assert_eq!(
            host_ip("user:pw@10.0.0.1:80"),
            Some("10.0.0.1".parse().unwrap())
        );
        assert_eq!(parse_ip("[fe80::1%eth0]"), Some("fe80::1".parse().unwrap()));
    }
}
