//! Tests of the log-analysis generator: determinism, shapes, the format mix and the quality
//! ordering of configurations.

use super::*;
use serde_json::json;

fn scenario() -> Value {
    json!({
        "scenario_id": "001",
        "scenario_name": "VM Lifecycle - Normal Spawn and Termination",
        "key_events": [
            {"event_type": "vm_started", "timestamp": "2017-05-16 00:00:04.500", "line_number": 7,
             "instance_id": "b9000564-fe1a-409b-b8cc-1e88b294cd1d", "description": "VM lifecycle event: Started"},
            {"event_type": "vm_paused", "timestamp": "2017-05-16 00:00:04.562", "line_number": 8,
             "instance_id": "b9000564-fe1a-409b-b8cc-1e88b294cd1d", "description": "VM paused during spawn process"},
            {"event_type": "instance_spawned", "timestamp": "2017-05-16 00:00:10.302", "line_number": 26,
             "instance_id": "b9000564-fe1a-409b-b8cc-1e88b294cd1d", "description": "Instance successfully spawned on hypervisor"},
            {"event_type": "image_cache_warning", "timestamp": "2017-05-16 00:00:20.345", "line_number": 51,
             "description": "First occurrence of unknown base file warning"}
        ],
        "timeline": [
            {"time": "00:00:04.500", "event": "VM Started"},
            {"time": "00:00:30.345", "event": "Injected erroneous event"},
            {"time": "00:00:04.562", "event": "VM Paused (spawning)"},
            {"time": "00:00:10.302", "event": "Instance spawned (19.05s)"}
        ],
        "metrics": {"total_build_time_seconds": 19.84, "warning_count": 19, "affected_image": "0673dd71"},
        "anomalies": [{"type": "recurring_warning", "description": "Image cache warning repeated 19 times", "severity": "medium"}],
        "compliance_evaluation": {"vm_startup_time_intent": {"threshold_seconds": 35, "status": "COMPLIANT"}},
        "root_cause_analysis": null,
        "expected_agent_findings": ["VM lifecycle completed successfully from spawn to termination"]
    })
}

fn scenarios() -> Vec<(String, Value)> {
    vec![
        ("scenarios/a.json".to_owned(), scenario()),
        ("scenarios/b.json".to_owned(), scenario()),
    ]
}

/// The first fenced block of `out`, if any.
fn fenced(out: &str) -> Option<&str> {
    let start = out.find("```json\n")? + 8;
    let len = out[start..].find("\n```")?;
    Some(&out[start..start + len])
}

#[test]
fn same_seed_same_output_different_seed_different() {
    let a: Vec<Value> = log_analysis(&scenarios(), 48, 7).collect();
    assert_eq!(a, log_analysis(&scenarios(), 48, 7).collect::<Vec<_>>());
    assert_ne!(a, log_analysis(&scenarios(), 48, 8).collect::<Vec<_>>());
    assert_eq!(log_analysis(&[], 10, 7).count(), 0);
}

#[test]
fn covers_every_combination_with_complete_fields() {
    let items: Vec<Value> = log_analysis(&scenarios(), 24, 3).collect();
    let mut combos = std::collections::HashSet::new();
    for (i, it) in items.iter().enumerate() {
        let keys: Vec<&str> = it.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["id", "scenario", "output", "config", "model"]);
        for k in keys {
            assert!(!it[k].as_str().unwrap().trim().is_empty());
        }
        assert_eq!(it["id"], format!("log-{:06}", i + 1));
        combos.insert(format!(
            "{}|{}|{}",
            it["scenario"], it["config"], it["model"]
        ));
    }
    assert_eq!(combos.len(), 24);
    assert_eq!(items[0]["scenario"], "scenarios/a.json");
    assert_eq!(items[12]["scenario"], "scenarios/b.json");
}

#[test]
fn formats_parse_as_promised() {
    let s = prepare("x.json", &scenario());
    let mut rng = rng(5);
    let mut counts = [0usize; 4];
    for i in 0..4000 {
        let (out, format) = answer(&mut rng, &s, i % 4, i % 3);
        counts[format as usize] += 1;
        assert!(!out.to_lowercase().contains("injected"));
        match format {
            Format::Fenced => {
                let v: Value = serde_json::from_str(fenced(&out).unwrap()).unwrap();
                assert!(
                    v["events_detected"].is_array()
                        && v["timeline"].is_array()
                        && v["metrics"].is_object()
                );
            }
            Format::Malformed => {
                assert!(serde_json::from_str::<Value>(fenced(&out).unwrap()).is_err())
            }
            Format::Prose => {
                assert!(!out.contains("```"));
                let start = out.find('{').unwrap();
                let v: Value = serde_json::Deserializer::from_str(&out[start..])
                    .into_iter()
                    .next()
                    .unwrap()
                    .unwrap();
                assert!(v.get("events_detected").is_some());
            }
            Format::Freeform => assert!(!out.contains('{') && !out.is_empty()),
        }
    }
    let share = |f: Format| counts[f as usize] as f64 / 4000.0;
    assert!(
        (0.10..0.18).contains(&share(Format::Freeform)),
        "{counts:?}"
    );
    assert!(
        (0.02..0.08).contains(&share(Format::Malformed)),
        "{counts:?}"
    );
    assert!(share(Format::Fenced) > 0.6, "{counts:?}");
}

#[test]
fn better_configurations_detect_more_events() {
    let s = prepare("x.json", &scenario());
    let mut rng = rng(9);
    let mut found = [0usize; 4];
    for i in 0..4000 {
        let c = i % 4;
        let (out, format) = answer(&mut rng, &s, c, 1);
        if format == Format::Fenced {
            let v: Value = serde_json::from_str(fenced(&out).unwrap()).unwrap();
            let ok = v["events_detected"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["event_type"] == "vm_started")
                .count();
            found[c] += ok;
        }
    }
    assert!(found[3] > found[0], "{found:?}");
}

#[test]
fn paraphrased_metric_names_keep_half_their_words() {
    assert_eq!(paraphrase("total_build_time_seconds"), "total_build_time");
    assert_eq!(
        paraphrase("api_requests_during_lifecycle"),
        "requests_during_lifecycle"
    );
    assert_eq!(paraphrase("warning_count"), "observed_warning_count");
}
