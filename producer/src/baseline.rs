//! A baseline run's answers, found again by item id: what a pairwise suite compares with when
//! its `against` names the judged field itself (`run --baseline RUN`, `submit --baseline RUN`).
//!
//! The answers come from the baseline's `outputs.jsonl`, the completed records a target run
//! writes beside its report, read with the suite's own paths. They are read once, before the
//! first example is published, into an anonymous temporary file; memory keeps only a 64-bit
//! hash of each id and where its answers are (16 bytes an item, sorted, found by binary
//! search), so a 10^7-item baseline costs 160 MB of memory, not its texts. Two ids with the
//! same hash are told apart by the id stored beside the answers.

use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use evalfleet_dataset::{DatasetError, DatasetReader, Format, ReadOptions};
use evalfleet_suites::custom::{BaselineAnswers, BaselineSource, CustomSuite};

/// The name of the completed records a target run writes into its report directory.
const OUTPUTS: &str = "outputs.jsonl";

#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error(
        "the baseline run in {dir} has no {OUTPUTS}: a pairwise dimension whose `against` is the judged field compares with a baseline run's answers, which only a target run (`run --target`) writes"
    )]
    NoOutputs { dir: PathBuf },
    #[error("reading the baseline's answers: {0}")]
    Read(#[from] DatasetError),
    #[error("the baseline's answers hold no item: every record of {path} was skipped (the first: {first})")]
    Empty { path: PathBuf, first: String },
    #[error("keeping the baseline's answers in a temporary file: {0}")]
    Spill(#[source] std::io::Error),
}

/// Every item's baseline answers, on disk, by id.
pub struct BaselineIndex {
    file: File,
    /// (hash of the id, offset of its entry), sorted by hash then offset.
    slots: Vec<(u64, u64)>,
    /// Records read that gave no id (counted for the summary line).
    skipped: u64,
}

impl std::fmt::Debug for BaselineIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BaselineIndex")
            .field("items", &self.slots.len())
            .field("skipped", &self.skipped)
            .finish()
    }
}

impl BaselineIndex {
    /// The answers of the baseline whose report is `report` (its `report.json`).
    pub fn for_report(
        report: &Path,
        suite: &CustomSuite,
        max_record: usize,
    ) -> Result<BaselineIndex, BaselineError> {
        let dir = report.parent().unwrap_or(Path::new("."));
        let path = dir.join(OUTPUTS);
        if !path.is_file() {
            return Err(BaselineError::NoOutputs {
                dir: dir.to_owned(),
            });
        }
        BaselineIndex::load(&path, suite, max_record)
    }

    /// Reads every completed record of `path` (JSONL) with `suite`'s paths.
    pub fn load(
        path: &Path,
        suite: &CustomSuite,
        max_record: usize,
    ) -> Result<BaselineIndex, BaselineError> {
        let options = ReadOptions {
            format: Some(Format::JsonLines),
            max_record,
            ..ReadOptions::default()
        };
        let reader = DatasetReader::open_with(path, &options)?;
        let file = tempfile::tempfile().map_err(BaselineError::Spill)?;
        let mut out = BufWriter::new(&file);
        let (mut slots, mut offset, mut skipped) = (Vec::new(), 0u64, 0u64);
        let mut first_skip = None;
        for raw in reader {
            let raw = raw?;
            let read = raw
                .value
                .and_then(|record| suite.read_baseline(&record))
                .map_err(|reason| format!("{}: {reason}", raw.position));
            let (id, answers) = match read {
                Ok(found) => found,
                Err(reason) => {
                    skipped += 1;
                    first_skip.get_or_insert(reason);
                    continue;
                }
            };
            let entry = encode(&id, &answers);
            out.write_all(&entry).map_err(BaselineError::Spill)?;
            slots.push((id_hash(&id), offset));
            offset += entry.len() as u64;
        }
        out.flush().map_err(BaselineError::Spill)?;
        drop(out);
        if slots.is_empty() {
            if let Some(first) = first_skip {
                return Err(BaselineError::Empty {
                    path: path.to_owned(),
                    first,
                });
            }
        }
        if let Some(first) = first_skip {
            tracing::warn!(skipped, %first, "baseline records without an id were left out");
        }
        // A stable order: among equal ids, the first record wins.
        slots.sort_unstable();
        slots.shrink_to_fit();
        Ok(BaselineIndex {
            file,
            slots,
            skipped,
        })
    }

