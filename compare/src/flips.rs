//! The items whose pass/fail outcome flipped, with both sides' scores, metrics and judge
//! reasoning: what a reviewer reads first. Worst first: pass → fail by the largest fall of the
//! overall score, fail → pass by the largest rise.
//!
//! A large comparison can have hundreds of thousands of flips, and their details (every score
//! with its reasoning, every metric) would dominate memory: each flip keeps only its items' byte offsets,
//! outcome and overall scores; a second pass over each report, after the first pass's columns
//! are freed, writes each side's details as JSON to an unnamed temporary file, read back one
//! flip at a time when compare.json is written ([`Flips`] serialises itself that way).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::pair::Pairing;
use crate::read::{read_items_at, read_rows_at, ItemsAt, Kind, Report, SEED_OTHER_KEYS};
use crate::CompareError;

/// Where a reasoning sits in the spill file.
#[derive(Debug, Clone, Copy)]
struct Spilled {
    offset: u64,
    len: u32,
}

/// The reasonings of the flipped items, appended to an unnamed temporary file.
#[derive(Debug)]
struct Spill {
    file: Mutex<(File, u64)>,
}

impl Spill {
    fn new() -> Result<Spill, CompareError> {
        let file = tempfile::tempfile().map_err(|source| CompareError::Write {
            path: std::env::temp_dir(),
            source,
        })?;
        Ok(Spill {
            file: Mutex::new((file, 0)),
        })
    }

    fn put(&self, text: &str) -> Result<Spilled, CompareError> {
        let mut guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let (file, end) = &mut *guard;
        file.write_all(text.as_bytes())
            .map_err(|source| CompareError::Write {
                path: std::env::temp_dir(),
                source,
            })?;
        let at = Spilled {
            offset: *end,
            len: text.len() as u32,
        };
        *end += text.len() as u64;
        Ok(at)
    }

    fn get(&self, at: Spilled) -> std::io::Result<String> {
        let guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let mut buf = vec![0; at.len as usize];
        guard.0.read_exact_at(&mut buf, at.offset)?;
        String::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
}

/// One flip, compactly; its details are in the spill file.
#[derive(Debug)]
pub struct Flip {
    pub id: Box<str>,
    base: Side,
    new: Side,
}

#[derive(Debug)]
struct Side {
    /// The item's byte offset in its report, and its length.
    offset: u64,
    len: u32,
    passed: bool,
    overall: f64,
    /// The side's [`FlipSide`] as JSON.
    details: Option<Spilled>,
}

/// Every flip, both directions, and what is needed to show them.
#[derive(Debug, Default)]
pub struct Flips {
    scores: Vec<String>,
    metrics: Vec<String>,
    pub pass_to_fail: Vec<Flip>,
    pub fail_to_pass: Vec<Flip>,
    spill: Option<Spill>,
}

/// A flip as compare.json shows it.
#[derive(Debug, Clone, Serialize)]
pub struct FlipView {
    pub id: String,
    pub base: FlipSide,
    pub new: FlipSide,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlipSide {
    pub passed: bool,
    pub overall_score: Option<f64>,
    /// Dimension → {score, reasoning}.
    pub scores: BTreeMap<String, FlipScore>,
    pub metrics: BTreeMap<String, Option<f64>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlipScore {
    pub score: Option<f64>,
    pub reasoning: Option<String>,
}

impl Flips {
    /// The flip with its reasonings read back.
    pub fn view(&self, f: &Flip) -> std::io::Result<FlipView> {
        Ok(FlipView {
            id: f.id.to_string(),
            base: self.side(&f.base)?,
            new: self.side(&f.new)?,
        })
    }

    fn side(&self, s: &Side) -> std::io::Result<FlipSide> {
        let value = |v: f64| (!v.is_nan()).then_some(v);
        match (s.details, &self.spill) {
            (Some(at), Some(spill)) => serde_json::from_str(&spill.get(at)?).map_err(Into::into),
            _ => Ok(FlipSide {
                passed: s.passed,
                overall_score: value(s.overall),
                scores: BTreeMap::new(),
                metrics: BTreeMap::new(),
            }),
        }
    }

    /// The change of the overall score, NEW − BASE (0 when either is null).
    pub fn overall_change(f: &Flip) -> f64 {
        let d = f.new.overall - f.base.overall;
        if d.is_nan() {
            0.0
        } else {
            d
        }
    }
}

impl Serialize for Flips {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct List<'a>(&'a Flips, &'a [Flip]);
        impl Serialize for List<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.1.len()))?;
                for f in self.1 {
                    let view = self.0.view(f).map_err(serde::ser::Error::custom)?;
                    seq.serialize_element(&view)?;
                }
                seq.end()
            }
        }
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("pass_to_fail", &List(self, &self.pass_to_fail))?;
        map.serialize_entry("fail_to_pass", &List(self, &self.fail_to_pass))?;
        map.end()
    }
}

