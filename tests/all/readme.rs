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
    let lines: Vec<&str> = ci.lines().map(str::trim).collect();
    let tests_at = lines
        .iter()
        .position(|l| *l == test)
        .expect(".ci/run must run the README's test command");
    // The fuzz targets run after the tests, for the times the README states.
    let fuzz_at = lines
        .iter()
        .position(|l| *l == "tests/fuzz/run 30")
        .expect(".ci/run must run every fuzz target for 30 s");
    assert!(fuzz_at > tests_at, "the fuzzers run after the tests");
    assert!(lines.contains(&"FUZZ_SANITIZER=address tests/fuzz/run 60 run"));
    let readme_fuzz = readme.split("## Fuzzing").nth(1).unwrap();
    assert!(readme_fuzz.contains("`tests/fuzz/run 30`"));
    assert!(readme_fuzz.contains("`FUZZ_SANITIZER=address tests/fuzz/run 60 run`"));
    assert!(ci.contains("cargo fmt --all -- --check"));
    assert!(ci.contains("cargo clippy --all-targets -- -D warnings"));
}