    /// How many items the baseline answered.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Records of the baseline's outputs that had no id.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The entry at `offset`: (id, answers).
    fn entry(&self, offset: u64) -> std::io::Result<(String, BaselineAnswers)> {
        let mut len = [0u8; 4];
        self.file.read_exact_at(&mut len, offset)?;
        let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
        self.file.read_exact_at(&mut body, offset + 4)?;
        serde_json::from_slice(&body).map_err(std::io::Error::other)
    }
}

impl BaselineSource for BaselineIndex {
    fn answers(&self, id: &str) -> Option<BaselineAnswers> {
        let hash = id_hash(id);
        let start = self.slots.partition_point(|&(h, _)| h < hash);
        for &(h, offset) in &self.slots[start..] {
            if h != hash {
                break;
            }
            match self.entry(offset) {
                Ok((found, answers)) if found == id => return Some(answers),
                Ok(_) => continue,
                Err(e) => {
                    // The temporary file is this process's own: failing to read it back is a
                    // broken disk, and the item is compared as one the baseline lacks.
                    tracing::error!(error = %e, id, "reading a baseline answer back failed");
                    return None;
                }
            }
        }
        None
    }
}

/// An entry: its length (u32, little-endian), then `[id, answers]` as JSON.
fn encode(id: &str, answers: &BaselineAnswers) -> Vec<u8> {
    let body = serde_json::to_vec(&(id, answers)).expect("strings serialise");
    let mut entry = Vec::with_capacity(body.len() + 4);
    entry.extend_from_slice(&(body.len() as u32).to_le_bytes());
    entry.extend_from_slice(&body);
    entry
}

fn id_hash(id: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    id.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalfleet_suites::suite::Suite;

    /// The bundled pairwise suite, comparing `answer` with a baseline run's.
    fn suite() -> Suite {
        let bundled = include_str!("../../config/suites/pairwise-support.yaml");
        let text = bundled.replace("{against: baseline_answer}", "{against: answer}");
        Suite::from_yaml(&text, "pairwise-support").expect("loads")
    }

    fn write(dir: &Path, lines: &[String]) -> PathBuf {
        let path = dir.join(OUTPUTS);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }

    #[test]
    fn every_item_is_found_again_by_id_and_a_missing_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut lines: Vec<String> = (0..5000)
            .map(|i| {
                serde_json::json!({"id": format!("q-{i}"), "question": "?", "answer": format!("answer {i}")})
                    .to_string()
            })
            .collect();
        // Not every line is an item: a record without an id, and one without the answer.
        lines.push(r#"{"question": "no id"}"#.into());
        lines.push(r#"{"id": "q-quiet", "question": "?"}"#.into());
        // A duplicate id: the first record wins.
        lines.push(r#"{"id": "q-7", "question": "?", "answer": "later"}"#.into());
        let path = write(dir.path(), &lines);
        let suite = suite();
        let index =
            BaselineIndex::load(&path, suite.custom.as_deref().unwrap(), 1 << 20).expect("loads");
        assert_eq!((index.len(), index.skipped()), (5002, 1));
        for i in (0..5000).step_by(7) {
            let answers = index.answers(&format!("q-{i}")).expect("found");
            assert_eq!(answers["answer"], format!("answer {i}"));
        }
        assert_eq!(index.answers("q-7").unwrap()["answer"], "answer 7");
        assert!(index.answers("q-quiet").expect("an item").is_empty());
        assert!(index.answers("q-5000").is_none());
    }

    #[test]
    fn a_baseline_without_outputs_or_items_is_an_error_that_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let suite = suite();
        let custom = suite.custom.as_deref().unwrap();
        let report = dir.path().join("report.json");
        let err = BaselineIndex::for_report(&report, custom, 1 << 20).unwrap_err();
        assert!(
            err.to_string().contains("has no outputs.jsonl")
                && err.to_string().contains("--target"),
            "{err}"
        );
        write(dir.path(), &[r#"{"question": "no id"}"#.into()]);
        let err = BaselineIndex::for_report(&report, custom, 1 << 20).unwrap_err();
        assert!(
            err.to_string().contains("line 1: Missing 'id' field"),
            "{err}"
        );
    }
}
