//! `items.parquet` of a finished run, written from the same item stream as the other files:
//! every result in dataset order, its columns from the run's aggregates (the dimensions, the
//! metrics its records carried, the keys of its groupings).

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use evalfleet_items::{ItemsLayout, ItemsWriter};

use crate::aggregate::RunAggregator;
use crate::{ReportError, ReportInput};

/// The columns of `agg`'s run.
pub(crate) fn layout(agg: &RunAggregator) -> ItemsLayout {
    let mut group_keys: Vec<String> = Vec::new();
    for key in agg.groupings().iter().flat_map(|g| &g.keys) {
        if !group_keys.contains(key) {
            group_keys.push(key.clone());
        }
    }
    ItemsLayout {
        dimensions: agg.dimensions().to_vec(),
        metrics: agg.metric_names().to_vec(),
        group_keys,
        human: agg.human_dimensions().to_vec(),
    }
}

pub(crate) fn write(path: &Path, input: &ReportInput<'_>) -> Result<(), ReportError> {
    let err = |source| ReportError::Items {
        path: path.to_owned(),
        source,
    };
    let file = File::create(path).map_err(|source| ReportError::Write {
        path: path.to_owned(),
        source,
    })?;
    let mut writer = ItemsWriter::new(BufWriter::with_capacity(1 << 20, file), &layout(input.agg))
        .map_err(err)?;
    input
        .items
        .for_each_item(None, &mut |rec| writer.push(rec).map_err(err))?;
    let mut out = writer.finish().map_err(err)?;
    std::io::Write::flush(&mut out).map_err(|source| ReportError::Write {
        path: path.to_owned(),
        source,
    })
}
