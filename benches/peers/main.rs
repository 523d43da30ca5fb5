//! codemode beside the field, in one run: the same host tools and the same workloads in
//! codemode (in process, through `run_code`) and in four Node sandbox runtimes (`node:vm`,
//! `isolated-vm`, QuickJS compiled to WebAssembly raw and through a library), interleaved
//! round by round, then a table of medians with ratios.
//!
//! `cargo bench --bench peers` (`-- --rounds N`, default 5; `-- --markdown` prints the table
//! as Markdown for the README). On first use it installs the pinned Node packages of
//! `benches/peers/` with `npm ci` (isolated-vm compiles a native addon: minutes, once).
//!
//! The peers run in `peer.mjs`, a Node worker this program starts and speaks JSON lines
//! with (see `benches/peers/README.md` for the protocol and how each runtime crosses
//! values). Workloads, each timed the same way on both sides:
//!
//! | workload | one sample |
//! | --- | --- |
//! | `cold_start` | 20 × (new engine, host tools installed, `return 1`, disposed) |
//! | `process` | one whole process, spawn to exit, running `return 1` |
//! | `seq_noop` | 5 000 sequential `await tools.noop({})` in one program |
//! | `seq_read` | 5 000 sequential `await tools.read_file({path: "tiny.txt"})` |
//! | `all_sleep` | 3 programs, each `Promise.all` of 1 000 `tools.sleep({ms: 1})` |
//! | `big_in` | a program building a 1 MB value and passing it to `tools.big_in` |
//! | `big_out` | a program receiving a 1 MB value from `tools.big_out` |
//!
//! Setup is not timed for the peers (their context is built before the clock starts); a
//! codemode program always starts its own engine, so codemode's figures include one cold
//! start per program (about 1 ms). The column "codemode, warm engine" is `run_code` with an
//! [`EnginePool`], for `cold_start` only: each run takes an engine built ahead (the clock
//! stops while the pool builds the next one).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use codemode::run_code::{EnginePool, Limits, RunCodeConfig, run_code_tool};
use codemode::{FileTools, Registry, Tool};
use serde_json::{Value, json};

/// Items in the 1 MB value: `{id, name, tags, score}` each, 1 020 971 bytes of JSON.
const BIG_ITEMS: usize = 14_000;

/// The workloads, in table order: (name, n per sample, what one iteration is).
const WORKLOADS: &[(&str, u64, &str)] = &[
    ("cold_start", 20, "µs per engine"),
    ("process", 1, "ms per process"),
    ("seq_noop", 5_000, "µs per call"),
    ("seq_read", 5_000, "µs per call"),
    ("all_sleep", 3, "ms per program"),
    ("big_in", 1, "ms per program"),
    ("big_out", 1, "ms per program"),
];

/// The 1 MB value, built the same way in the guest programs and by the peers.
fn big_value() -> Value {
    let items: Vec<Value> = (0..BIG_ITEMS)
        .map(|i| json!({"id": i, "name": format!("item-{i}"), "tags": ["a", "b"], "score": i as f64 / 7.0}))
        .collect();
    json!({ "items": items })
}

/// The program a workload runs once, and the result it must return.
fn program(workload: &str, n: u64) -> (String, Value) {
    match workload {
        "cold_start" | "process" => ("return 1".to_owned(), json!(1)),
        "seq_noop" => (
            format!("for (let i = 0; i < {n}; i++) await tools.noop({{}}); return {n}"),
            json!(n),
        ),
        "seq_read" => (
            format!(
                "for (let i = 0; i < {n}; i++) {{ const r = await tools.read_file({{path: 'tiny.txt'}}); if (r.content.length !== 6) throw new Error('bad read'); }} return {n}"
            ),
            json!(n),
        ),
        "all_sleep" => (
            "await Promise.all(Array.from({length: 1000}, () => tools.sleep({ms: 1}))); return 1000"
                .to_owned(),
            json!(1000),
        ),
        "big_in" => (
            format!(
                "const items = []; for (let i = 0; i < {BIG_ITEMS}; i++) items.push({{id: i, name: 'item-' + i, tags: ['a', 'b'], score: i / 7}}); return await tools.big_in({{items}})"
            ),
            json!(BIG_ITEMS),
        ),
        "big_out" => (
            "const v = await tools.big_out({}); return v.items.length + v.items[5].tags.length"
                .to_owned(),
            json!(BIG_ITEMS + 2),
        ),
        other => unreachable!("no workload {other}"),
    }
}

