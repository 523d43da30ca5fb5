//! A host that embeds codemode and lets a model's long program outlive its call.
//!
//! `cargo run --example host_jobs`
//!
//! The host registers `run_code` and the job tools, starts a program with
//! `run_in_background`, follows it with `job_output` as a model would, hands the notice the
//! job left for the conversation to its next model request, and shuts the jobs down on
//! exit.

use std::time::Duration;

use codemode::Registry;
use codemode::jobs::register_job_tools;
use codemode::run_code::{RunCodeConfig, run_code_tool};
use serde_json::{Value, json};

#[tokio::main]
async fn main() {
    let registry = Registry::new();
    // Past 2 s a foreground run would hand control back as a job too (`yield_after`).
    let config = RunCodeConfig::default().yield_after(Some(Duration::from_secs(2)));
    let _run_code = registry.register(run_code_tool(config)).unwrap();
    let _jobs = register_job_tools(&registry).unwrap();

    let program = "for (let i = 1; i <= 3; i++) { console.log(`step ${i}`); await new Promise(r => setTimeout(r, 300)); } return 'built'";
    let handle = registry
        .call(
            "run_code",
            json!({"code": program, "run_in_background": true}),
        )
        .await;
    println!("run_code: {}", handle.text());
    let id = handle.into_result().unwrap()["job_id"]
        .as_str()
        .unwrap()
        .to_owned();

    loop {
        let report = registry
            .call("job_output", json!({"job_id": id, "wait_ms": 1000}))
            .await;
        let value: Value = report.value().cloned().unwrap_or_default();
        print!("{}", value["output"].as_str().unwrap_or(""));
        if value["status"] != "running" {
            println!("job_output: {}", report.text());
            break;
        }
    }

    // What the job told the conversation, for the next model request.
    for note in registry.agent().take_injections() {
        println!(
            "context from {}: {}",
            note.source,
            note.content.as_text().unwrap_or("")
        );
    }

    // Nothing outlives the host: each job's cleanup, then its thread.
    registry.jobs().shutdown().await;
}
