//! The flipped items read again, whole: the second pass seeks to each item's byte span
//! (recorded by the first) and parses those bytes alone, so it costs what the flipped items
//! weigh, not the whole file.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use serde_json::Value;

use crate::CompareError;

/// An item as the second pass hands it over: its JSON object, whole.
pub(crate) type RawItem = BTreeMap<String, Value>;

/// Calls `found` with the item at each of `spans` (byte offset and length, ascending), parsed
/// whole from its bytes.
pub(crate) fn read_items_at(
    path: &Path,
    spans: &[(u64, u32)],
    found: &mut dyn FnMut(&RawItem) -> Result<(), CompareError>,
) -> Result<(), CompareError> {
    let read_err = |source| CompareError::Read {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(read_err)?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut at = 0u64;
    let mut bytes = Vec::new();
    for &(offset, len) in spans {
        let skip = i64::try_from(offset - at.min(offset)).unwrap_or(i64::MAX);
        reader.seek_relative(skip).map_err(read_err)?;
        bytes.resize(len as usize, 0);
        reader.read_exact(&mut bytes).map_err(read_err)?;
        at = offset + u64::from(len);
        let item = serde_json::from_slice::<RawItem>(&bytes).map_err(|e| CompareError::Parse {
            path: path.to_owned(),
            message: format!("the item at byte {offset} (read again for the flip list): {e}"),
        })?;
        found(&item)?;
    }
    Ok(())
}
