//! Helpers shared by the tests.

use std::path::Path;
use std::time::Duration;

use codemode::{
    FileTools, Limits, Registry, RunCodeConfig, SpillConfig, Tool, ToolHandle, run_code_tool,
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

    pub fn with_files(root: &Path) -> Harness {
        let mut h = Harness::new(fast_limits());
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

/// Limits with a short timeout, for tests of failure paths.
pub fn fast_limits() -> Limits {
    Limits::default().timeout(Duration::from_millis(2_000))
}

/// A tool that echoes its arguments.
pub fn echo_tool() -> Tool {
    Tool::builder("echo")
        .description("Echo the arguments back.")
        .execute(|args, _exec| async move { Ok((*args).clone()) })
        .build()
        .unwrap()
}
