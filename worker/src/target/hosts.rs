//! Where a worker's http target or http scorer may connect (`fleet.targets.allowed_hosts`): the
//! URL's host is checked before each call, every address a name resolves to is filtered through
//! the policy (so a name that resolves to a metadata address is refused, not only the literal
//! address), and a redirect is followed only to a host the policy allows.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use evalfleet_config::HostPolicy;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect::{Attempt, Policy};
use reqwest::Url;

/// Redirects followed at most, as reqwest's default policy does.
const MAX_REDIRECTS: usize = 10;

/// A client builder that resolves and redirects only within `policy`.
pub(crate) fn guarded(
    builder: reqwest::ClientBuilder,
    policy: Arc<HostPolicy>,
) -> reqwest::ClientBuilder {
    let redirects = policy.clone();
    builder
        .dns_resolver(Arc::new(Resolver(policy)))
        .redirect(Policy::custom(move |attempt: Attempt<'_>| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                attempt.error("too many redirects")
            } else if let Some(reason) = refused(&redirects, attempt.url()) {
                attempt.error(format!("a redirect to {reason}"))
            } else {
                attempt.follow()
            }
        }))
}

/// Why `url` may not be called under `policy` (its host, said in words), or None.
pub(crate) fn refused(policy: &HostPolicy, url: &Url) -> Option<String> {
    let host = url.host_str().unwrap_or_default();
    let allowed = match host
        .trim_matches(|c| c == '[' || c == ']')
        .parse::<IpAddr>()
    {
        Ok(ip) => policy.allows_ip(ip, false),
        Err(_) => !host.is_empty() && policy.allows_name(host),
    };
    (!allowed).then(|| {
        format!(
            "{host} is not a host a target may call on this worker (fleet.targets.allowed_hosts)"
        )
    })
}

/// The system resolver, keeping only the addresses the policy allows.
struct Resolver(Arc<HostPolicy>);

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| policy.allows_ip(a.ip(), true))
                .collect();
            if found.is_empty() {
                return Err(format!(
                    "{host} resolves to no address a target may call on this worker"
                )
                .into());
            }
            Ok(Box::new(found.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use evalfleet_config::TargetPolicy;

    use super::*;

    fn policy(hosts: &[&str]) -> HostPolicy {
        TargetPolicy {
            allowed_hosts: hosts.iter().map(|h| h.to_string()).collect(),
            ..TargetPolicy::default()
        }
        .hosts()
        .unwrap()
    }

    #[test]
    fn a_url_is_checked_by_its_host_name_or_address() {
        let url = |u: &str| Url::parse(u).unwrap();
        let any = policy(&[]);
        assert_eq!(refused(&any, &url("http://127.0.0.1:9/agent")), None);
        let metadata = refused(&any, &url("http://169.254.169.254/latest/meta-data/")).unwrap();
        assert!(
            metadata.starts_with("169.254.169.254 is not a host"),
            "{metadata}"
        );
        assert!(refused(&any, &url("http://[fd00:ec2::254]/")).is_some());
        assert!(refused(&any, &url("http://metadata.google.internal/")).is_some());
        let corp = policy(&["*.corp.example"]);
        assert_eq!(
            refused(&corp, &url("https://agent.corp.example/v2/ask")),
            None
        );
        assert!(refused(&corp, &url("https://agent.evil.example/")).is_some());
    }

    #[tokio::test]
    async fn resolved_addresses_are_filtered_through_the_policy() {
        let resolver = Resolver(Arc::new(policy(&[])));
        let local: Vec<SocketAddr> = resolver
            .resolve("localhost".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert!(!local.is_empty(), "loopback is not blocked");
        // The system resolver answers an address with itself: a blocked one is filtered out.
        let err = resolver
            .resolve("169.254.169.254".parse().unwrap())
            .await
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("no address a target may call"),
            "{err}"
        );
    }
}
