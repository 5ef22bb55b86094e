//! Finding the report a command-line argument names: a `report.json` path, a report directory,
//! or a run id under the reports directory, with a message that says where it looked.

use std::path::{Path, PathBuf};

use crate::CompareError;

/// Finds BASE or NEW: a `report.json` path, a report directory, or a run id under
/// `reports_dir`.
pub fn resolve(arg: &str, reports_dir: &Path) -> Result<PathBuf, CompareError> {
    let path = Path::new(arg);
    if path.is_file() {
        return Ok(path.to_owned());
    }
    if path.is_dir() {
        let file = path.join("report.json");
        if file.is_file() {
            return Ok(file);
        }
        return Err(CompareError::NotFound {
            arg: arg.to_owned(),
            looked: format!("the directory has no report.json ({})", file.display()),
        });
    }
    let by_id = reports_dir.join(arg).join("report.json");
    if !arg.contains('/') && by_id.is_file() {
        return Ok(by_id);
    }
    Err(CompareError::NotFound {
        arg: arg.to_owned(),
        looked: format!(
            "it is not a report.json file or a report directory, and there is no run '{arg}' in the reports directory ({} does not exist)",
            by_id.display()
        ),
    })
}
