//! L2 document retrieval and L3 knowledge-graph retrieval metrics (docs/DESIGN.md §2.2, §9).
//!
//! Ranked lists are normalised and de-duplicated (first occurrence kept) before anything is
//! counted, so a system that returns the same chunk eight times cannot fill its top-k with one
//! hit; gold lists are sets. Precision divides by what was actually returned in the top k, MRR
//! looks at the whole list (a relevant chunk at rank 12 still earns 1/12), and an item with no
//! gold chunks or entities scores 1.0: there was nothing to miss.

use super::sets::{norm_ranked, norm_set, set_f1};

/// The three L2 numbers of one item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DocRetrieval {
    pub recall: f64,
    pub precision: f64,
    pub mrr: f64,
}

/// recall@k, precision@k and MRR of `retrieved` (ranked) against the gold chunk ids.
pub fn doc_retrieval(retrieved: &[String], gold: &[String], k: usize) -> DocRetrieval {
    let gold = norm_set(gold);
    if gold.is_empty() {
        return DocRetrieval {
            recall: 1.0,
            precision: 1.0,
            mrr: 1.0,
        };
    }
    let ranked = norm_ranked(retrieved);
    let top = &ranked[..ranked.len().min(k)];
    let hits = top.iter().filter(|id| gold.contains(*id)).count();
    let precision = if top.is_empty() {
        0.0
    } else {
        hits as f64 / top.len() as f64
    };
    let mrr = ranked
        .iter()
        .position(|id| gold.contains(id))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64);
    DocRetrieval {
        recall: hits as f64 / gold.len() as f64,
        precision,
        mrr,
    }
}

/// hits@k: 1.0 iff any gold entity is among the top-k distinct retrieved KG entities.
pub fn hits_at_k(retrieved: &[String], gold: &[String], k: usize) -> f64 {
    let gold = norm_set(gold);
    if gold.is_empty() {
        return 1.0;
    }
    let ranked = norm_ranked(retrieved);
    let hit = ranked.iter().take(k).any(|e| gold.contains(e));
    if hit {
        1.0
    } else {
        0.0
    }
}

/// kg_edge_f1: set F1 over edge strings (`subject -predicate-> object`, already rendered).
pub fn kg_edge_f1(edges: &[String], gold: &[String]) -> f64 {
    set_f1(edges, gold)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn empty_gold_is_perfect() {
        let r = doc_retrieval(&v(&["x"]), &[], 8);
        assert_eq!((r.recall, r.precision, r.mrr), (1.0, 1.0, 1.0));
        let r = doc_retrieval(&[], &v(&[" "]), 8);
        assert_eq!((r.recall, r.precision, r.mrr), (1.0, 1.0, 1.0));
        assert_eq!(hits_at_k(&[], &[], 8), 1.0);
    }

    #[test]
    fn nothing_returned_is_zero() {
        let r = doc_retrieval(&[], &v(&["a"]), 8);
        assert_eq!((r.recall, r.precision, r.mrr), (0.0, 0.0, 0.0));
        assert_eq!(hits_at_k(&[], &v(&["a"]), 8), 0.0);
    }

    #[test]
    fn precision_divides_by_what_was_returned() {
        // 3 returned (< k = 8), 2 relevant.
        let r = doc_retrieval(&v(&["a", "x", "b"]), &v(&["a", "b", "c", "d"]), 8);
        assert_eq!(r.recall, 0.5);
        assert!(close(r.precision, 2.0 / 3.0));
        assert_eq!(r.mrr, 1.0);
    }

    #[test]
    fn duplicates_are_removed_before_cutting_at_k() {
        // Raw top-2 would be [a, a]; distinct top-2 is [a, b].
        let r = doc_retrieval(&v(&["a", "A ", "b", "c"]), &v(&["a", "b"]), 2);
        assert_eq!((r.recall, r.precision, r.mrr), (1.0, 1.0, 1.0));
        // Duplicates of a miss do not push the hit down the ranking.
        let r = doc_retrieval(&v(&["x", "x", "x", "a"]), &v(&["a"]), 2);
        assert_eq!((r.recall, r.precision, r.mrr), (1.0, 0.5, 0.5));
    }

    #[test]
    fn case_and_whitespace_are_normalised() {
        let r = doc_retrieval(
            &v(&[" Metric_Guide_SOS_01 "]),
            &v(&["metric_guide_sos_01"]),
            8,
        );
        assert_eq!((r.recall, r.precision, r.mrr), (1.0, 1.0, 1.0));
    }

    #[test]
    fn the_k_cut_off_applies_to_recall_and_precision_but_not_mrr() {
        let retrieved = v(&["x1", "x2", "x3", "a", "b"]);
        let r = doc_retrieval(&retrieved, &v(&["a", "b"]), 3);
        assert_eq!((r.recall, r.precision), (0.0, 0.0));
        assert_eq!(r.mrr, 0.25); // first relevant at rank 4, beyond k
        let r = doc_retrieval(&retrieved, &v(&["a", "b"]), 4);
        assert_eq!((r.recall, r.precision, r.mrr), (0.5, 0.25, 0.25));
    }

    #[test]
    fn gold_repeats_count_once() {
        let r = doc_retrieval(&v(&["a"]), &v(&["a", "A", "b"]), 8);
        assert_eq!((r.recall, r.precision), (0.5, 1.0));
    }

    #[test]
    fn hits_at_k_respects_k_and_dedup() {
        let kg = v(&["cosrx", "COSRX", "tirtir", "laneige"]);
        assert_eq!(hits_at_k(&kg, &v(&["laneige"]), 3), 1.0);
        assert_eq!(hits_at_k(&kg, &v(&["laneige"]), 2), 0.0);
        assert_eq!(hits_at_k(&kg, &v(&["LANEIGE", "nobody"]), 8), 1.0);
        assert_eq!(hits_at_k(&kg, &v(&["nobody"]), 8), 0.0);
    }

    #[test]
    fn edge_f1_is_set_f1_over_edge_strings() {
        let gold = v(&[
            "laneige -competesWith-> cosrx",
            "laneige -competesWith-> tirtir",
        ]);
        assert_eq!(
            kg_edge_f1(&v(&["LANEIGE -competesWith-> COSRX"]), &gold),
            2.0 / 3.0
        );
        assert_eq!(kg_edge_f1(&[], &[]), 1.0);
        assert_eq!(kg_edge_f1(&[], &gold), 0.0);
    }
}
