//! The built-in file tools, through programs.

use serde_json::json;

use crate::support::Harness;

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join("src/inner")).unwrap();
    std::fs::write(
        p.join("src/a.rs"),
        "pub fn a() {}\nfn b() {}\npub fn c() {}\n",
    )
    .unwrap();
    std::fs::write(p.join("src/inner/d.rs"), "pub fn d() {}\n").unwrap();
    std::fs::write(p.join("notes.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    dir
}

#[tokio::test]
async fn read_file_reads_whole_files_and_line_ranges() {
    let dir = tree();
    let h = Harness::with_files(dir.path());
    let r = h
        .ok("await tools.read_file({path: 'notes.txt', offset: 2, limit: 2})")
        .await;
    assert_eq!(
        r,
        json!({"path": "notes.txt", "content": "two\nthree\n", "start_line": 2, "end_line": 3, "total_lines": 4, "truncated": true})
    );
    // Past u64: as far as u64 goes, never read as absent.
    for huge in ["2 ** 64", "1e300", "10n ** 20n"] {
        let r = h
            .ok(&format!(
                "await tools.read_file({{path: 'notes.txt', offset: {huge}, limit: {huge}}})"
            ))
            .await;
        assert_eq!(
            (
                r["content"].as_str(),
                r["start_line"].as_u64(),
                r["total_lines"].as_u64()
            ),
            (Some(""), Some(u64::MAX), Some(4)),
            "{huge}: {r}"
        );
    }
    let r = h
        .ok("(await tools.read_file({path: 'notes.txt'})).content")
        .await;
    assert_eq!(r, json!("one\ntwo\nthree\nfour\n"));
}

#[tokio::test]
async fn read_file_refuses_what_is_not_a_file_and_bounds_long_lines() {
    let dir = tree();
    let p = dir.path();
    // A FIFO nobody writes to would block the read forever.
    let made = std::process::Command::new("mkfifo")
        .arg(p.join("fifo"))
        .status()
        .unwrap();
    assert!(made.success());
    // One line over the 16 MiB a call returns, then a short one.
    let mut big = "x".repeat((16 << 20) + 1);
    big.push_str("\nshort\n");
    std::fs::write(p.join("big.txt"), big).unwrap();
    let h = Harness::with_files(p);
    let e = h.err("await tools.read_file({path: 'fifo'})").await;
    assert_eq!(
        e["message"],
        "read_file: fifo is not a regular file (a FIFO, socket or device); read_file reads files"
    );
    let e = h.err("await tools.read_file({path: 'src'})").await;
    assert_eq!(e["message"], "read_file: src is a directory; use list_dir");
    let e = h.err("await tools.read_file({path: 'big.txt'})").await;
    assert_eq!(
        e["message"],
        "read_file: big.txt: the lines asked for exceed 16777216 bytes; read fewer with offset and limit"
    );
    // Lines before the range are skipped without being held.
    let r = h
        .ok("await tools.read_file({path: 'big.txt', offset: 2})")
        .await;
    assert_eq!(
        r,
        json!({"path": "big.txt", "content": "short\n", "start_line": 2, "end_line": 2, "total_lines": 2, "truncated": false})
    );
}

#[tokio::test]
async fn list_dir_glob_and_grep_return_data() {
    let dir = tree();
    let h = Harness::with_files(dir.path());
    let r = h.ok("(await tools.list_dir({path: 'src'})).entries").await;
    assert_eq!(
        r,
        json!([{"name": "a.rs", "kind": "file", "size": 38}, {"name": "inner", "kind": "dir", "size": 0}])
    );
    let r = h.ok("await tools.glob({pattern: '**/*.rs'})").await;
    assert_eq!(
        r,
        json!({"matches": ["src/a.rs", "src/inner/d.rs"], "total": 2, "truncated": false})
    );
    let r = h
        .ok("await tools.glob({pattern: '*.rs', path: 'src'})")
        .await;
    assert_eq!(r["matches"], json!(["src/a.rs"]));
    let r = h
        .ok("await tools.grep({pattern: '^pub fn', path: 'src'})")
        .await;
    assert_eq!(
        r,
        json!({"matches": [
            {"path": "src/a.rs", "line_number": 1, "line": "pub fn a() {}"},
            {"path": "src/a.rs", "line_number": 3, "line": "pub fn c() {}"},
            {"path": "src/inner/d.rs", "line_number": 1, "line": "pub fn d() {}"},
        ], "total": 3, "truncated": false})
    );
    let r = h
        .ok("await tools.grep({pattern: 'fn', max_results: 1})")
        .await;
    assert_eq!(r["total"], 4);
    assert_eq!(r["truncated"], true);
    assert_eq!(r["matches"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn paths_outside_the_root_are_refused() {
    let dir = tree();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "s3cret").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("link.txt"),
    )
    .unwrap();
    // A folder symlink out of the root, a relative symlink that climbs out of it, and a
    // chain of symlinks whose last step leaves.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink("..", dir.path().join("src/up")).unwrap();
        std::os::unix::fs::symlink("../..", dir.path().join("src/esc")).unwrap();
        std::os::unix::fs::symlink("../link.txt", dir.path().join("src/chain")).unwrap();
    }
    let h = Harness::with_files(dir.path());
    let secret = outside.path().join("secret.txt");
    let climbing = format!(
        "src/esc/{}/secret.txt",
        outside.path().file_name().unwrap().to_str().unwrap()
    );
    for path in [
        "../secret.txt",
        "src/../../x",
        secret.to_str().unwrap(),
        "link.txt",
        "out/secret.txt",
        "src/chain",
        climbing.as_str(),
    ] {
        let e = h
            .err(&format!("await tools.read_file({{path: {}}})", json!(path)))
            .await;
        assert_eq!(
            e["message"],
            format!(
                "read_file: {path}: the path is outside the root folder; use a path relative to the root"
            ),
            "for {path}"
        );
    }
    // Symlinks that stay inside are followed; the path shown is the one asked for.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("notes.txt", dir.path().join("inner.txt")).unwrap();
        std::os::unix::fs::symlink("../notes.txt", dir.path().join("src/notes")).unwrap();
    }
    for path in ["inner.txt", "src/notes", "src/up/notes.txt"] {
        let r = h
            .ok(&format!("await tools.read_file({{path: {}}})", json!(path)))
            .await;
        assert_eq!(
            (r["path"].as_str(), r["total_lines"].as_u64()),
            (Some(path), Some(4))
        );
    }
    // A folder, a FIFO (refused at once: opening it does not wait for a writer).
    let e = h.err("await tools.read_file({path: 'src'})").await;
    assert_eq!(e["message"], "read_file: src is a directory; use list_dir");
    #[cfg(unix)]
    {
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = h.err("await tools.read_file({path: 'pipe'})").await;
        assert_eq!(
            e["message"],
            "read_file: pipe is not a regular file (a FIFO, socket or device); read_file reads files"
        );
    }
    // a symlink out of the root is not followed by glob or grep either
    let r = h.ok("await tools.grep({pattern: 's3cret'})").await;
    assert_eq!(r["total"], 0);
    // an absolute path inside the root is fine
    let inside = dir.path().join("notes.txt");
    let r = h
        .ok(&format!(
            "(await tools.read_file({{path: {}}})).total_lines",
            json!(inside.to_str().unwrap())
        ))
        .await;
    assert_eq!(r, json!(4));
}
