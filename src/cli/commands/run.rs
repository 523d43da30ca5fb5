//! `codemode run PROGRAM|-`: run a program and print what the model would see.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use codemode::hooks::{Observer, Progress};
use codemode::run_code::{Limits, RunCodeConfig, SpillConfig, render_text, run_code_tool};
use codemode::{Exec, Outcome};
use serde_json::{Value, json};

use crate::cli::SetupError;
use crate::cli::setup::ToolOptions;

#[derive(Debug, Args)]
pub(crate) struct RunCommand {
    /// The program file (.ts or .js), or `-` to read it from standard input.
    program: String,
    #[command(flatten)]
    tools: ToolOptions,
    /// Print the canonical JSON value of the run instead of the model-facing text.
    #[arg(long)]
    json: bool,
    /// Wall-clock limit for the whole run, in milliseconds (at least 1).
    #[arg(long, value_name = "MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,
    /// Memory limit of the engine, in bytes; suffixes k, M, G (powers of 1000) and KiB,
    /// MiB, GiB (powers of 1024) are accepted, e.g. `64MiB`; at least 1MiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_memory, default_value = "64MiB")]
    memory: usize,
    /// Tool calls that may run at once; the rest wait their turn.
    #[arg(long, value_name = "N", default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    max_in_flight: u32,
    /// Tool calls one run may make; past it a call fails with a clear error.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    max_tool_calls: u32,
    /// Characters of output (logs and result) shown before the rest is cut and spilled.
    #[arg(long, value_name = "CHARS", default_value_t = 20_000)]
    output_cap: usize,
    /// Folder for spill files (the full output of a cut run). Default: `.codemode/spill`
    /// under `--root`, where the built-in `read_file` can read them.
    #[arg(long, value_name = "DIR")]
    spill_dir: Option<PathBuf>,
}

/// The text of a program: the file `program`, or standard input for `-`.
pub(crate) fn read_program(program: &str) -> Result<String, SetupError> {
    if program == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| SetupError(format!("reading the program from standard input: {e}")))?;
        Ok(s)
    } else {
        let path = PathBuf::from(program);
        std::fs::read_to_string(&path).map_err(|e| SetupError(format!("{}: {e}", path.display())))
    }
}

/// Parses a memory limit: a size of at least [`codemode::run_code::MIN_MEMORY`] bytes.
fn parse_memory(text: &str) -> Result<usize, String> {
    let bytes = parse_size(text)?;
    if bytes < codemode::run_code::MIN_MEMORY {
        return Err(format!(
            "{text:?} is too small: the engine needs at least 1MiB ({} bytes)",
            codemode::run_code::MIN_MEMORY
        ));
    }
    Ok(bytes)
}

/// Parses `64MiB`, `512k`, `1G`, `1048576`.
pub(crate) fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '_')
        .unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.replace('_', "").parse().map_err(|_| {
        format!("{text:?} is not a size: expected a number with an optional unit, like 64MiB")
    })?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "kib" | "ki" => 1 << 10,
        "mib" | "mi" => 1 << 20,
        "gib" | "gi" => 1 << 30,
        other => {
            return Err(format!(
                "unknown size unit {other:?}: use k, M, G, KiB, MiB or GiB"
            ));
        }
    };
    n.checked_mul(factor)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| format!("{text:?} is too large"))
}

impl RunCommand {
    pub(crate) async fn execute(self) -> Result<ExitCode, SetupError> {
        let code = read_program(&self.program)?;
        let tools = self.tools.load().await?;
        let limits = Limits::default()
            .timeout(Duration::from_millis(self.timeout))
            .memory(self.memory)
            .max_in_flight(self.max_in_flight as usize)
            .max_tool_calls(self.max_tool_calls as usize);
        let root = self
            .tools
            .root
            .canonicalize()
            .unwrap_or(self.tools.root.clone());
        if let Some(dir) = &self.spill_dir
            && dir.exists()
            && !dir.is_dir()
        {
            return Err(SetupError(format!(
                "--spill-dir {}: not a folder",
                dir.display()
            )));
        }
        let spill = match &self.spill_dir {
            Some(dir) => SpillConfig::new(dir).read_root(root),
            None => SpillConfig::under_root(root),
        };
        let config = RunCodeConfig::default()
            .limits(limits)
            .max_timeout(Duration::from_millis(self.timeout))
            .output_cap(self.output_cap)
            .spill(Some(spill));
        let _progress = tools.registry.observe(ProgressLines);
        let _run = tools
            .registry
            .register(run_code_tool(config))
            .map_err(|e| SetupError(e.to_string()))?;
        let outcome = tools
            .registry
            .call(codemode::run_code::RUN_CODE, json!({ "code": code }))
            .await;
        let value = match outcome.into_result() {
            Ok(v) => v,
            Err(e) => return Err(SetupError(e.message().to_owned())),
        };
        if self.json {
            crate::cli::out(&format!(
                "{}\n",
                serde_json::to_string_pretty(&value).unwrap_or_default()
            ));
        } else {
            crate::cli::out(&format!("{}\n", render_text(&value)));
        }
        let ok = value.get("status").and_then(Value::as_str) == Some("ok");
        Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    }
}

/// Prints each progress report of a running call on stderr, apart from the program's
/// output: `codemode: progress: everything.trigger-long-running-operation 2/5 step 2`.
struct ProgressLines;

impl Observer for ProgressLines {
    fn observe(&self, _exec: &Exec, _outcome: &Outcome) {}

    fn progress(&self, exec: &Exec, progress: &Progress) {
        let number = |n: f64| {
            if n.fract() == 0.0 && n.abs() < 1e15 {
                format!("{}", n as i64)
            } else {
                format!("{n}")
            }
        };
        let mut line = format!(
            "codemode: progress: {} {}",
            exec.name(),
            number(progress.progress)
        );
        if let Some(total) = progress.total {
            line.push('/');
            line.push_str(&number(total));
        }
        if let Some(message) = progress.message.as_deref().filter(|m| !m.is_empty()) {
            line.push(' ');
            line.push_str(message);
        }
        eprintln!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("512k"), Ok(512_000));
        assert_eq!(parse_size("1048576"), Ok(1_048_576));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("").is_err());
    }
}
