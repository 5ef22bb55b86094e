//! Rendering: the inferred suite as commented YAML that loads as is.

use super::infer::*;
use crate::custom::spec::FieldType;

/// `s` as a YAML double-quoted scalar: JSON syntax (a subset of YAML's), with the characters
/// YAML does not allow raw (DEL, C1 controls, line and paragraph separators, BOM) escaped.
fn quote(s: &str) -> String {
    let json = serde_json::to_string(s).expect("a string serialises");
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if needs_escape(c) {
            out.push_str(&format!("\\u{:04X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    matches!(
        c,
        '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
    )
}

/// Text safe inside a comment or a block scalar line: control and non-YAML characters become
/// spaces, so the text stays on its line.
fn plain(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() || needs_escape(c) {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// The template label of a column: `gold_answer` → `Gold answer`. Braces are dropped (they
/// would start Jinja syntax); an empty result falls back to the field name.
fn title(column: &str, name: &str) -> String {
    let words: String = plain(column)
        .chars()
        .filter(|c| !matches!(c, '{' | '}' | '%' | '#'))
        .map(|c| if matches!(c, '_' | '-' | '.') { ' ' } else { c })
        .collect();
    let words = words.split_whitespace().collect::<Vec<_>>().join(" ");
    let words = if words.is_empty() {
        name.to_owned()
    } else {
        words
    };
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => words,
    }
}

fn type_name(kind: FieldType) -> &'static str {
    match kind {
        FieldType::String => "string",
        FieldType::Number => "number",
        FieldType::Bool => "bool",
        FieldType::List => "list",
        FieldType::Object => "object",
        FieldType::Json => "json",
    }
}

const RUBRIC: &str = "\
5: Correct, complete and directly useful; nothing important is missing or wrong
4: Correct and useful, with minor omissions or imprecisions
3: Partly correct or incomplete: misses a key point or contains a notable error
2: Mostly wrong, off-topic or unhelpful, with little of value
1: Wrong, irrelevant, empty or harmful";

/// A word for a shell command line: as is when it holds only safe characters, else quoted.
fn shell_word(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=@+,%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_owned()
    } else {
        format!("'{}'", plain(s).replace('\'', "'\\''"))
    }
}

/// The starter suite file. `name` is the suite's name; `dataset` and `file` are the paths the
/// header's commands show, and `format` the `--format` they pass (None = from the file name).
pub fn render(
    inferred: &Inferred,
    name: &str,
    dataset: &str,
    file: &str,
    format: Option<&str>,
) -> String {
    let mut y = String::new();
    let mut line = |s: &str| {
        y.push_str(s);
        y.push('\n');
    };
    let mut dataset_c = shell_word(dataset);
    if let Some(f) = format {
        dataset_c.push_str(&format!(" --format {}", shell_word(f)));
    }
    let file_c = shell_word(file);
    let f1 = inferred.f1_check();

    line(&format!(
        "# Starter custom suite '{}', written by `evalfleet suite init` from the columns of",
        plain(name)
    ));
    line(&format!(
        "# {} ({} record{} sampled). It runs as is; every section below says what to edit.",
        plain(dataset),
        inferred.sampled,
        if inferred.sampled == 1 { "" } else { "s" }
    ));
    line("#");
    line("# Run it with the offline heuristic judge (no API keys needed):");
    line(&format!("#   evalfleet run {dataset_c} --suite {file_c}"));
    line("# Check every record against it first (each problem with its line):");
    line(&format!(
        "#   evalfleet validate {dataset_c} --suite {file_c}"
    ));
    line("# Judge with live LLMs (the providers and keys under `judges:` in the config):");
    line(&format!(
        "#   evalfleet run {dataset_c} --suite {file_c} --judge live --config config/evalfleet.yaml"
    ));
    line("#");
    line("# The format is described in README.md, section \"Your own suite\".");
    line(&format!("name: {}", quote(name)));
    line("kind: custom");
    line(&format!(
        "description: {}",
        quote(&format!(
            "Starter suite for {}: one judge dimension (quality) and deterministic checks. Edit me.",
            plain(dataset)
        ))
    ));
    line("");

    // record
    line("# record: what one record holds. Records that do not match are skipped with a reason");
    line("# (`evalfleet validate` lists them); add, remove or retype fields freely.");
    line("record:");
    line("  # The column that identifies a record: a string or an integer.");
    if inferred.id != "id" && !inferred.id.to_lowercase().ends_with("id") {
        line(&format!(
            "  # No column is named like an id, so the first column, {}, is used: pick another if",
            quote(&inferred.id)
        ));
        line("  # its values are not unique.");
    }
    line(&format!("  id: {}", quote(&inferred.id)));
    line("  # One field per column. type: string, number, bool, list, object or json (anything).");
    line("  # required: true = a record without a (non-blank) value is skipped. path: the column");
    line(
        "  # or dotted path (gold.answer) the field is read from, when it is not the field's name.",
    );
    line("  # Templates and checks name fields by their name.");
    line("  fields:");
    for f in &inferred.fields {
        let mut spec = format!("type: {}", quote(type_name(f.kind)));
        if f.required {
            spec.push_str(", required: true");
        }
        if f.column != f.name {
            spec.push_str(&format!(", path: {}", quote(&f.column)));
        }
        let role = if f.name == inferred.judged {
            "  # the judged text"
        } else if Some(&f.name) == inferred.reference.as_ref() {
            "  # the reference (gold) text"
        } else if Some(&f.name) == inferred.provider_field.as_ref() {
            "  # routes the judge (provider_field)"
        } else {
            ""
        };
        line(&format!("    {}: {{{spec}}}{role}", quote(&f.name)));
        if let Some((_, first)) = f.not_numbers.first() {
            line(&format!(
                "    # {} sampled value(s) of this column are not numbers (the first: {}): their",
                f.not_numbers_count,
                plain(&quote(&first.chars().take(40).collect::<String>()))
            ));
            line("    # records are skipped. Fix them (suite init listed them), or make it a string.");
        }
    }
    for c in &inferred.unusable {
        line(&format!(
            "    # Left out: column {} cannot be a path (a '.' with nothing on one side); rename it to use it.",
            quote(c)
        ));
    }
    match &inferred.provider_field {
        Some(p) => {
            line("  # The judge's provider is chosen from the model that answered (model prefixes gpt-,");
            line("  # o1-, o3-, o4-, chatgpt- -> openai; claude- -> anthropic; `model_prefixes` in the");
            line("  # config), then judges.judge_mapping picks the other provider to judge it. Records");
            line("  # whose model is missing or has no known provider are skipped. Remove this line to");
            line("  # have judges.default_judges judge every record.");
            line(&format!("  provider_field: {}", quote(p)));
        }
        None => {
            line("  # No routing field: judges.default_judges judge every record. With a column naming");
            line("  # the model that answered (gpt-..., claude-...), add `provider_field: <field>` to");
            line("  # have each answer judged by another provider (judges.judge_mapping).");
        }
    }
    line("");

    // judge
    line("# judge: what an LLM judge scores. Each dimension has an integer scale, a rubric and a");
    line(
        "# template (Jinja: {{ field }}) that becomes the judge's message. The `judged` fields are",
    );
    line("# inserted as delimited, untrusted blocks; the others are context. Add dimensions");
    line("# (faithfulness, tone, ...) by copying this one; rewrite the rubric for your task.");
    line("judge:");
    line("  dimensions:");
    line(&format!("    - name: {}", quote("quality")));
    line("      scale: {min: 1, max: 5}");
    line("      rubric: |");
    for r in RUBRIC.lines() {
        line(&format!("        {r}"));
    }
    line("      template: |");
    let judged_field = inferred.field(&inferred.judged);
    let mut first = true;
    for name in inferred.context.iter().chain([&inferred.judged]) {
        let column = inferred.field(name).map_or(name.as_str(), |f| &f.column);
        if !first {
            line("");
        }
        first = false;
        line(&format!(
            "        {}: {{{{ {name} }}}}",
            title(column, name)
        ));
    }
    line(&format!("      judged: [{}]", quote(&inferred.judged)));
    if judged_field.is_some_and(|f| f.kind != FieldType::String) {
        line("      # The judged field is not text: the judge sees its JSON.");
    }
    line("");

    // checks
    line("# checks: deterministic metrics in [0, 1], computed without a judge. Types: equals,");
    line(
        "# contains, starts_with, regex, is_json, json_schema, exact_match, token_f1, similarity,",
    );
    line("# length, range. A gate may test a check by its name.");
    line("checks:");
    if let Some(reference) = &inferred.reference {
        line(&format!(
            "  # Word overlap of {} with the reference {} (1 = the same words).",
            quote(&inferred.judged),
            quote(reference)
        ));
        line(&format!(
            "  - {{name: {}, type: \"token_f1\", field: {}, reference: {}}}",
            quote(&f1),
            quote(&inferred.judged),
            quote(reference)
        ));
    }
    line(&format!(
        "  # 1 when {} has at least one character.",
        quote(&inferred.judged)
    ));
    line(&format!(
        "  - {{name: {}, type: \"length\", field: {}, min: 1}}",
        quote("not_empty"),
        quote(&inferred.judged)
    ));
    line("");

    // gates
    line(
        "# gates: an item fails a gate when its metric (a dimension or a check) compares true with",
    );
    line("# the threshold; the tag names the failure in the reports. Tune the thresholds.");
    line("gates:");
    line(&format!(
        "  - {{tag: {}, metric: {}, op: \"<\", threshold: 3, meaning: {}}}",
        quote("low_quality"),
        quote("quality"),
        quote("The judge scored the answer's quality below 3 of 5.")
    ));
    if inferred.reference.is_some() {
        line(&format!(
            "  - {{tag: {}, metric: {}, op: \"<\", threshold: 0.5, meaning: {}}}",
            quote("wrong_answer"),
            quote(&f1),
            quote("The answer shares less than half its words with the reference (token F1 below 0.5).")
        ));
    }
    line("");

    // group_by
    line("# group_by: the reports break every metric down by these fields (keys may combine");
    line("# several fields, e.g. [model, prompt_version]).");
    if inferred.group_by.is_empty() {
        line("group_by: []");
    } else {
        line("group_by:");
        for g in &inferred.group_by {
            line(&format!(
                "  - {{name: {}, keys: [{}]}}",
                quote(&format!("by_{g}")),
                quote(g)
            ));
        }
    }
    line("");

    // run_gates
    line("# run_gates: when `evalfleet run` exits 1 (a failed gate) instead of 0: the share of items");
    line("# that must pass every gate, and the share of judge calls that may end unscored.");
    line("run_gates:");
    line("  min_pass_rate: 0.8");
    line("  max_unscored_rate: 0.05");
    y
}
