//! What a provider says about its rate limits, read from response headers.
//!
//! The adaptive limiter and the retry loop need these numbers, and the two APIs spell them
//! differently: OpenAI sends `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` with Go
//! duration resets (`6m0s`, `20ms`), Anthropic sends `anthropic-ratelimit-{requests,tokens}-
//! {limit,remaining,reset}` with RFC 3339 instants, and both may send `retry-after` (seconds
//! or an HTTP date) and `retry-after-ms`. Every header is optional and a malformed one is simply
//! absent: a bad header must never fail a call that otherwise succeeded. The clock is a
//! parameter of the inner functions so the tests are exact.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

use super::RateLimitInfo;

/// The rate-limit headers of a response (either API's spelling; OpenAI's wins when both occur).
pub fn rate_limit_info(headers: &HeaderMap) -> RateLimitInfo {
    rate_limit_info_at(headers, SystemTime::now())
}

/// How long the provider asks us to wait: `retry-after-ms` first (more precise), then
/// `retry-after` as seconds (possibly fractional) or an HTTP date (a date in the past is 0).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, SystemTime::now())
}

pub(super) fn rate_limit_info_at(headers: &HeaderMap, now: SystemTime) -> RateLimitInfo {
    let count = |name: &str| header(headers, name).and_then(|v| v.parse::<u64>().ok());
    let reset = |name: &str| header(headers, name).and_then(|v| parse_reset(v, now));
    // Anthropic's `tokens-*` is the most restrictive token limit in effect; older responses
    // carry only the input/output split, of which input is the one that binds first.
    let anthropic_tokens = |field: &str| {
        let combined = format!("anthropic-ratelimit-tokens-{field}");
        let input = format!("anthropic-ratelimit-input-tokens-{field}");
        (combined, input)
    };
    let (tl, il) = anthropic_tokens("limit");
    let (tr, ir) = anthropic_tokens("remaining");
    let (tz, iz) = anthropic_tokens("reset");
    RateLimitInfo {
        limit_requests: count("x-ratelimit-limit-requests")
            .or_else(|| count("anthropic-ratelimit-requests-limit")),
        remaining_requests: count("x-ratelimit-remaining-requests")
            .or_else(|| count("anthropic-ratelimit-requests-remaining")),
        reset_requests: reset("x-ratelimit-reset-requests")
            .or_else(|| reset("anthropic-ratelimit-requests-reset")),
        limit_tokens: count("x-ratelimit-limit-tokens")
            .or_else(|| count(&tl))
            .or_else(|| count(&il)),
        remaining_tokens: count("x-ratelimit-remaining-tokens")
            .or_else(|| count(&tr))
            .or_else(|| count(&ir)),
        reset_tokens: reset("x-ratelimit-reset-tokens")
            .or_else(|| reset(&tz))
            .or_else(|| reset(&iz)),
    }
}

pub(super) fn retry_after_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = header(headers, "retry-after-ms").and_then(non_negative) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = header(headers, "retry-after")?;
    if let Some(secs) = non_negative(value) {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let date = jiff::fmt::rfc2822::parse(value).ok()?.timestamp();
    Some(until(date, now))
}

/// A header's value, trimmed; absent when missing, not visible ASCII, or empty.
fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    let value = headers.get(name)?.to_str().ok()?.trim();
    (!value.is_empty()).then_some(value)
}

