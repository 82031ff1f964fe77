//! Name resolution once per run. ureq asks its resolver before every
//! request, pooled connection or not, and its default resolver starts a
//! thread for each lookup when a timeout is set (one `clone3` per
//! request). A compiled client resolves once; so does this: an IP
//! address is parsed without any lookup, a host name is looked up the
//! first time and kept for the run.

use std::net::SocketAddr;
use std::sync::RwLock;
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// A resolver that keeps what it found, per `host:port`.
#[derive(Debug, Default)]
pub struct OnceResolver {
    known: RwLock<Vec<(String, ResolvedSocketAddrs)>>,
    lookups: std::sync::atomic::AtomicU64,
}

impl OnceResolver {
    /// Lookups made so far (not answers from the cache).
    #[cfg(test)]
    pub fn lookups(&self) -> u64 {
        self.lookups.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn cached(&self, authority: &str) -> Option<ResolvedSocketAddrs> {
        let known = self.known.read().unwrap_or_else(|p| p.into_inner());
        known
            .iter()
            .find(|(a, _)| a == authority)
            .map(|(_, addrs)| addrs.clone())
    }
}

impl Resolver for OnceResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let authority = uri.authority().map_or("", |a| a.as_str());
        if let Some(addrs) = self.cached(authority) {
            return Ok(addrs);
        }
        let addrs = match literal(uri) {
            Some(a) => {
                let mut v = self.empty();
                v.push(a);
                v
            }
            None => {
                self.lookups
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                DefaultResolver::default().resolve(uri, config, timeout)?
            }
        };
        let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
        if !known.iter().any(|(a, _)| a == authority) {
            known.push((authority.to_string(), addrs.clone()));
        }
        Ok(addrs)
    }
}

/// The address of a URI whose host is an IP address (`[::1]` too).
fn literal(uri: &Uri) -> Option<SocketAddr> {
    let host = uri.host()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().or(match uri.scheme_str() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    })?;
    let ip: std::net::IpAddr = host.parse().ok()?;
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(r: &OnceResolver, url: &str) -> Vec<SocketAddr> {
        let uri: Uri = url.parse().unwrap();
        r.resolve(&uri, &Config::default(), NextTimeout::default())
            .unwrap()
            .to_vec()
    }

    #[test]
    fn addresses_are_parsed_and_names_looked_up_once() {
        let r = OnceResolver::default();
        let a = resolve(&r, "http://127.0.0.1:8333/b/k");
        assert_eq!(a, vec!["127.0.0.1:8333".parse().unwrap()]);
        assert_eq!(
            resolve(&r, "http://[::1]/x"),
            vec!["[::1]:80".parse().unwrap()]
        );
        assert_eq!(r.lookups(), 0);
        for _ in 0..3 {
            assert!(!resolve(&r, "http://localhost:9/x").is_empty());
        }
        assert_eq!(r.lookups(), 1);
    }
}
