//! The four output files of a comparison, one renderer per file; figures come unrounded from
//! [`crate::Comparison`] and are rounded only for display (md, html, junit).

mod html;
mod junit;
mod markdown;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::{CompareError, Comparison};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFile {
    Json,
    Markdown,
    Html,
    Junit,
}

impl OutputFile {
    pub const ALL: [OutputFile; 4] = [
        OutputFile::Json,
        OutputFile::Markdown,
        OutputFile::Html,
        OutputFile::Junit,
    ];

    pub fn file_name(self) -> &'static str {
        match self {
            OutputFile::Json => "compare.json",
            OutputFile::Markdown => "compare.md",
            OutputFile::Html => "compare.html",
            OutputFile::Junit => "junit.xml",
        }
    }
}

pub(crate) fn write_all(dir: &Path, c: &Comparison) -> Result<Vec<PathBuf>, CompareError> {
    std::fs::create_dir_all(dir).map_err(|source| CompareError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let mut paths = Vec::new();
    for f in OutputFile::ALL {
        let path = dir.join(f.file_name());
        let err = |source: std::io::Error| CompareError::Write {
            path: path.clone(),
            source,
        };
        let mut w = BufWriter::new(File::create(&path).map_err(err)?);
        match f {
            OutputFile::Json => serde_json::to_writer(&mut w, c)
                .map_err(std::io::Error::from)
                .map_err(err)?,
            OutputFile::Markdown => w.write_all(markdown::render(c).as_bytes()).map_err(err)?,
            OutputFile::Html => w.write_all(html::render(c).as_bytes()).map_err(err)?,
            OutputFile::Junit => w.write_all(junit::render(c).as_bytes()).map_err(err)?,
        }
        w.flush().map_err(err)?;
        paths.push(path);
    }
    Ok(paths)
}

/// A number for display: 4 significant decimals, `–` for none.
pub(crate) fn num(x: Option<f64>) -> String {
    match x {
        Some(x) if x.is_finite() => format!("{x:.4}"),
        _ => "–".into(),
    }
}

/// A signed difference for display (`+0.0123`), `–` for none.
pub(crate) fn signed(x: Option<f64>) -> String {
    x.map_or("–".into(), |d| format!("{d:+.4}"))
}

/// A p-value for display: scientific below 10^-4.
pub(crate) fn pval(x: Option<f64>) -> String {
    match x {
        Some(p) if p < 1e-4 => format!("{p:.1e}"),
        Some(p) => format!("{p:.4}"),
        None => "–".into(),
    }
}

/// `[lo, hi]` for display.
pub(crate) fn interval(q: &crate::Quantity) -> String {
    match (q.ci_low, q.ci_high) {
        (Some(lo), Some(hi)) => format!("[{lo:+.4}, {hi:+.4}]"),
        _ => "–".into(),
    }
}
