//! The limits of a run, shared by the subcommands that run programs (`run`, `mcp`).

use std::time::Duration;

use clap::Args;
use codemode::run_code::{Limits, RunCodeConfig};

/// How programs run: the flags `codemode run` and `codemode mcp` share.
#[derive(Debug, Args)]
pub(crate) struct RunLimits {
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
    /// Stack of the engine, in bytes (suffixes as for --memory), from 64KiB to 16MiB: deep
    /// recursion past it is a catchable RangeError; 8MiB is about 12 000 levels of a simple
    /// recursive function.
    #[arg(long, value_name = "SIZE", value_parser = parse_stack, default_value = "8MiB")]
    stack: usize,
    /// Characters of output (logs and result) shown before the rest is cut and spilled.
    #[arg(long, value_name = "CHARS", default_value_t = 20_000)]
    output_cap: usize,
}

impl RunLimits {
    /// The `run_code` configuration of these flags, spilling nowhere yet (the caller sets
    /// where spills go). `--timeout` is both the default and the most a call's
    /// `timeout_ms` may ask for.
    pub(crate) fn run_code_config(&self) -> RunCodeConfig {
        let limits = Limits::default()
            .timeout(Duration::from_millis(self.timeout))
            .memory(self.memory)
            .stack(self.stack)
            .max_in_flight(self.max_in_flight as usize)
            .max_tool_calls(self.max_tool_calls as usize);
        RunCodeConfig::default()
            .limits(limits)
            .max_timeout(Duration::from_millis(self.timeout))
            .output_cap(self.output_cap)
            .spill(None)
    }
}

impl RunLimits {
    /// Bytes of stack for the thread a program runs on ([`Limits::thread_stack`]).
    pub(crate) fn thread_stack(&self) -> usize {
        self.run_code_config().limits.thread_stack()
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

/// Parses a stack limit: from 64KiB to 16MiB (the most QuickJS takes as a limit).
fn parse_stack(text: &str) -> Result<usize, String> {
    let bytes = parse_size(text)?;
    if !(64 << 10..=16 << 20).contains(&bytes) {
        return Err(format!(
            "{text:?} is out of range: the engine's stack is from 64KiB to 16MiB"
        ));
    }
    Ok(bytes)
}

/// Parses `64MiB`, `512k`, `1G`, `1048576`.
fn parse_size(text: &str) -> Result<usize, String> {
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
