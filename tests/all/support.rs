//! Helpers shared by the tests.

use std::path::Path;
use std::time::Duration;

use codemode::{FileTools, Limits, Registry, RunCodeConfig, Tool, ToolHandle, run_code_tool};
use serde_json::{Value, json};

/// A registry with `run_code` (with `limits`) and the given tools.
pub struct Harness {
    pub registry: Registry,
    pub handles: Vec<ToolHandle>,
}

impl Harness {
    pub fn new(limits: Limits) -> Harness {
        let registry = Registry::new();
        let handle = registry
            .register(run_code_tool(RunCodeConfig::default().limits(limits)))
            .unwrap();
        Harness {
            registry,
            handles: vec![handle],
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
