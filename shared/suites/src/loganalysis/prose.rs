//! The agent's text as the freeform rules read it (docs/DESIGN.md §9 "Text matching in freeform mode").
//!
//! Every freeform rule is a case-insensitive substring test, with `_` read as a space (so an
//! agent writing `vm_started` mentions the event type `vm_started` = "vm started"). Both sides
//! go through the same folding once, here, so no rule can forget one half of it. The whole
//! output is searched, a structured block included, as the seed does.

/// Folded text: lowercase, `_` → space.
#[derive(Debug, Clone)]
pub(crate) struct Prose {
    folded: String,
}

/// The folding applied to both the text and every needle.
pub(crate) fn fold(s: &str) -> String {
    s.to_lowercase().replace('_', " ")
}

impl Prose {
    pub(crate) fn new(text: &str) -> Self {
        Prose { folded: fold(text) }
    }

    /// Whether `needle` occurs (after folding). An empty needle never counts as mentioned.
    pub(crate) fn contains(&self, needle: &str) -> bool {
        self.find(needle).is_some()
    }

    /// Byte offset of the first occurrence of `needle` in the folded text.
    pub(crate) fn find(&self, needle: &str) -> Option<usize> {
        let needle = fold(needle);
        if needle.is_empty() {
            return None;
        }
        self.folded.find(&needle)
    }

    /// The folded text itself (for token scans).
    pub(crate) fn text(&self) -> &str {
        &self.folded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_is_case_insensitive_with_underscore_as_space() {
        let p = Prose::new("The VM_Started event; Instance B9000564 was TERMINATED.");
        assert!(p.contains("vm started"));
        assert!(p.contains("vm_started"));
        assert!(p.contains("b9000564"));
        assert!(p.contains("Terminated"));
        assert!(!p.contains("paused"));
        assert!(!p.contains(""));
        assert!(p.find("vm") < p.find("terminated"));
    }
}
