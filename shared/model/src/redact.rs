//! The one rule for showing a URL that may carry credentials: wherever a URL is logged, printed
//! or put in an error, it goes through [`redact_url`] first.
//!
//! Why one function: the broker and store URLs come from users (`--amqp-url`, `--redis-url`,
//! the config file, the management API) and routinely carry a password; a rule written four
//! ways is a secret leaked in one of them. What is hidden:
//! - the password of the userinfo (`user:***@host`); a userinfo without a colon is a token used
//!   as the user name (`redis://TOKEN@host`), so all of it is hidden (`***@host`);
//! - the value of every query parameter whose name looks like a secret (`password`, `token`,
//!   `key`, `secret`, `auth`, `sig`, `credential`, ...), as `name=***`.
//!
//! A password containing `@` is taken to end at the last `@` of the authority (what a URL
//! parser would reject, a user still types); `/`, `?` and `#` in a password must be
//! percent-encoded, as in any URL. IPv6 hosts (`[::1]`) are left as they are.

/// Query parameter names (lowercase substrings) whose values are secrets.
const SECRET_PARAMS: [&str; 8] = [
    "pass",
    "pwd",
    "token",
    "key",
    "secret",
    "auth",
    "sig",
    "credential",
];

/// `url` with its password and secret query values replaced by `***`.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[scheme_end..];
    // The authority ends at the path, the query or the fragment; its last '@' ends the userinfo.
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@');
    let mut out = String::with_capacity(url.len());
    out.push_str(&url[..scheme_end]);
    let after = match at {
        Some(at) => {
            let userinfo = &rest[..at];
            match userinfo.split_once(':') {
                Some((user, _)) => {
                    out.push_str(user);
                    out.push_str(":***");
                }
                None => out.push_str("***"),
            }
            &rest[at..]
        }
        None => rest,
    };
    match after.split_once('?') {
        Some((before, query)) => {
            out.push_str(before);
            out.push('?');
            out.push_str(&redact_query(query));
        }
        None => out.push_str(after),
    }
    out
}

/// A query string (with an optional `#fragment`) with secret values hidden.
fn redact_query(query: &str) -> String {
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let mut out = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if is_secret(name) => format!("{name}=***"),
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&");
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

fn is_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_PARAMS.iter().any(|s| name.contains(s))
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn a_password_is_hidden_and_the_user_kept() {
        assert_eq!(
            redact_url("amqp://guest:guest@127.0.0.1:5672/%2f"),
            "amqp://guest:***@127.0.0.1:5672/%2f"
        );
        assert_eq!(
            redact_url("rediss://default:s3cret@cache.example:6380/0"),
            "rediss://default:***@cache.example:6380/0"
        );
    }

    #[test]
    fn a_user_name_alone_is_a_token_and_hidden_whole() {
        assert_eq!(
            redact_url("redis://tok3n@127.0.0.1:6379/"),
            "redis://***@127.0.0.1:6379/"
        );
    }

    #[test]
    fn a_password_containing_at_signs_is_hidden_whole() {
        assert_eq!(
            redact_url("amqp://user:p@ss@w0rd@broker:5672/%2f"),
            "amqp://user:***@broker:5672/%2f"
        );
        assert_eq!(
            redact_url("redis://user:p%2Fw@rd@127.0.0.1:6379/0?db=1"),
            "redis://user:***@127.0.0.1:6379/0?db=1"
        );
    }

    #[test]
    fn a_token_in_the_query_string_is_hidden() {
        assert_eq!(
            redact_url("http://127.0.0.1:15672/api/queues?token=abc&columns=name&api_key=x#top"),
            "http://127.0.0.1:15672/api/queues?token=***&columns=name&api_key=***#top"
        );
        assert_eq!(
            redact_url("amqps://u:p@h/%2f?heartbeat=10&Password=x"),
            "amqps://u:***@h/%2f?heartbeat=10&Password=***"
        );
    }

    #[test]
    fn the_cases_each_old_copy_of_the_rule_was_tested_with() {
        assert_eq!(
            redact_url("amqp://guest:secret@host:5672/%2f"),
            "amqp://guest:***@host:5672/%2f"
        );
        assert_eq!(redact_url("amqps://u:p@ss@h/v"), "amqps://u:***@h/v");
        assert_eq!(redact_url("amqp://127.0.0.1:5672"), "amqp://127.0.0.1:5672");
        assert_eq!(
            redact_url("redis://u:secret@h:6379/0"),
            "redis://u:***@h:6379/0"
        );
        assert_eq!(redact_url("rediss://:secret@h/"), "rediss://:***@h/");
        assert_eq!(redact_url("redis://secret@h/"), "redis://***@h/");
    }

    #[test]
    fn ipv6_hosts_are_kept() {
        assert_eq!(
            redact_url("amqp://guest:guest@[::1]:5672/%2f"),
            "amqp://guest:***@[::1]:5672/%2f"
        );
        assert_eq!(redact_url("redis://[::1]:6379/"), "redis://[::1]:6379/");
    }

    #[test]
    fn urls_without_credentials_are_unchanged() {
        for url in [
            "redis://127.0.0.1:6379/",
            "amqp://127.0.0.1:5672/%2f",
            "http://127.0.0.1:15672/api/queues/%2f/evalfleet.examples",
            "not a url",
            "",
            "redis://",
            "http://host/path@not-userinfo",
        ] {
            assert_eq!(redact_url(url), url, "{url}");
        }
    }
}
