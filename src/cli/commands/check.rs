//! `codemode check PROGRAM|-`: a static check of a program against the tools, without Node;
//! with `--tsc`, also the real TypeScript compiler when it is installed.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Args;
use codemode::check::{check_program, typescript_program};
use codemode::declarations::{Layout, SANDBOX_GLOBALS, declarations};

use crate::cli::SetupError;
use crate::cli::commands::run::read_program;
use crate::cli::setup::ToolOptions;

#[derive(Debug, Args)]
pub(crate) struct CheckCommand {
    /// The program file (.ts or .js), or `-` to read it from standard input.
    program: String,
    #[command(flatten)]
    tools: ToolOptions,
    /// Also run the TypeScript compiler (`tsc --strict`) over the program and the tools'
    /// declarations, when `tsc` is on PATH or in a `node_modules/.bin` of the current
    /// folder or one above it.
    #[arg(long)]
    tsc: bool,
}

impl CheckCommand {
    pub(crate) async fn execute(self) -> Result<ExitCode, SetupError> {
        let source = read_program(&self.program)?;
        let tools = self.tools.load(true).await?;
        let shown = if self.program == "-" {
            "<stdin>"
        } else {
            self.program.as_str()
        };
        let diagnostics = check_program(&source, &tools.registry);
        for d in &diagnostics {
            crate::cli::out(&format!("{shown}:{}:{}: {}\n", d.line, d.column, d.message));
        }
        let mut failed = !diagnostics.is_empty();
        if self.tsc {
            match find_tsc() {
                None => eprintln!(
                    "codemode check: --tsc: the TypeScript compiler (tsc) is not installed (not on PATH, \
                     no node_modules/.bin/tsc here or above); only the static check ran. \
                     Install it with `npm install typescript`."
                ),
                Some(tsc) => {
                    let decls = declarations(&tools.registry, Layout::Pretty)
                        .map_err(|e| SetupError(e.to_string()))?;
                    let found = run_tsc(&tsc, &decls, &source, shown)?;
                    failed |= !found.is_empty();
                    for line in found {
                        crate::cli::out(&format!("{line}\n"));
                    }
                }
            }
        }
        Ok(if failed {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        })
    }
}

/// `tsc` on PATH, or in `node_modules/.bin` of the current folder or an ancestor.
fn find_tsc() -> Option<PathBuf> {
    let exe = if cfg!(windows) { "tsc.cmd" } else { "tsc" };
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            let candidate = dir.join("node_modules").join(".bin").join(exe);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(exe))
            .find(|p| p.is_file())
    })
}

/// Runs `tsc` over the program beside the declarations; returns its diagnostics about the
/// program, positioned in the program's own text (`PROGRAM:line:col: TSxxxx: message`).
fn run_tsc(tsc: &Path, decls: &str, source: &str, shown: &str) -> Result<Vec<String>, SetupError> {
    let setup = |e: std::io::Error| SetupError(format!("--tsc: {e}"));
    let dir = tempfile::tempdir().map_err(setup)?;
    let program = typescript_program(source);
    std::fs::write(dir.path().join("tools.d.ts"), decls).map_err(setup)?;
    std::fs::write(dir.path().join("globals.d.ts"), SANDBOX_GLOBALS).map_err(setup)?;
    std::fs::write(dir.path().join("program.ts"), program.text()).map_err(setup)?;
    let config = serde_json::json!({
        "compilerOptions": {"strict": true, "noEmit": true, "target": "es2022", "lib": ["es2022"], "types": []},
        "files": ["tools.d.ts", "globals.d.ts", "program.ts"],
    });
    std::fs::write(dir.path().join("tsconfig.json"), config.to_string()).map_err(setup)?;
    let out = Command::new(tsc)
        .args(["-p", ".", "--pretty", "false"])
        .current_dir(dir.path())
        .output()
        .map_err(|e| SetupError(format!("--tsc: running {}: {e}", tsc.display())))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut found = Vec::new();
    for line in stdout.lines() {
        // program.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.
        let Some(rest) = line.strip_prefix("program.ts(") else {
            if line.starts_with("tools.d.ts(") || line.starts_with("globals.d.ts(") {
                found.push(format!("{shown}: the tools' declarations: {line}"));
            }
            continue;
        };
        let Some((pos, message)) = rest.split_once("): ") else {
            continue;
        };
        let (l, c) = pos.split_once(',').unwrap_or((pos, "1"));
        let (Ok(l), Ok(c)) = (l.parse::<u32>(), c.parse::<u32>()) else {
            continue;
        };
        let (l, c) = program.original_position(l, c);
        let message = message.strip_prefix("error ").unwrap_or(message);
        found.push(format!("{shown}:{l}:{c}: {message}"));
    }
    if !out.status.success() && found.is_empty() {
        found.push(format!(
            "{shown}: tsc failed: {}{}",
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(found)
}
