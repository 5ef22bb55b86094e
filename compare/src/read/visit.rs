//! Pass 1's parsing: the [`split::Sink`] that receives the report's pieces, and the serde
//! visitors that read the top level (run, totals, config, failed) and each item (id, outcome,
//! overall score, scores, metrics, groups, in both the seed and the record shape) into the
//! [`Builder`], borrowing from the item's bytes rather than allocating.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::borrowed::{Entries, Number, Text};
use super::builder::Builder;
use super::{split, Kind};

/// Pass 1's [`split::Sink`]: what precedes the items (the totals: how many there are) is parsed
/// first, then each item from its slice.
pub(super) struct Parse<'a> {
    pub(super) b: &'a mut Builder,
}

impl split::Sink for Parse<'_> {
    fn before_items(&mut self, prefix: &[u8]) -> Result<(), serde_json::Error> {
        // The prefix ends with the items array's `[`: closing it and the document makes it
        // whole. Whatever it holds is read again, whole, from the skeleton at the end.
        let mut doc = Vec::with_capacity(prefix.len() + 2);
        doc.extend_from_slice(prefix);
        doc.extend_from_slice(b"]}");
        TopLevel { b: self.b }.deserialize(&mut serde_json::Deserializer::from_slice(&doc))
    }

    fn item(&mut self, offset: u64, bytes: &[u8]) -> Result<(), serde_json::Error> {
        self.b.item_offset = offset;
        Item { b: self.b }.deserialize(&mut serde_json::Deserializer::from_slice(bytes))?;
        let len = u32::try_from(bytes.len())
            .map_err(|_| <serde_json::Error as de::Error>::custom("an item of more than 4 GiB"))?;
        self.b.lens.push(len);
        Ok(())
    }
}

pub(super) struct TopLevel<'a> {
    pub(super) b: &'a mut Builder,
}

impl<'de> DeserializeSeed<'de> for TopLevel<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopLevel<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a report.json object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        #[derive(Deserialize)]
        struct RunView {
            id: Option<String>,
        }
        #[derive(Deserialize)]
        struct TotalsView {
            ok: Option<u64>,
        }
        #[derive(Deserialize)]
        struct FailedView {
            #[serde(default)]
            id: String,
        }
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "run" => self.b.run_id = map.next_value::<RunView>()?.id,
                // The number of items, known before they come: every column is allocated once,
                // at its final size (growing by doubling would need up to twice the memory).
                "totals" => {
                    let hint = map.next_value::<TotalsView>()?.ok.unwrap_or(0);
                    self.b.reserve(hint.min(1 << 28) as usize);
                }
                "results" | "items" => {
                    self.b.saw_items = true;
                    map.next_value_seed(Items { b: self.b })?
                }
                "failed" => {
                    let failed: Vec<FailedView> = map.next_value()?;
                    self.b.failed = failed
                        .into_iter()
                        .filter(|f| !f.id.is_empty())
                        .map(|f| f.id.into_boxed_str())
                        .collect();
                }
                "items_file" => {
                    self.b.saw_items = true;
                    self.b.items_file = Some(map.next_value()?);
                }
                "config" => self.b.config = Some(map.next_value()?),
                "aggregates" => {
                    self.b.human = map
                        .next_value::<crate::human::AggregatesView>()?
                        .human_agreement;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct Items<'a> {
    b: &'a mut Builder,
}

impl<'de> DeserializeSeed<'de> for Items<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Items<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of items")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Item { b: &mut *self.b })?.is_some() {}
        Ok(())
    }
}

struct Item<'a> {
    b: &'a mut Builder,
}

impl<'de> DeserializeSeed<'de> for Item<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// Keys of a seed-shape result that are not judge dimensions.
pub(crate) const SEED_OTHER_KEYS: &[&str] = &[
    "index",
    "fail_tags",
    "usage",
    "latency_ms",
    "attempts",
    "metadata",
    "line",
    "run_id",
    "suite",
    "outcome",
    "method_used",
    "reason",
    "details",
];

/// A `{score, ...}` cell: its score, ignoring everything else.
#[derive(Deserialize)]
struct ScoreCell {
    score: Option<f64>,
}

impl<'de> Visitor<'de> for Item<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an item object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let b = self.b;
        let item = b.ids.len();
        let offset = b.item_offset;
        let mut id: Option<String> = None;
        let mut passed: Option<bool> = None;
        let mut overall = f64::NAN;
        // Keys and strings are borrowed from the item's bytes where they have no escapes: a
        // million items would otherwise allocate tens of millions of short strings.
        while let Some(Text(key)) = map.next_key::<Text>()? {
            match key.as_ref() {
                "id" => id = Some(map.next_value::<Text>()?.0.into_owned()),
                "passed" => passed = Some(map.next_value()?),
                "overall_score" => overall = map.next_value::<Option<f64>>()?.unwrap_or(f64::NAN),
                "model" | "prompt_version" => {
                    if let Some(Text(v)) = map.next_value::<Option<Text>>()? {
                        b.set_group(&key, item, &v);
                    }
                }
                "group" => {
                    let group = map.next_value::<Entries<Value>>()?.sorted();
                    for (Text(k), v) in group {
                        match v {
                            Value::String(s) => b.set_group(&k, item, &s),
                            Value::Null => {}
                            other => b.set_group(&k, item, &other.to_string()),
                        }
                    }
                }
                "metrics" => {
                    let metrics = map.next_value::<Entries<Number>>()?.sorted();
                    for (Text(k), Number(v)) in metrics {
                        if let Some(x) = v {
                            b.set_value(Kind::Metric, &k, item, x);
                        }
                    }
                }
                "scores" => {
                    let scores = map.next_value::<Entries<Option<ScoreCell>>>()?.sorted();
                    for (Text(k), cell) in scores {
                        if let Some(x) = cell.and_then(|c| c.score) {
                            b.set_value(Kind::Score, &k, item, x);
                        }
                    }
                }
                k if SEED_OTHER_KEYS.contains(&k) => {
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    // A seed-shape judge dimension: `{score, reasoning, judge}` or null.
                    let v: Value = map.next_value()?;
                    // A null cell or a null score still registers the dimension (NaN), so a
                    // dimension no item was scored on is listed rather than forgotten.
                    if v.is_null() || v.get("score").is_some() {
                        let x = v.get("score").and_then(Value::as_f64).unwrap_or(f64::NAN);
                        b.set_value(Kind::Score, &key, item, x);
                    }
                }
            }
        }
        let id: String = id.ok_or_else(|| de::Error::custom(format!("item {item} has no `id`")))?;
        let passed = passed
            .ok_or_else(|| de::Error::custom(format!("item '{id}' has no `passed` outcome")))?;
        b.ids.push(id.into_boxed_str());
        b.passed.push(u8::from(passed));
        b.overall.push(overall);
        b.offsets.push(offset);
        Ok(())
    }
}
