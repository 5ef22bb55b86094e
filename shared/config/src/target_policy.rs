//! What a run's target and code scorers may do on a shared worker (`fleet.targets`): a run
//! spec comes from whoever submits, and its target and scorers are called from inside the
//! fleet, with the worker's environment at hand. `run` (the user's own process) is not bound
//! by it.
//!
//! - `allowed_env`: the variables a target's or an http scorer's `${VAR}` may read on a worker
//!   (default: none).
//! - `allowed_hosts`: host names, `*.domain` patterns, addresses and CIDR ranges an http
//!   target or http scorer may call. Empty (the default): any host but the link-local and
//!   cloud-metadata addresses, which are refused by name and by every address a name resolves
//!   to, unless a range listed here allows them.
//! - `allowed_commands`: the `command` scorers a worker may start, each exactly as a suite
//!   writes it, its words joined by spaces (`python3 scorers/sql_exec.py`). Default: none, as
//!   a command is code run on the worker.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// `fleet.targets`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TargetPolicy {
    pub allowed_env: Vec<String>,
    pub allowed_hosts: Vec<String>,
    pub allowed_commands: Vec<String>,
}

/// Names that reach a cloud's metadata service.
const METADATA_NAMES: [&str; 1] = ["metadata.google.internal"];

/// Addresses never called unless a listed range allows them: link-local (where cloud metadata
/// services answer) and AWS's IPv6 metadata address.
const BLOCKED: [&str; 3] = ["169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128"];

/// One `allowed_hosts` entry.
#[derive(Debug, Clone, PartialEq)]
enum Allowed {
    /// An exact host name (lowercase).
    Name(String),
    /// `*.corp.example`: any name ending in `.corp.example`.
    Suffix(String),
    /// An address or a CIDR range.
    Range(ipnet::IpNet),
}

/// [`TargetPolicy::allowed_hosts`], parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct HostPolicy {
    allowed: Vec<Allowed>,
}

impl TargetPolicy {
    /// Whether a target may read `${name}` on a worker.
    pub fn allows_env(&self, name: &str) -> bool {
        self.allowed_env.iter().any(|v| v == name)
    }

    /// Whether a `command` scorer may start `command` on a worker: listed exactly, its words
    /// joined by single spaces.
    pub fn allows_command(&self, command: &[String]) -> bool {
        let line = command.join(" ");
        self.allowed_commands
            .iter()
            .any(|c| c.split_whitespace().collect::<Vec<_>>().join(" ") == line)
    }

    /// The host rules; Err names the entry that is neither a name, a pattern nor a range.
    pub fn hosts(&self) -> Result<HostPolicy, String> {
        let allowed = self
            .allowed_hosts
            .iter()
            .map(|entry| parse_entry(entry))
            .collect::<Result<_, _>>()?;
        Ok(HostPolicy { allowed })
    }
}

fn parse_entry(entry: &str) -> Result<Allowed, String> {
    let entry = entry.trim().to_ascii_lowercase();
    if let Ok(net) = entry.parse::<ipnet::IpNet>() {
        return Ok(Allowed::Range(net));
    }
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Ok(Allowed::Range(ip.into()));
    }
    let valid = |name: &str| {
        !name.is_empty()
            && name
                .split('.')
                .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    };
    match entry.strip_prefix("*.") {
        Some(domain) if valid(domain) => Ok(Allowed::Suffix(format!(".{domain}"))),
        None if valid(&entry) => Ok(Allowed::Name(entry)),
        _ => Err(format!(
            "fleet.targets.allowed_hosts: '{entry}' is not a host name, a '*.domain' pattern, an address or a CIDR range"
        )),
    }
}

impl HostPolicy {
    /// Whether a target may call host `name` (a name, not an address): listed, or with an
    /// empty list anything but a metadata name.
    pub fn allows_name(&self, name: &str) -> bool {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        if self.allowed.is_empty() {
            return !METADATA_NAMES.contains(&name.as_str());
        }
        self.allowed.iter().any(|a| match a {
            Allowed::Name(n) => *n == name,
            Allowed::Suffix(s) => name.ends_with(s.as_str()),
            Allowed::Range(_) => false,
        })
    }

