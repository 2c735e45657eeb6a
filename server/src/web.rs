//! The wire policy the router enforces, as the configuration resolved it:
//! which hosts and origins are ours, which peers are proxies whose
//! `X-Forwarded-For` we believe, who may read `/metrics`, whether we are
//! served over HTTPS (HSTS), the body limit and timeout. See
//! server/README.md ("On the wire") for the rules.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::http::HeaderMap;
use ipnet::IpNet;

/// Which `Host` headers the server answers (a DNS-rebinding page sends its
/// own name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRule {
    /// Any host (a server on a public address with no list configured).
    Any,
    /// `localhost`, `127.0.0.0/8` and `[::1]`, any port: a server that
    /// listens on loopback only.
    Loopback,
    /// These host names (lower case, without port), and loopback names.
    List(Vec<String>),
}

/// Who may read `/metrics`.
#[derive(Clone, PartialEq, Eq)]
pub enum MetricsAccess {
    /// Anyone who can reach the server.
    Open,
    /// Connections from a loopback address that no proxy forwarded.
    Loopback,
    /// A request with `Authorization: Bearer <token>`; the SHA-256 of the
    /// token is kept.
    Token(String),
}

impl std::fmt::Debug for MetricsAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Open => f.write_str("Open"),
            Self::Loopback => f.write_str("Loopback"),
            Self::Token(_) => f.write_str("Token([redacted])"),
        }
    }
}

/// The router's wire policy.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// The largest request body, in bytes.
    pub body_limit: usize,
    /// How long a request body may take to arrive.
    pub body_timeout: Duration,
    pub hosts: HostRule,
    /// Origins allowed on state-changing requests (`https://console.example.com`);
    /// empty: the `Origin` must name the request's own `Host`.
    pub allowed_origins: Vec<String>,
    /// Origins whose pages may frame the customer chat (`/chat*`).
    pub embed_origins: Vec<String>,
    /// Peers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<IpNet>,
    pub metrics: MetricsAccess,
    /// Send `Strict-Transport-Security` (served over HTTPS).
    pub hsts: bool,
    /// The `cargo leptos watch` reload port, allowed in the CSP's
    /// `connect-src` while developing.
    pub reload_port: Option<u16>,
}

impl Default for WebConfig {
    /// What a server on loopback with no configuration enforces.
    fn default() -> Self {
        Self {
            body_limit: 64 * 1024,
            body_timeout: Duration::from_secs(30),
            hosts: HostRule::Loopback,
            allowed_origins: Vec::new(),
            embed_origins: Vec::new(),
            trusted_proxies: Vec::new(),
            metrics: MetricsAccess::Loopback,
            hsts: false,
            reload_port: None,
        }
    }
}

/// The host name of a `Host` header value, lower case, without the port
/// (`[::1]:3000` → `[::1]`).
pub fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = if host.starts_with('[') {
        host.split_once(']')
            .map(|(ip, _)| format!("{ip}]"))
            .unwrap_or_else(|| host.to_owned())
    } else {
        host.rsplit_once(':')
            .map(|(name, _)| name.to_owned())
            .unwrap_or_else(|| host.to_owned())
    };
    name.to_ascii_lowercase()
}

/// Whether a host name is a loopback name.
pub fn is_loopback_name(name: &str) -> bool {
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl HostRule {
    /// Whether the server answers for `host` (a `Host` header value).
    pub fn allows(&self, host: &str) -> bool {
        let name = host_name(host);
        match self {
            Self::Any => true,
            Self::Loopback => is_loopback_name(&name),
            Self::List(names) => is_loopback_name(&name) || names.contains(&name),
        }
    }
}

impl WebConfig {
    /// The client's address: the peer, or — when the peer is a trusted
    /// proxy — the last address in `X-Forwarded-For` that is not itself a
    /// trusted proxy (the one the nearest proxy saw; earlier entries are
    /// whatever the client claimed).
    pub fn client_addr(&self, peer: Option<SocketAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = peer?.ip();
        if !self.is_trusted(peer) {
            return Some(peer);
        }
        let forwarded: Vec<IpAddr> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|a| a.trim().parse::<IpAddr>().ok())
            .collect();
        Some(
            forwarded
                .into_iter()
                .rev()
                .find(|ip| !self.is_trusted(*ip))
                .unwrap_or(peer),
        )
    }

    /// The scheme the client reached the site by, `http` or `https`: what a
    /// trusted proxy's `X-Forwarded-Proto` says (its last value: the nearest
    /// proxy's word), else `https` when the deployment is served over HTTPS
    /// ([`Self::hsts`]), else `http`. Anyone else's `X-Forwarded-Proto` is
    /// ignored.
    pub fn request_scheme(&self, peer: Option<SocketAddr>, headers: &HeaderMap) -> &'static str {
        let forwarded = peer
            .filter(|p| self.is_trusted(p.ip()))
            .and_then(|_| headers.get_all("x-forwarded-proto").iter().next_back())
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit(',').next())
            .map(str::trim);
        match forwarded {
            Some(p) if p.eq_ignore_ascii_case("https") => "https",
            Some(p) if p.eq_ignore_ascii_case("http") => "http",
            _ if self.hsts => "https",
            _ => "http",
        }
    }

    fn is_trusted(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.trusted_proxies.iter().any(|net| net.contains(&ip))
    }
}

