//! Helpers shared by the tests.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use codemode::cards::CallCard;
use codemode::run_code::{Limits, RunCodeConfig, SpillConfig, run_code_tool};
use codemode::schema::{ParameterSchema, ValueSchema};
use codemode::{
    Arguments, Content, Exec, FileTools, Registry, Tool, ToolBuilder, ToolError, ToolHandle,
    Visibility,
};
use serde_json::{Value, json};

/// A registry with `run_code` (with `limits`) and the given tools.
pub struct Harness {
    pub registry: Registry,
    pub handles: Vec<ToolHandle>,
    /// The spill folder of this harness's `run_code`.
    pub spill: tempfile::TempDir,
}

impl Harness {
    pub fn new(limits: Limits) -> Harness {
        Harness::with_config(RunCodeConfig::default().limits(limits))
    }

    /// A harness whose `run_code` has `config`, spilling into a fresh temporary folder.
    pub fn with_config(config: RunCodeConfig) -> Harness {
        let spill = tempfile::tempdir().unwrap();
        let config = config.spill(Some(SpillConfig::new(spill.path())));
        Harness::registering(config, spill)
    }

    /// A harness whose `run_code` has `config` with spilling off.
    pub fn without_spill(config: RunCodeConfig) -> Harness {
        Harness::registering(config.spill(None), tempfile::tempdir().unwrap())
    }

    fn registering(config: RunCodeConfig, spill: tempfile::TempDir) -> Harness {
        let registry = Registry::new();
        let handle = registry.register(run_code_tool(config)).unwrap();
        Harness {
            registry,
            handles: vec![handle],
            spill,
        }
    }

    /// A harness with the file tools over `root` and the default limits (reading big
    /// files takes a while in a debug build).
    pub fn with_files(root: &Path) -> Harness {
        let mut h = Harness::new(Limits::default());
        h.handles
            .extend(FileTools::new(root).unwrap().register(&h.registry).unwrap());
        h
    }

    pub fn add(&mut self, tool: Tool) -> &mut Self {
        self.handles.push(self.registry.register(tool).unwrap());
        self
    }

    /// Runs a program; returns the canonical value of `run_code`.
    pub async fn run(&self, code: &str) -> Value {
        let outcome = self
            .registry
            .call("run_code", json!({ "code": code }))
            .await;
        outcome.into_result().expect("run_code itself never fails")
    }

    /// Runs a program that must end ok; returns its result.
    pub async fn ok(&self, code: &str) -> Value {
        let v = self.run(code).await;
        assert_eq!(v["status"], "ok", "program failed: {v:#}");
        v.get("result").cloned().unwrap_or(Value::Null)
    }

    /// Runs a program that must end in error; returns the error object.
    pub async fn err(&self, code: &str) -> Value {
        let v = self.run(code).await;
        assert_eq!(v["status"], "error", "program succeeded: {v:#}");
        v["error"].clone()
    }
}

/// The text of each console line of a `run_code` output, in order.
pub fn log_texts(output: &Value) -> Vec<&str> {
    output["logs"]
        .as_array()
        .expect("the output has logs")
        .iter()
        .map(|l| l["text"].as_str().expect("a log line has text"))
        .collect()
}

/// Limits with a short timeout, for tests of failure paths.
pub fn fast_limits() -> Limits {
    Limits::default().timeout(Duration::from_millis(2_000))
}

/// A tool that echoes its arguments.
pub fn echo_tool() -> Tool {
    test_tool("echo")
        .description("Echo the arguments back.")
        .execute(|args, _exec| async move { Ok((*args).clone()) })
}

/// A tool for a test, named `name`: set its options, then give its body with
/// [`TestTool::execute`] or a fixed value with [`TestTool::returns`], which build it.
///
/// Tests of the builder itself (definition errors, defaults) use `Tool::builder`.
pub fn test_tool(name: &str) -> TestTool {
    TestTool(Tool::builder(name))
}

/// A [`ToolBuilder`] whose last step builds the tool (see [`test_tool`]); the options are
/// the builder's own.
#[must_use]
pub struct TestTool(ToolBuilder);

impl TestTool {
    pub fn description(self, text: &str) -> Self {
        TestTool(self.0.description(text))
    }

    pub fn parameters(self, schema: ParameterSchema) -> Self {
        TestTool(self.0.parameters(schema))
    }

    pub fn output(self, schema: ValueSchema) -> Self {
        TestTool(self.0.output(schema))
    }