    /// Whether a target may connect to `ip`: a literal address in its URL (then it must be
    /// listed, unless the list is empty), or an address a name resolved to (`resolved`: the
    /// name was allowed; only the blocked ranges are refused, unless a listed range allows
    /// them).
    pub fn allows_ip(&self, ip: IpAddr, resolved: bool) -> bool {
        let listed = self
            .allowed
            .iter()
            .any(|a| matches!(a, Allowed::Range(net) if net.contains(&ip)));
        if listed {
            return true;
        }
        let blocked = BLOCKED
            .iter()
            .filter_map(|b| b.parse::<ipnet::IpNet>().ok())
            .any(|net| net.contains(&ip));
        !blocked && (resolved || self.allowed.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(hosts: &[&str]) -> HostPolicy {
        TargetPolicy {
            allowed_hosts: hosts.iter().map(|h| h.to_string()).collect(),
            ..TargetPolicy::default()
        }
        .hosts()
        .unwrap()
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn by_default_any_host_but_the_metadata_services() {
        let any = policy(&[]);
        assert!(any.allows_name("agent.corp.example"));
        assert!(!any.allows_name("metadata.google.internal"));
        assert!(!any.allows_name("Metadata.Google.Internal."));
        assert!(any.allows_ip(ip("10.1.2.3"), false));
        for blocked in ["169.254.169.254", "fe80::1", "fd00:ec2::254"] {
            assert!(!any.allows_ip(ip(blocked), false), "{blocked}");
            assert!(!any.allows_ip(ip(blocked), true), "{blocked}, resolved");
        }
    }

    #[test]
    fn a_list_allows_its_names_patterns_and_ranges_only() {
        let list = policy(&["agent.example.com", "*.corp.example", "10.0.0.0/8"]);
        assert!(list.allows_name("agent.example.com"));
        assert!(list.allows_name("a.b.corp.example"));
        assert!(
            !list.allows_name("corp.example"),
            "the pattern needs a subdomain"
        );
        assert!(!list.allows_name("evil.example.com"));
        assert!(list.allows_ip(ip("10.9.8.7"), false));
        assert!(
            !list.allows_ip(ip("192.168.1.1"), false),
            "a literal address not listed"
        );
        assert!(
            list.allows_ip(ip("192.168.1.1"), true),
            "an allowed name's address"
        );
        assert!(
            !list.allows_ip(ip("169.254.169.254"), true),
            "a name resolving to metadata"
        );
        let metadata = policy(&["169.254.169.254"]);
        assert!(
            metadata.allows_ip(ip("169.254.169.254"), false),
            "listed on purpose"
        );
    }

    #[test]
    fn a_bad_entry_is_named_and_env_is_allowed_by_name() {
        let bad = TargetPolicy {
            allowed_hosts: vec!["http://x".into()],
            ..TargetPolicy::default()
        };
        assert!(bad.hosts().unwrap_err().contains("'http://x'"));
        let env = TargetPolicy {
            allowed_env: vec!["AGENT_KEY".into()],
            ..TargetPolicy::default()
        };
        assert!(env.allows_env("AGENT_KEY") && !env.allows_env("OPENAI_API_KEY"));
        assert!(!TargetPolicy::default().allows_env("AGENT_KEY"));
    }

    #[test]
    fn a_command_is_allowed_only_as_listed() {
        let words = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        let policy = TargetPolicy {
            allowed_commands: vec!["python3  scorers/sql_exec.py".into()],
            ..TargetPolicy::default()
        };
        assert!(policy.allows_command(&words("python3 scorers/sql_exec.py")));
        assert!(!policy.allows_command(&words("python3 scorers/other.py")));
        assert!(!policy.allows_command(&words("python3")));
        assert!(!policy.allows_command(&words("python3 scorers/sql_exec.py --evil")));
        assert!(!TargetPolicy::default().allows_command(&words("python3 x.py")));
    }
}