/// A finite, non-negative decimal number.
fn non_negative(value: &str) -> Option<f64> {
    value
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// A reset as a Go duration (`1h2m3.5s`), a bare number of seconds, or an RFC 3339 instant.
fn parse_reset(value: &str, now: SystemTime) -> Option<Duration> {
    parse_go_duration(value).or_else(|| {
        let instant = value.parse::<jiff::Timestamp>().ok()?;
        Some(until(instant, now))
    })
}

/// The time from `now` to `instant`; zero when it has passed.
fn until(instant: jiff::Timestamp, now: SystemTime) -> Duration {
    SystemTime::from(instant)
        .duration_since(now)
        .unwrap_or(Duration::ZERO)
}

/// Go's `time.Duration` text (`6m0s`, `20ms`, `1h2m3.5s`, `1.5µs`), or a bare number of
/// seconds (`0.5`). Signs are not accepted: a reset is never negative.
fn parse_go_duration(value: &str) -> Option<Duration> {
    if let Some(secs) = non_negative(value) {
        return Duration::try_from_secs_f64(secs).ok();
    }
    if value.is_empty() {
        return None;
    }
    let mut rest = value;
    let mut total = 0.0f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" | "μs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    /// 2025-01-01T00:00:00Z.
    fn now() -> SystemTime {
        SystemTime::from("2025-01-01T00:00:00Z".parse::<jiff::Timestamp>().unwrap())
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("1s"), Some(ms(1000)));
        assert_eq!(parse_go_duration("6m0s"), Some(ms(360_000)));
        assert_eq!(parse_go_duration("20ms"), Some(ms(20)));
        assert_eq!(parse_go_duration("1h2m3.5s"), Some(ms(3_723_500)));
        assert_eq!(parse_go_duration("0s"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("1.5µs"), Some(Duration::from_nanos(1500)));
        assert_eq!(parse_go_duration("250us"), Some(Duration::from_micros(250)));
        assert_eq!(parse_go_duration("100ns"), Some(Duration::from_nanos(100)));
        assert_eq!(parse_go_duration("0.5"), Some(ms(500)));
        assert_eq!(parse_go_duration("17"), Some(ms(17_000)));
        for bad in [
            "", "s", "1x", "-1s", "1s-", "1..2s", "abc", "1 s", "inf", "NaN",
        ] {
            assert_eq!(parse_go_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn openai_headers() {
        let h = headers(&[
            ("x-ratelimit-limit-requests", "500"),
            ("x-ratelimit-remaining-requests", "499"),
            ("x-ratelimit-reset-requests", "120ms"),
            ("x-ratelimit-limit-tokens", "200000"),
            ("x-ratelimit-remaining-tokens", " 199500 "),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        assert_eq!(
            rate_limit_info_at(&h, now()),
            RateLimitInfo {
                limit_requests: Some(500),
                remaining_requests: Some(499),
                reset_requests: Some(ms(120)),
                limit_tokens: Some(200_000),
                remaining_tokens: Some(199_500),
                reset_tokens: Some(ms(360_000)),
            }
        );
    }

    #[test]
    fn anthropic_headers() {
        let h = headers(&[
            ("anthropic-ratelimit-requests-limit", "50"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2025-01-01T00:00:07Z"),
            ("anthropic-ratelimit-tokens-limit", "40000"),
            ("anthropic-ratelimit-tokens-remaining", "39000"),
            (
                "anthropic-ratelimit-tokens-reset",
                "2025-01-01T00:00:01.250+00:00",
            ),
            ("anthropic-ratelimit-input-tokens-limit", "30000"),
        ]);
        assert_eq!(
            rate_limit_info_at(&h, now()),
            RateLimitInfo {
                limit_requests: Some(50),
                remaining_requests: Some(0),
                reset_requests: Some(ms(7000)),
                limit_tokens: Some(40_000),
                remaining_tokens: Some(39_000),
                reset_tokens: Some(ms(1250)),
            }
        );
    }

    #[test]
    fn anthropic_input_tokens_fallback_and_past_resets() {
        let h = headers(&[
            ("anthropic-ratelimit-input-tokens-limit", "30000"),
            ("anthropic-ratelimit-input-tokens-remaining", "10"),
            (
                "anthropic-ratelimit-input-tokens-reset",
                "2024-12-31T23:59:00Z",
            ),
            (
                "anthropic-ratelimit-requests-reset",
                "2025-01-01T01:00:00+01:00",
            ),
        ]);
        let info = rate_limit_info_at(&h, now());
        assert_eq!(info.limit_tokens, Some(30_000));
        assert_eq!(info.remaining_tokens, Some(10));
        assert_eq!(info.reset_tokens, Some(Duration::ZERO));
        assert_eq!(info.reset_requests, Some(Duration::ZERO));
    }

    #[test]
    fn absent_and_malformed_headers_are_none() {
        assert_eq!(
            rate_limit_info_at(&HeaderMap::new(), now()),
            RateLimitInfo::default()
        );
        let h = headers(&[
            ("x-ratelimit-limit-requests", "lots"),
            ("x-ratelimit-remaining-requests", "-1"),
            ("x-ratelimit-reset-requests", "soon"),
            ("x-ratelimit-remaining-tokens", ""),
            ("anthropic-ratelimit-tokens-reset", "2025-13-01T00:00:00Z"),
        ]);
        assert_eq!(rate_limit_info_at(&h, now()), RateLimitInfo::default());
    }

    #[test]
    fn retry_after_forms() {
        let at = |pairs: &[(&str, &str)]| retry_after_at(&headers(pairs), now());
        assert_eq!(at(&[("retry-after", "3")]), Some(ms(3000)));
        assert_eq!(at(&[("retry-after", "1.5")]), Some(ms(1500)));
        assert_eq!(at(&[("retry-after", "0")]), Some(Duration::ZERO));
        assert_eq!(at(&[("retry-after-ms", "250")]), Some(ms(250)));
        assert_eq!(
            at(&[("retry-after-ms", "12.5")]),
            Some(Duration::from_micros(12_500))
        );
        // The millisecond header wins over the seconds header.
        assert_eq!(
            at(&[("retry-after", "20"), ("retry-after-ms", "19500")]),
            Some(ms(19_500))
        );
        // A bad millisecond header falls back to the seconds header.
        assert_eq!(
            at(&[("retry-after", "2"), ("retry-after-ms", "x")]),
            Some(ms(2000))
        );
        // HTTP dates (IMF-fixdate), relative to now; past dates are zero.
        assert_eq!(
            at(&[("retry-after", "Wed, 01 Jan 2025 00:00:30 GMT")]),
            Some(ms(30_000))
        );
        assert_eq!(
            at(&[("retry-after", "Tue, 31 Dec 2024 23:00:00 GMT")]),
            Some(Duration::ZERO)
        );
        assert_eq!(at(&[]), None);
        assert_eq!(at(&[("retry-after", "-5")]), None);
        assert_eq!(at(&[("retry-after", "later")]), None);
        assert_eq!(at(&[("retry-after", "1e400")]), None);
        assert_eq!(at(&[("retry-after-ms", "-1")]), None);
    }

    #[test]
    fn public_wrappers_use_the_clock() {
        let h = headers(&[("retry-after", "4"), ("x-ratelimit-reset-tokens", "1s")]);
        assert_eq!(retry_after(&h), Some(ms(4000)));
        assert_eq!(rate_limit_info(&h).reset_tokens, Some(ms(1000)));
    }
}