/// codemode in process: `run_code` over the five host tools, `read_file` the built-in one.
struct Codemode {
    registry: Registry,
    /// The same tools, `run_code` keeping warm engines (for `cold_start` only).
    warm: Registry,
    pool: EnginePool,
    rt: tokio::runtime::Runtime,
    binary: PathBuf,
}

impl Codemode {
    fn new(root: &Path) -> Codemode {
        let pool = EnginePool::new(2);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let warm = Codemode::registry(root, RunCodeConfig::default().engine_pool(pool.clone()));
        // The first run tells the pool which tools to build for.
        rt.block_on(warm.call("run_code", json!({"code": "return 1"})));
        Codemode {
            registry: Codemode::registry(root, RunCodeConfig::default()),
            warm,
            pool,
            rt,
            binary: PathBuf::from(env!("CARGO_BIN_EXE_codemode")),
        }
    }

    fn registry(root: &Path, config: RunCodeConfig) -> Registry {
        let registry = Registry::new();
        let limits = Limits::default()
            .max_tool_calls(1_000_000)
            .max_in_flight(20_000);
        let tools = [
            Tool::builder("noop").execute(|_a, _e| async { Ok(Value::Null) }),
            Tool::builder("sleep").execute(|a, _e| async move {
                let ms = a.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(Value::Null)
            }),
            Tool::builder("big_in").execute(|a, _e| async move {
                let items = a.get("items").and_then(Value::as_array).map_or(0, Vec::len);
                Ok(json!(items))
            }),
            Tool::builder("big_out").execute({
                let big = big_value();
                move |_a, _e| {
                    let big = big.clone();
                    async move { Ok(big) }
                }
            }),
        ];
        for tool in tools {
            registry.register(tool.build().unwrap()).unwrap().forget();
        }
        registry
            .register(run_code_tool(config.limits(limits)))
            .unwrap()
            .forget();
        for handle in FileTools::new(root).unwrap().register(&registry).unwrap() {
            // Only read_file is used; the others are registered as `codemode run` does.
            handle.forget();
        }
        registry
    }

    /// One `cold_start` sample on warm engines: the clock runs only while each run does
    /// (between runs, it waits for the pool to have an engine ready again).
    fn warm_sample(&self, n: u64) -> Result<Duration, String> {
        self.rt.block_on(async {
            let mut total = Duration::ZERO;
            for _ in 0..n {
                while self.pool.stats().idle == 0 {
                    tokio::time::sleep(Duration::from_micros(100)).await;
                }
                let started = Instant::now();
                let outcome = self
                    .warm
                    .call("run_code", json!({"code": "return 1"}))
                    .await;
                total += started.elapsed();
                let value = outcome.result().map_err(|e| e.message().to_owned())?;
                if value["result"] != 1 {
                    return Err(format!("warm: unexpected {value}"));
                }
            }
            Ok(total)
        })
    }

    /// One sample of `workload`: the total time of its `n` iterations.
    fn sample(&self, workload: &str, n: u64, dir: &Path) -> Result<Duration, String> {
        if workload == "process" {
            let file = dir.join("one.js");
            std::fs::write(&file, "return 1").map_err(|e| e.to_string())?;
            let mut command = Command::new(&self.binary);
            command.arg("run").arg(&file).arg("--root").arg(dir);
            return spawn_to_exit(command, "result: 1");
        }
        let (program, expected) = program(workload, n);
        let runs = match workload {
            "cold_start" | "all_sleep" | "big_in" | "big_out" => n,
            _ => 1,
        };
        let started = Instant::now();
        self.rt.block_on(async {
            for _ in 0..runs {
                let outcome = self
                    .registry
                    .call("run_code", json!({ "code": program }))
                    .await;
                let value = outcome.result().map_err(|e| e.message().to_owned())?;
                if value["result"] != expected {
                    return Err(format!("{workload}: unexpected {value}"));
                }
            }
            Ok(())
        })?;
        Ok(started.elapsed())
    }
}

