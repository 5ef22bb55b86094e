//! A suite file's text parsed and resolved into a `Suite` (`extends` may name a built-in), and
//! the resolved suite through the run spec's JSON, as every worker of a fleet run reads it.
#![no_main]

use evalfleet_suites::suite::Suite;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A suite file that is not UTF-8 fails to read before it is parsed.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(suite) = Suite::from_yaml(text, "fuzz.yaml") else {
        return;
    };
    let json = serde_json::to_string(&suite).expect("a resolved suite serialises");
    let back: Suite = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("a resolved suite does not deserialise: {e}\n{json}"));
    assert_eq!(back, suite, "the run spec's suite is the suite");
    suite.read_options(None);
});