/// The flips, from the reports in memory (their details come later, from
/// [`add_details`], once the reports' memory is freed).
pub(crate) fn collect(
    base: &Report,
    new: &Report,
    pairing: &Pairing,
    names: &[(Kind, String)],
) -> Flips {
    let pick = |kind: Kind| -> Vec<String> {
        names
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, n)| n.clone())
            .collect()
    };
    let side = |r: &Report, i: u32| Side {
        offset: r.offsets[i as usize],
        len: r.lens[i as usize],
        passed: r.passed[i as usize] == 1,
        overall: r.overall[i as usize],
        details: None,
    };
    let mut out = Flips {
        scores: pick(Kind::Score),
        metrics: pick(Kind::Metric),
        ..Flips::default()
    };
    for &(b, n) in &pairing.pairs {
        if base.passed[b as usize] == new.passed[n as usize] {
            continue;
        }
        let flip = Flip {
            id: base.ids[b as usize].clone(),
            base: side(base, b),
            new: side(new, n),
        };
        if flip.base.passed {
            out.pass_to_fail.push(flip);
        } else {
            out.fail_to_pass.push(flip);
        }
    }
    out.pass_to_fail
        .sort_by(|a, b| Flips::overall_change(a).total_cmp(&Flips::overall_change(b)));
    out.fail_to_pass
        .sort_by(|a, b| Flips::overall_change(b).total_cmp(&Flips::overall_change(a)));
    out
}

/// Reads the flipped items' scores, reasonings and metrics from both report files (seeking to
/// each, a thread per file) into the spill file.
pub(crate) fn add_details(
    flips: &mut Flips,
    base_path: &ItemsAt,
    new_path: &ItemsAt,
) -> Result<(), CompareError> {
    if flips.pass_to_fail.is_empty() && flips.fail_to_pass.is_empty() {
        return Ok(());
    }
    let spill = Spill::new()?;
    let (scores, metrics) = (&flips.scores, &flips.metrics);
    let mut base_sides: Vec<&mut Side> = Vec::new();
    let mut new_sides: Vec<&mut Side> = Vec::new();
    for f in flips
        .pass_to_fail
        .iter_mut()
        .chain(flips.fail_to_pass.iter_mut())
    {
        base_sides.push(&mut f.base);
        new_sides.push(&mut f.new);
    }
    let (b, n) = std::thread::scope(|s| {
        let b = s.spawn(|| fill(base_path, base_sides, scores, metrics, &spill));
        let n = fill(new_path, new_sides, scores, metrics, &spill);
        (b.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), n)
    });
    b?;
    n?;
    flips.spill = Some(spill);
    Ok(())
}

/// One report's second pass: each wanted side's details, as JSON, into the spill file.
fn fill(
    path: &ItemsAt,
    mut sides: Vec<&mut Side>,
    scores: &[String],
    metrics: &[String],
    spill: &Spill,
) -> Result<(), CompareError> {
    sides.sort_unstable_by_key(|s| s.offset);
    let wanted: Vec<(u64, u32)> = sides.iter().map(|s| (s.offset, s.len)).collect();
    let mut next = sides.into_iter();
    let mut found = |item: &BTreeMap<String, Value>| -> Result<(), CompareError> {
        let Some(side) = next.next() else {
            return Ok(());
        };
        let details = details(item, side, scores, metrics);
        let json = serde_json::to_string(&details).map_err(|e| CompareError::Write {
            path: std::env::temp_dir(),
            source: e.into(),
        })?;
        side.details = Some(spill.put(&json)?);
        Ok(())
    };
    match path {
        ItemsAt::Json(path) => read_items_at(path, &wanted, &mut found),
        ItemsAt::Parquet(path) => {
            let indexes: Vec<u64> = wanted.iter().map(|(index, _)| *index).collect();
            read_rows_at(path, &indexes, &mut found)
        }
    }
}

/// A side's details from its item as the report has it: scores under `scores` (result
/// records) or as top-level `{score, reasoning}` objects (the seed shape), metrics under
/// `metrics`.
fn details(
    item: &BTreeMap<String, Value>,
    side: &Side,
    scores: &[String],
    metrics: &[String],
) -> FlipSide {
    let cell = |name: &str| -> Option<&Value> {
        item.get("scores").and_then(|s| s.get(name)).or_else(|| {
            (!SEED_OTHER_KEYS.contains(&name))
                .then(|| item.get(name))
                .flatten()
        })
    };
    FlipSide {
        passed: side.passed,
        overall_score: (!side.overall.is_nan()).then_some(side.overall),
        scores: scores
            .iter()
            .map(|name| {
                let c = cell(name);
                let score = FlipScore {
                    score: c.and_then(|c| c.get("score")).and_then(Value::as_f64),
                    reasoning: c
                        .and_then(|c| c.get("reasoning"))
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                };
                (name.clone(), score)
            })
            .collect(),
        metrics: metrics
            .iter()
            .map(|name| {
                let v = item
                    .get("metrics")
                    .and_then(|m| m.get(name))
                    .and_then(Value::as_f64);
                (name.clone(), v)
            })
            .collect(),
    }
}