/// Runs `command` to its end with its output read; fails unless it exits 0 and its
/// standard output contains `expect`.
fn spawn_to_exit(mut command: Command, expect: &str) -> Result<Duration, String> {
    let started = Instant::now();
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !stdout.contains(expect) {
        return Err(format!(
            "{:?} ended {}: {stdout}{}",
            command.get_program(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(elapsed)
}

/// The Node worker running the peers.
struct Peers {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    dir: PathBuf,
    /// (name as listed, available, why not, name to request it by)
    runtimes: Vec<(String, bool, Option<String>, String)>,
    versions: Value,
}

impl Peers {
    fn start(dir: &Path) -> Peers {
        let mut child = node()
            .arg("peer.mjs")
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node runs (Node 20 on PATH)");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let ready: Value = serde_json::from_str(&line).expect("peer.mjs says it is ready");
        let runtimes = ready["runtimes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let name = r["name"].as_str().unwrap().to_owned();
                let short = name.split(' ').next().unwrap().to_owned();
                (
                    name,
                    r["available"] == true,
                    r["why"].as_str().map(str::to_owned),
                    short,
                )
            })
            .collect();
        Peers {
            _child: child,
            stdin,
            stdout,
            dir: dir.to_owned(),
            runtimes,
            versions: ready["versions"].clone(),
        }
    }

    fn sample(
        &mut self,
        runtime: &str,
        workload: &str,
        n: u64,
        root: &Path,
    ) -> Result<Duration, String> {
        if workload == "process" {
            let mut command = node();
            command
                .arg("oneshot.mjs")
                .arg(runtime)
                .arg(root)
                .current_dir(&self.dir);
            return spawn_to_exit(command, "1");
        }
        let request = json!({"runtime": runtime, "workload": workload, "n": n, "root": root});
        writeln!(self.stdin, "{request}").map_err(|e| e.to_string())?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let answer: Value = serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))?;
        match answer["ns"].as_f64() {
            Some(ns) if answer["ok"] == true => Ok(Duration::from_nanos(ns as u64)),
            _ => Err(answer["error"].as_str().unwrap_or(&line).to_owned()),
        }
    }
}

/// `node`, without `NODE_EXTRA_CA_CERTS` (reading a CA bundle adds ~90 ms to every start
/// on machines that set it, and no workload uses TLS).
fn node() -> Command {
    let mut command = Command::new("node");
    command.env_remove("NODE_EXTRA_CA_CERTS");
    command
}

/// Installs `benches/peers/node_modules` from the lock file when it changed (`npm ci`).
fn install(dir: &Path) {
    let lock =
        std::fs::read(dir.join("package-lock.json")).expect("benches/peers/package-lock.json");
    let stamp = dir.join("node_modules/.codemode-installed-lock");
    if std::fs::read(&stamp).ok().as_deref() == Some(lock.as_slice()) {
        return;
    }
    eprintln!(
        "peers: npm ci in {} (once; isolated-vm compiles for minutes)",
        dir.display()
    );
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(dir)
        .status()
        .expect("npm runs (Node 20 and npm on PATH)");
    assert!(status.success(), "`npm ci` in {} failed", dir.display());
    std::fs::write(&stamp, &lock).unwrap();
}

fn median(samples: &mut [f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_by(f64::total_cmp);
    let mid = samples.len() / 2;
    Some(if samples.len().is_multiple_of(2) {
        (samples[mid - 1] + samples[mid]) / 2.0
    } else {
        samples[mid]
    })
}

/// The per-iteration figure of a sample, in the workload's unit.
fn per_iteration(workload: &str, n: u64, total: Duration) -> f64 {
    let each = total.as_secs_f64() / n as f64;
    match workload {
        "cold_start" | "seq_noop" | "seq_read" => each * 1e6,
        _ => each * 1e3,
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores, {}", std::env::consts::OS)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .map_or(5, |r| r.parse().expect("--rounds N"));
    let markdown = args.iter().any(|a| a == "--markdown");
    // `cargo bench` with a filter runs every bench binary: run only when asked for by name
    // or with no filter at all.
    if let Some(filter) = args
        .iter()
        .skip(1)
        .find(|a| !a.starts_with("--") && a.parse::<usize>().is_err())
        && !"peers".contains(filter.as_str())
    {
        return;
    }

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers");
    install(&dir);
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("tiny.txt"), "hello\n").unwrap();
    let root_path = root.path().canonicalize().unwrap();

    let codemode = Codemode::new(&root_path);
    let mut peers = Peers::start(&dir);
    let mut columns: Vec<(String, Option<String>)> = vec![
        ("codemode".to_owned(), None),
        ("codemode, warm engine".to_owned(), None),
    ];
    for (name, available, why, _) in &peers.runtimes {
        columns.push((
            name.clone(),
            (!available).then(|| why.clone().unwrap_or_default()),
        ));
    }
    // samples[workload][column]
    let mut samples = vec![vec![Vec::<f64>::new(); columns.len()]; WORKLOADS.len()];
    let mut failures: Vec<String> = Vec::new();

    // Round 0 warms every runtime up (QuickJS-wasm takes a second or two to reach speed)
    // and is not counted; then the rounds, each runtime in turn, the order rotating.
    for round in 0..=rounds {
        eprintln!(
            "peers: round {round} of {rounds}{}",
            if round == 0 { " (warm-up)" } else { "" }
        );
        for (w, &(workload, n, _)) in WORKLOADS.iter().enumerate() {
            for k in 0..columns.len() {
                let c = (k + round) % columns.len();
                if columns[c].1.is_some() {
                    continue;
                }
                let result = match c {
                    0 => codemode.sample(workload, n, &root_path),
                    // Warm engines change only how a run starts.
                    1 if workload == "cold_start" => codemode.warm_sample(n),
                    1 => continue,
                    _ => {
                        let short = peers.runtimes[c - 2].3.clone();
                        peers.sample(&short, workload, n, &root_path)
                    }
                };
                match result {
                    Ok(total) if round > 0 => samples[w][c].push(per_iteration(workload, n, total)),
                    Ok(_) => {}
                    Err(e) => failures.push(format!("{} {workload}: {e}", columns[c].0)),
                }
            }
        }
    }

    let date = Command::new("date")
        .arg("-u")
        .arg("+%Y-%m-%d")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    println!(
        "codemode beside the field: medians of {rounds} interleaved rounds; {}; {date}; node {}",
        machine(),
        peers.versions["node"].as_str().unwrap_or("?")
    );
    println!(
        "(each cell: the median per iteration; in brackets, how many times codemode's figure it is: above 1 means codemode is faster)\n"
    );
    let mut header = vec!["workload".to_owned(), "unit".to_owned()];
    header.extend(columns.iter().map(|c| c.0.clone()));
    let mut rows = vec![header];
    for (w, &(workload, _, unit)) in WORKLOADS.iter().enumerate() {
        let medians: Vec<Option<f64>> = samples[w].iter_mut().map(|s| median(s)).collect();
        let mut row = vec![workload.to_owned(), unit.to_owned()];
        for (c, m) in medians.iter().enumerate() {
            row.push(match (m, medians[0]) {
                (None, _) => "–".to_owned(),
                (Some(m), _) if c == 0 => format!("{m:.1}"),
                (Some(m), Some(ours)) => format!("{m:.1} ({:.2}×)", m / ours),
                (Some(m), None) => format!("{m:.1}"),
            });
        }
        rows.push(row);
    }
    print_table(&rows, markdown);
    for (name, why) in &columns {
        if let Some(why) = why {
            println!("\n{name}: not available here: {why}");
        }
    }
    if !failures.is_empty() {
        println!("\nfailed samples:");
        for f in &failures {
            println!("  {f}");
        }
    }
    println!("\nversions: {}", peers.versions);
}

fn print_table(rows: &[Vec<String>], markdown: bool) {
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        if markdown {
            println!("| {} |", cells.join(" | "));
            if i == 0 {
                let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
                println!("| {} |", rule.join(" | "));
            }
        } else {
            println!("{}", cells.join("  "));
        }
    }
}
