//! Wall-clock helpers and the two providers' time formats: OpenAI's Go-style durations in
//! `x-ratelimit-reset-*` ("20ms", "1s", "6m0s") and Anthropic's RFC 3339 instants in
//! `anthropic-ratelimit-*-reset`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `2024-05-01T12:00:00.123Z` for a unix-ms instant.
pub fn rfc3339_ms(unix_ms: u64) -> String {
    match jiff::Timestamp::from_millisecond(i64::try_from(unix_ms).unwrap_or(i64::MAX)) {
        Ok(ts) => format!("{ts:.3}"),
        Err(_) => String::new(),
    }
}

/// `2024-05-01T12:00:01Z`: the instant `after` from now, rounded up to the second, as
/// Anthropic's `anthropic-ratelimit-*-reset` headers give it.
pub fn rfc3339_after(now_unix_ms: u64, after: Duration) -> String {
    let ms = now_unix_ms.saturating_add(u64::try_from(after.as_millis()).unwrap_or(u64::MAX));
    let secs = ms.div_ceil(1_000);
    match jiff::Timestamp::from_second(i64::try_from(secs).unwrap_or(i64::MAX)) {
        Ok(ts) => format!("{ts:.0}"),
        Err(_) => String::new(),
    }
}

/// A Go `time.Duration` string at millisecond precision, as OpenAI's `x-ratelimit-reset-*`
/// headers give it: "0s", "20ms", "1s", "1.5s", "6m0s", "1h2m3s".
pub fn go_duration(d: Duration) -> String {
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return "0s".to_owned();
    }
    if ms < 1_000 {
        return format!("{ms}ms");
    }
    let (h, rest) = (ms / 3_600_000, ms % 3_600_000);
    let (m, rest) = (rest / 60_000, rest % 60_000);
    let (s, frac) = (rest / 1_000, rest % 1_000);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&s.to_string());
    if frac > 0 {
        let digits = format!("{frac:03}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
    out.push('s');
    out
}

/// Whole seconds for `retry-after`, rounded up (a client waiting that long will pass).
pub fn retry_after_secs(d: Duration) -> u64 {
    u64::try_from(d.as_millis().div_ceil(1_000)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let ms = Duration::from_millis;
        assert_eq!(go_duration(ms(0)), "0s");
        assert_eq!(go_duration(ms(20)), "20ms");
        assert_eq!(go_duration(ms(1_000)), "1s");
        assert_eq!(go_duration(ms(1_500)), "1.5s");
        assert_eq!(go_duration(ms(360_000)), "6m0s");
        assert_eq!(go_duration(ms(3_723_040)), "1h2m3.04s");
    }

    #[test]
    fn rfc3339() {
        assert_eq!(rfc3339_ms(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(
            rfc3339_after(1_700_000_000_123, Duration::from_millis(900)),
            "2023-11-14T22:13:22Z"
        );
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::ZERO), 0);
    }
}
