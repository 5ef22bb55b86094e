//! The best sort key each row group can hold, read from the footer's column statistics, so
//! that the first page of a numeric sort reads only the row groups that can hold its rows:
//! at 10^7 rows in 1,221 groups, the top 100 of a column lie in at most 100 of them. The same
//! from the other end for the last pages of a sort (`flip`): there the best a group can hold
//! is its worst key, and a group holding any null holds a null.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;

use super::sort::f64_key;
use super::table::Table;

/// What a row group can hold of a column, at best in the page's order (flipped or not).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Bound {
    /// No row better than this key (the `u64` of [`super::sort::KeyRef::Num`]).
    Num(u64),
    /// A null (nulls come last, so first when flipped): only nulls, or with `flip` any.
    Nulls,
}

/// For each row group, the best key of `column` in the page's order (the maximum when `desc`,
/// else the minimum), or with `flip` the best in the reversed order (a null if the group holds
/// one, else the minimum when `desc`, the maximum otherwise); None when the column is not a
/// number column or a group that holds values has no statistics: the sort then scans every
/// group.
pub(crate) fn bounds(table: &Table, column: &str, desc: bool, flip: bool) -> Option<Vec<Bound>> {
    let meta = table.plain.metadata();
    let converter = StatisticsConverter::try_new(
        column,
        table.plain.schema(),
        meta.file_metadata().schema_descr(),
    )
    .ok()?;
    let groups = meta.row_groups().iter();
    let best: ArrayRef = if desc != flip {
        converter.row_group_maxes(groups.clone()).ok()?
    } else {
        converter.row_group_mins(groups.clone()).ok()?
    };
    let nulls = converter.row_group_null_counts(groups).ok()?;
    let key = |g: usize| -> Option<u64> {
        if best.is_null(g) {
            return None;
        }
        Some(match best.data_type() {
            DataType::UInt64 => best.as_primitive::<UInt64Type>().value(g),
            DataType::UInt32 => best.as_primitive::<UInt32Type>().value(g).into(),
            DataType::Float64 => f64_key(best.as_primitive::<Float64Type>().value(g)),
            _ => return None,
        })
    };
    let has_nulls = |g: usize| !nulls.is_null(g) && nulls.value(g) > 0;
    (0..meta.num_row_groups())
        .map(|g| match key(g) {
            _ if flip && (nulls.is_null(g) || has_nulls(g)) => {
                // Unknown null counts could hide a null: it would come first.
                Some(Bound::Nulls)
            }
            Some(k) => Some(Bound::Num(k)),
            // All nulls, or no statistics: only the first can be skipped past.
            None if !nulls.is_null(g) && nulls.value(g) == table.group_rows(g) => {
                Some(Bound::Nulls)
            }
            None => None,
        })
        .collect()
}
