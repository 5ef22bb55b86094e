//! "Equal to the second", the timestamp rule of event partial credit (docs/DESIGN.md §9).
//!
//! Log timestamps carry milliseconds (`2017-05-16 00:00:04.500`) that agents round, truncate or
//! drop, and agents often quote only the time of day; comparing whole strings would give the
//! 0.75 credit to almost nobody. So both sides are cut to the second, and a time-only stamp is
//! compared with the other side's time of day.

use std::sync::LazyLock;

use regex::Regex;

static DATE_TIME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})").unwrap());
static TIME_ONLY: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(\d{2}:\d{2}:\d{2})").unwrap());

/// Both timestamps present and equal to the second: `YYYY-MM-DD HH:MM:SS` (a `T` separator is
/// the same), or `HH:MM:SS` alone when either side gives only a time; anything else compares
/// its first 19 characters.
pub(crate) fn same_second(gt: Option<&str>, agent: Option<&str>) -> bool {
    let (Some(g), Some(a)) = (gt.map(str::trim), agent.map(str::trim)) else {
        return false;
    };
    let split = |s: &str| -> Option<(Option<String>, String)> {
        if let Some(c) = DATE_TIME.captures(s) {
            return Some((Some(c[1].to_string()), c[2].to_string()));
        }
        TIME_ONLY.captures(s).map(|c| (None, c[1].to_string()))
    };
    match (split(g), split(a)) {
        (Some((Some(gd), gt)), Some((Some(ad), at))) => gd == ad && gt == at,
        (Some((_, gt)), Some((_, at))) => gt == at,
        _ => g.chars().take(19).eq(a.chars().take(19)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_second_rules() {
        assert!(same_second(
            Some("2017-05-16 00:00:04.500"),
            Some("2017-05-16 00:00:04")
        ));
        assert!(!same_second(
            Some("2017-05-16 00:00:04.500"),
            Some("2017-05-16 00:00:05")
        ));
        assert!(same_second(
            Some("2017-05-16 00:00:04.5"),
            Some(" 00:00:04.123 ")
        ));
        assert!(same_second(
            Some("May 16 00:00:04 host x"),
            Some("May 16 00:00:04 host y")
        ));
        assert!(same_second(
            Some("2017-05-16 00:00:04.5"),
            Some("2017-05-16T00:00:04.999Z")
        ));
        assert!(!same_second(
            Some("2017-05-16 00:00:04"),
            Some("2017-05-17 00:00:04")
        ));
        // A ground truth with only a time compares with the agent's time of day.
        assert!(same_second(Some("00:00:04.5"), Some("2017-05-16 00:00:04")));
        assert!(!same_second(Some("00:00:04"), Some("00:00:05")));
        assert!(!same_second(None, Some("00:00:04")));
        assert!(!same_second(Some("2017-05-16 00:00:04"), None));
    }
}
