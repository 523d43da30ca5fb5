//! The official JSON-Schema-Test-Suite (draft 2020-12 and draft-07 core files), run through
//! the path tools' output schemas take: [`ValueSchema::from_json_schema`], then
//! [`ValueSchema::validate`].
//!
//! The suite is read from `../shared/conformance/json-schema-test-suite/` beside the
//! repository (see that folder's README). Groups whose schema needs remote documents
//! (`http://localhost:1234/…`) are skipped and counted; groups the import refuses at
//! registration are counted apart. Every other test must agree with the suite, except the
//! ones in [`KNOWN`], each with its reason: a new disagreement, or a listed one that now
//! agrees, fails the test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use codemode::schema::ValueSchema;
use serde_json::Value;

/// Lowest share of agreeing tests (of the tests neither skipped nor refused), in percent.
const THRESHOLD: f64 = 99.9;

/// The tests that disagree with the suite: `draft/file: group / test`, and why.
const KNOWN: &[(&str, &str)] = &[(
    "draft7/ref.json: ref overrides any sibling keywords / ref valid, maxItems ignored",
    "draft-07 §8.3 ignores the siblings of `$ref`; the import reads them with 2020-12 rules (one import for both drafts)",
)];

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/json-schema-test-suite")
}

#[derive(Default)]
struct Figures {
    agreed: usize,
    disagreed: Vec<String>,
    skipped_remote: usize,
    refused: usize,
    refusals: BTreeMap<String, usize>,
}

fn run_file(draft: &str, path: &std::path::Path, figures: &mut Figures) {
    let file = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let groups: Vec<Value> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    for group in &groups {
        let schema = &group["schema"];
        let tests = group["tests"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if schema.to_string().contains("http://localhost:1234") || file == "refRemote.json" {
            figures.skipped_remote += tests.len();
            continue;
        }
        // The draft-07 files name no dialect: the suite expects it to be known, and a
        // schema says it with `$schema` (which decides, for one, whether `format` asserts).
        let mut schema = schema.clone();
        if draft == "draft7"
            && let Value::Object(map) = &mut schema
            && !map.contains_key("$schema")
        {
            map.insert(
                "$schema".into(),
                "http://json-schema.org/draft-07/schema#".into(),
            );
        }
        let imported = match ValueSchema::from_json_schema(&schema) {
            Ok((s, _)) => s,
            Err(e) => {
                figures.refused += tests.len();
                // Group the reasons by the keyword the path ends with.
                let keyword = e.path.rsplit('.').next().unwrap_or_default().to_owned();
                *figures.refusals.entry(keyword).or_default() += tests.len();
                continue;
            }
        };
        let description = group["description"].as_str().unwrap_or_default();
        for test in tests {
            let valid = test["valid"].as_bool().unwrap_or_default();
            let ours = imported.validate(&test["data"]).is_ok();
            if ours == valid {
                figures.agreed += 1;
            } else {
                figures.disagreed.push(format!(
                    "{draft}/{file}: {description} / {}",
                    test["description"].as_str().unwrap_or_default()
                ));
            }
        }
    }
}

#[test]
fn official_suite_core_tests_agree() {
    let root = suite_dir();
    assert!(
        root.is_dir(),
        "the JSON-Schema-Test-Suite is expected at {} (../shared/conformance beside the repository)",
        root.display()
    );
    let mut figures = Figures::default();
    for draft in ["draft2020-12", "draft7"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(draft))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        for path in files {
            run_file(draft, &path, &mut figures);
        }
    }
    let checked = figures.agreed + figures.disagreed.len();
    let share = 100.0 * figures.agreed as f64 / checked as f64;
    println!(
        "JSON-Schema-Test-Suite core (draft2020-12 + draft7): {} of {checked} tests agree ({share:.2} %); {} refused at registration {:?}; {} skipped (remote documents)",
        figures.agreed, figures.refused, figures.refusals, figures.skipped_remote
    );
    let known: BTreeSet<&str> = KNOWN.iter().map(|(id, _)| *id).collect();
    let seen: BTreeSet<&str> = figures.disagreed.iter().map(String::as_str).collect();
    let new: Vec<&&str> = seen.difference(&known).collect();
    let stale: Vec<&&str> = known.difference(&seen).collect();
    assert!(
        new.is_empty(),
        "{} disagreement(s) not in KNOWN:\n{}",
        new.len(),
        new.iter()
            .map(|s| format!("    (\"{s}\", \"\"),"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        stale.is_empty(),
        "KNOWN entries that now agree (remove them): {stale:#?}"
    );
    assert!(share >= THRESHOLD, "{share:.2} % < {THRESHOLD} %");
}