/// An IPv4 address written as IPv6 (`::ffff:10.0.0.1`) as the IPv4 one.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Whether a request may read `/metrics` under `access`.
pub fn metrics_allowed(
    access: &MetricsAccess,
    peer: Option<SocketAddr>,
    headers: &HeaderMap,
) -> bool {
    match access {
        MetricsAccess::Open => true,
        MetricsAccess::Loopback => {
            let forwarded = ["x-forwarded-for", "forwarded", "x-real-ip"]
                .iter()
                .any(|h| headers.contains_key(*h));
            !forwarded && peer.is_some_and(|p| canonical(p.ip()).is_loopback())
        }
        MetricsAccess::Token(digest) => aics_service::bearer_token(headers)
            .is_some_and(|t| !t.is_empty() && aics_db::tokens::hash_token(t) == *digest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_and_rules() {
        assert_eq!(host_name("Console.Example.com:443"), "console.example.com");
        assert_eq!(host_name("[::1]:3000"), "[::1]");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert!(HostRule::Loopback.allows("127.0.0.1:3000"));
        assert!(HostRule::Loopback.allows("localhost:3000"));
        assert!(HostRule::Loopback.allows("[::1]:3000"));
        assert!(!HostRule::Loopback.allows("evil.example:3000"));
        assert!(!HostRule::Loopback.allows("127.0.0.1.evil.example"));
        let list = HostRule::List(vec!["console.example.com".into()]);
        assert!(list.allows("console.example.com"));
        assert!(list.allows("CONSOLE.example.com:8443"));
        assert!(!list.allows("other.example.com"));
        assert!(HostRule::Any.allows("anything"));
    }

    #[test]
    fn forwarded_for_only_from_trusted_proxies() {
        let web = WebConfig {
            trusted_proxies: vec![
                "10.0.0.0/8".parse().unwrap(),
                "127.0.0.1/32".parse().unwrap(),
            ],
            ..WebConfig::default()
        };
        let mut h = HeaderMap::new();
        h.insert(
            "x-forwarded-for",
            "6.6.6.6, 203.0.113.5, 10.1.2.3".parse().unwrap(),
        );
        let proxy: SocketAddr = "10.0.0.9:5555".parse().unwrap();
        let stranger: SocketAddr = "198.51.100.1:5555".parse().unwrap();
        assert_eq!(
            web.client_addr(Some(proxy), &h),
            Some("203.0.113.5".parse().unwrap())
        );
        assert_eq!(
            web.client_addr(Some(stranger), &h),
            Some("198.51.100.1".parse().unwrap())
        );
        let mapped: SocketAddr = "[::ffff:10.0.0.9]:1".parse().unwrap();
        assert_eq!(
            web.client_addr(Some(mapped), &h),
            Some("203.0.113.5".parse().unwrap())
        );
        assert_eq!(
            web.client_addr(Some(proxy), &HeaderMap::new()),
            Some(proxy.ip())
        );
        assert_eq!(web.client_addr(None, &h), None);
    }

    #[test]
    fn the_scheme_from_trusted_proxies_only_else_the_deployments() {
        let web = WebConfig {
            trusted_proxies: vec!["10.0.0.0/8".parse().unwrap()],
            ..WebConfig::default()
        };
        let proxy: SocketAddr = "10.0.0.9:5555".parse().unwrap();
        let stranger: SocketAddr = "198.51.100.1:5555".parse().unwrap();
        let mut h = HeaderMap::new();
        assert_eq!(web.request_scheme(Some(proxy), &h), "http");
        h.insert("x-forwarded-proto", "HTTPS".parse().unwrap());
        assert_eq!(web.request_scheme(Some(proxy), &h), "https");
        assert_eq!(web.request_scheme(Some(stranger), &h), "http");
        assert_eq!(web.request_scheme(None, &h), "http");
        h.insert("x-forwarded-proto", "https, http".parse().unwrap());
        assert_eq!(
            web.request_scheme(Some(proxy), &h),
            "http",
            "the nearest proxy's"
        );
        h.insert("x-forwarded-proto", "gopher".parse().unwrap());
        let https = WebConfig {
            hsts: true,
            ..web.clone()
        };
        assert_eq!(https.request_scheme(Some(proxy), &h), "https");
        h.insert("x-forwarded-proto", "http".parse().unwrap());
        assert_eq!(https.request_scheme(Some(stranger), &h), "https");
        assert_eq!(https.request_scheme(Some(proxy), &h), "http");
    }

    #[test]
    fn metrics_access() {
        let local: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let remote: SocketAddr = "192.0.2.1:1".parse().unwrap();
        let none = HeaderMap::new();
        assert!(metrics_allowed(
            &MetricsAccess::Loopback,
            Some(local),
            &none
        ));
        assert!(!metrics_allowed(
            &MetricsAccess::Loopback,
            Some(remote),
            &none
        ));
        assert!(!metrics_allowed(&MetricsAccess::Loopback, None, &none));
        let mut via_proxy = HeaderMap::new();
        via_proxy.insert("x-forwarded-for", "192.0.2.1".parse().unwrap());
        assert!(!metrics_allowed(
            &MetricsAccess::Loopback,
            Some(local),
            &via_proxy
        ));
        let token = MetricsAccess::Token(aics_db::tokens::hash_token("scrape-token"));
        let mut bearer = HeaderMap::new();
        bearer.insert("authorization", "Bearer scrape-token".parse().unwrap());
        assert!(metrics_allowed(&token, Some(remote), &bearer));
        assert!(!metrics_allowed(&token, Some(local), &none));
        assert!(!format!("{token:?}").contains(&aics_db::tokens::hash_token("scrape-token")));
    }
}
