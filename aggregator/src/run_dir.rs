//! Where the aggregator writes a run's files (its reports, its result logs):
//! `<reports_dir>/<run_id>/`, and nowhere else. A run id reaches the aggregator from Redis,
//! which anyone who can submit can write to, so the id is checked against the run-id rule
//! again here, whatever let it in, and the directory is checked after resolving it (a symbolic
//! link in its place could lead anywhere): it must be inside `reports_dir`, resolved too.

use std::path::{Path, PathBuf};

use evalfleet_model::run_id;

/// `<reports_dir>/<run_id>`, created, or why the run's files may not be written there.
pub(crate) fn resolve(reports_dir: &Path, id: &str) -> Result<PathBuf, String> {
    run_id::check(id).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(reports_dir)
        .map_err(|e| format!("creating reports_dir {}: {e}", reports_dir.display()))?;
    let base = reports_dir
        .canonicalize()
        .map_err(|e| format!("resolving reports_dir {}: {e}", reports_dir.display()))?;
    let dir = reports_dir.join(id);
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("creating the run's directory {}: {e}", dir.display()))?;
    let resolved = dir
        .canonicalize()
        .map_err(|e| format!("resolving the run's directory {}: {e}", dir.display()))?;
    if resolved.parent() != Some(base.as_path()) {
        return Err(format!(
            "the run's directory {} resolves to {}, which is not directly inside reports_dir {}",
            dir.display(),
            resolved.display(),
            base.display()
        ));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_directory_is_made_inside_reports_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let reports = tmp.path().join("reports");
        let dir = resolve(&reports, "run-1").unwrap();
        assert_eq!(dir, reports.join("run-1"));
        assert!(dir.is_dir());
        assert_eq!(resolve(&reports, "run-1").unwrap(), dir, "again: the same");
    }

    #[test]
    fn ids_that_break_the_rule_are_refused_and_nothing_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let reports = tmp.path().join("a").join("reports");
        for id in ["..", "../../x/evil", "/tmp/abs-evil", "a/b", "a:b", ""] {
            let err = resolve(&reports, id).unwrap_err();
            assert!(err.contains(run_id::RULE), "{id:?}: {err}");
        }
        assert!(!reports.exists(), "nothing was created");
        assert!(!tmp.path().join("x").exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_out_of_reports_dir_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let reports = tmp.path().join("reports");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&reports).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, reports.join("linked")).unwrap();
        let err = resolve(&reports, "linked").unwrap_err();
        assert!(err.contains("not directly inside reports_dir"), "{err}");
        // reports_dir itself may be a link: what counts is where the run lands, resolved.
        let alias = tmp.path().join("alias");
        std::os::unix::fs::symlink(&reports, &alias).unwrap();
        assert_eq!(resolve(&alias, "r").unwrap(), alias.join("r"));
        assert!(reports.join("r").is_dir());
    }
}
