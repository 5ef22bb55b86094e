//! The flipped items read again, whole: the parser seeks to each item's byte offset (recorded
//! by the first pass) and reads that one value, so the second pass costs what the flipped items
//! weigh, not the whole file.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::rc::Rc;

use serde::Deserialize;
use serde_json::Value;

use super::Counting;
use crate::CompareError;

/// An item as the second pass hands it over: its JSON object, whole.
pub(crate) type RawItem = BTreeMap<String, Value>;

/// Calls `found` with the item at each of `offsets` (ascending), parsed whole.
pub(crate) fn read_items_at(
    path: &Path,
    offsets: &[u64],
    found: &mut dyn FnMut(&RawItem) -> Result<(), CompareError>,
) -> Result<(), CompareError> {
    let read_err = |source| CompareError::Read {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(read_err)?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut at = 0u64;
    for &offset in offsets {
        let skip = i64::try_from(offset - at.min(offset)).unwrap_or(i64::MAX);
        reader.seek_relative(skip).map_err(read_err)?;
        let taken = Rc::new(Cell::new(0));
        let mut de = serde_json::Deserializer::from_reader(Counting {
            inner: &mut reader,
            count: taken.clone(),
        });
        let item =
            BTreeMap::<String, Value>::deserialize(&mut de).map_err(|e| CompareError::Parse {
                path: path.to_owned(),
                message: format!("the item at byte {offset} (read again for the flip list): {e}"),
            })?;
        at = offset + taken.get();
        found(&item)?;
    }
    Ok(())
}
