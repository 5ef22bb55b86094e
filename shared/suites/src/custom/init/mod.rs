//! `evalfleet suite init`: a starter custom suite inferred from a sample of a dataset's records,
//! so that a new user has a running evaluation in minutes and a commented file to edit.
//!
//! Pure, no I/O: the caller reads up to [`SAMPLE_RECORDS`] records, [`infer`] decides what the
//! suite says and [`render`] writes it as YAML. The rules, in the order they are applied:
//!
//! 1. **Sample.** Only JSON objects count; anything else (an unparseable record is never passed
//!    in, a JSON array or scalar is ignored here) is skipped. No object at all is an error.
//! 2. **Columns.** For CSV, the header in file order; for JSON, the top-level keys in order of
//!    first appearance across the sample. A column whose name cannot be a record path (a `.`
//!    with nothing on one side, or a blank name) is left out, with a comment in the file.
//! 3. **Types**, from each column's non-null values. JSON: strings → `string`, numbers →
//!    `number`, booleans → `bool`, arrays → `list`, objects → `object`, more than one of those
//!    → `json` (takes anything), no value at all → `json`. CSV (every cell is text): a column
//!    whose non-empty cells all parse as numbers (an `i64`, or a finite `f64`, as the CSV reader
//!    parses them) → `number`, all `true`/`false` (any case) → `bool`, else `string`. Numbers
//!    "but for a few" are still `number`: at most one value in 20 (and at least four numbers for
//!    each other value) may be something else, and the field lists those records
//!    ([`InferredField::not_numbers`]) so that `suite init` can name them: one bad cell does not
//!    make a latency column text.
//! 4. **Required**: a column present, non-null and (for text) not blank in every sampled record.
//! 5. **Id**: the column `id` if there is one, else the first column whose name ends in `id`
//!    (any case, e.g. `item_id`), else the first column. It goes in `record.id` and is not a
//!    field.
//! 6. **Field names** must be usable as Jinja variables: a column whose name is not
//!    `[A-Za-z_][A-Za-z0-9_]*` (or is a Jinja keyword or global, like `if` or `range`) gets a
//!    safe name (every other character → `_`, a leading digit → `_` prefix, a keyword → `_`
//!    suffix, a clash with another name → `_2`, `_3`, ...) and `path:` set to the column.
//! 7. **Routing**: `provider_field: model` when a string column `model` (any case) has at
//!    least half of its sampled non-empty values matching the model-prefix rules given to
//!    [`infer`] (the defaults: `gpt-`, `o1-`, `o3-`, `o4-`, `chatgpt-`, `claude-`);
//!    records whose model has no known provider are then skipped. Otherwise no routing, and
//!    `judges.default_judges` judge every record.
//! 8. **Reference**: the first string column named one of [`REFERENCE_NAMES`].
//! 9. **Judged text**, never a `number` or `bool` column nor the reference: the first column
//!    named one of [`JUDGED_NAMES`] (any case); else the first whose name contains one of them
//!    (`bot_answer`, `model_response`); else the string column with the longest values on
//!    average that is not the routing field or label-like (below); else the last string column
//!    but the reference; else the last column that is not a number or boolean. No such column
//!    is an error.
//! 10. **Group by**: one grouping `by_<field>` per string column other than the judged text and
//!     the reference with 2 to 20 distinct sampled values that looks like a label: its name is
//!     label-like (`model`, `prompt_version`, `locale`, ... or ending in `_model`/`_version`), or
//!     every value is a short token (at most 64 characters, no whitespace). A free-text column
//!     of a small sample is thus not taken for a grouping.
//! 11. **Template**: `Title: {{ field }}` lines for the other string columns (not the id, the
//!     reference, the groupings or label-like columns), in column order, then the judged text
//!     last; `judged: [<judged>]`. One dimension, `quality`, 1–5, with a generic rubric.
//! 12. **Checks**: `<judged>_f1` (`token_f1`, judged vs reference) when there is a reference,
//!     and `not_empty` (`length`, min 1 character) always.
//! 13. **Gates**: `low_quality` (quality < 3), and `wrong_answer` (`<judged>_f1` < 0.5) when
//!     there is a reference. `run_gates`: min_pass_rate 0.8, max_unscored_rate 0.05.
//!
//! Every string taken from the data (names, columns, paths) and every other scalar string is
//! written double-quoted in JSON syntax, so any column name or value is valid YAML; the rubric
//! and template are literal blocks, and they and the comments carry only printable characters
//! (a template title also drops `{`, `}`, `%` and `#`, which would start Jinja syntax).

mod infer;
mod render;

pub use infer::{infer, Inferred, InferredField, JUDGED_NAMES, REFERENCE_NAMES, SAMPLE_RECORDS};
pub use render::render;

#[cfg(test)]
mod tests;