    pub fn visibility(self, visibility: Visibility) -> Self {
        TestTool(self.0.visibility(visibility))
    }

    pub fn render(
        self,
        f: impl Fn(&Value, &Value) -> Vec<Content> + Send + Sync + 'static,
    ) -> Self {
        TestTool(self.0.render(f))
    }

    pub fn presentation_meta(
        self,
        f: impl Fn(&Value, &Value) -> Option<Value> + Send + Sync + 'static,
    ) -> Self {
        TestTool(self.0.presentation_meta(f))
    }

    pub fn present_call(self, f: impl Fn(&Value) -> CallCard + Send + Sync + 'static) -> Self {
        TestTool(self.0.present_call(f))
    }

    /// The tool, with `body` (`|args, exec| async move { … }`) as its execute.
    ///
    /// # Panics
    /// When the definition is refused (a schema with a definition error).
    pub fn execute<F, Fut>(self, body: F) -> Tool
    where
        F: Fn(Arguments, Exec) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        self.0
            .execute(body)
            .build()
            .unwrap_or_else(|e| panic!("a test tool's definition was refused: {e}"))
    }

    /// The tool, returning `value` from every call.
    pub fn returns(self, value: Value) -> Tool {
        self.execute(move |_args, _exec| {
            let value = value.clone();
            async move { Ok(value) }
        })
    }
}

/// `tests/node/node_modules`, installed with `npm ci` from the pinned lock file the first
/// time a test needs it (and again whenever the lock file changes).
///
/// # Panics
/// When Node or npm is missing, or `npm ci` fails: the message says what to do.
pub fn node_modules() -> &'static Path {
    static READY: std::sync::OnceLock<Result<std::path::PathBuf, String>> =
        std::sync::OnceLock::new();
    match READY.get_or_init(install_node_modules) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

fn install_node_modules() -> Result<std::path::PathBuf, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node");
    let lock = std::fs::read(dir.join("package-lock.json")).map_err(|e| e.to_string())?;
    let modules = dir.join("node_modules");
    let stamp = modules.join(".codemode-installed-lock");
    if std::fs::read(&stamp).ok().as_deref() == Some(lock.as_slice()) {
        return Ok(modules);
    }
    let out = std::process::Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(&dir)
        .output()
        .map_err(|e| {
            format!("these tests need Node 20 and npm on PATH (running `npm ci` in tests/node failed: {e})")
        })?;
    if !out.status.success() {
        return Err(format!(
            "`npm ci` in tests/node failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::write(&stamp, &lock).map_err(|e| e.to_string())?;
    Ok(modules)
}

/// Runs the real TypeScript compiler (`tsc --noEmit --strict`, lib `es2022` without DOM)
/// over `files` (name, text) in a fresh folder; returns whether it passed and its
/// diagnostics (`name(line,col): error TSxxxx: …`, one per line).
pub fn tsc(files: &[(&str, &str)]) -> (bool, String) {
    let modules = node_modules();
    let _heavy = heavy();
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let names: Vec<&str> = files.iter().map(|f| f.0).collect();
    let config = json!({
        "compilerOptions": {
            "strict": true, "noEmit": true, "target": "es2022", "lib": ["es2022"],
            "types": [], "skipLibCheck": false, "noUnusedLocals": false
        },
        "files": names,
    });
    std::fs::write(dir.path().join("tsconfig.json"), config.to_string()).unwrap();
    let out = std::process::Command::new("node")
        .arg(modules.join("typescript/bin/tsc"))
        .args(["-p", ".", "--pretty", "false"])
        .current_dir(dir.path())
        .output()
        .expect("node runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Runs the built `codemode` with `args` from this repository's root, as the README does;
/// the command must exit 0 and print JSON (pass `--json`), which is returned.
pub fn codemode_in_repo(args: &[&str]) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// Held by tests that load both cores for seconds (the TypeScript compiler) and by the
/// tests that time programs against their deadline, so the ones do not skew the others.
pub fn heavy() -> std::sync::MutexGuard<'static, ()> {
    static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    HEAVY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Processes whose command line holds `marker` (a test's own mark on the commands it starts).
/// [`processes_with`] once it is 0, or after `within`: a killed process leaves `/proc` only
/// once the kernel has run its exit, a moment after the signal.
pub fn processes_left(marker: &str, within: std::time::Duration) -> usize {
    let deadline = std::time::Instant::now() + within;
    loop {
        let left = processes_with(marker);
        if left == 0 || std::time::Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

pub fn processes_with(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .count()
}
