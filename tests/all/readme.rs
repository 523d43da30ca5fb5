//! The README's first lines are the two set-up commands, and CI runs the same test command.

#[test]
fn readme_opens_with_the_two_commands_and_ci_runs_the_test_one() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut lines = readme
        .lines()
        .skip_while(|l| l.starts_with('#') || l.is_empty());
    assert_eq!(lines.next(), Some("```sh"));
    let run = lines.next().unwrap();
    let test = lines.next().unwrap();
    assert_eq!(lines.next(), Some("```"));
    assert!(
        run.starts_with("cargo run --release -- run examples/"),
        "{run}"
    );
    assert!(run.ends_with(" --root ."), "{run}");
    let example = run
        .strip_prefix("cargo run --release -- run ")
        .and_then(|r| r.strip_suffix(" --root ."))
        .unwrap();
    assert!(root.join(example).is_file(), "{example} must exist");
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let last = ci.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert_eq!(
        last, test,
        ".ci/run must end with the README's test command"
    );
    assert!(ci.contains("cargo fmt --all -- --check"));
    assert!(ci.contains("cargo clippy --all-targets -- -D warnings"));
}
