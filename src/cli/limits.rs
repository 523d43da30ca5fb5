//! The limits of a run, shared by the subcommands that run programs (`run`, `mcp`).

use std::time::Duration;

use clap::Args;
use codemode::run_code::{Limits, RunCodeConfig};

/// How programs run: the flags `codemode run` and `codemode mcp` share.
#[derive(Debug, Args)]
pub(crate) struct RunLimits {
    /// Wall-clock limit for the whole run: a duration with a unit (`30s`, `500ms`, `2m`,
    /// `1h`) or a number of milliseconds; at least 1ms. Default 30s (for `mcp`, a run that
    /// goes on as a background job gets 10 minutes unless this is given).
    #[arg(long, value_name = "TIME", value_parser = parse_timeout)]
    timeout: Option<u64>,
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
            .timeout(Duration::from_millis(self.timeout_ms()))
            .memory(self.memory)
            .stack(self.stack)
            .max_in_flight(self.max_in_flight as usize)
            .max_tool_calls(self.max_tool_calls as usize);
        RunCodeConfig::default()
            .limits(limits)
            .max_timeout(Duration::from_millis(self.timeout_ms()))
            .background_timeout(Duration::from_millis(self.timeout_ms()))
            .output_cap(self.output_cap)
            .spill(None)
    }
}

impl RunLimits {
    /// `--timeout` in milliseconds: 30 000 when not given.
    fn timeout_ms(&self) -> u64 {
        self.timeout.unwrap_or(30_000)
    }

    /// `--timeout`, when given.
    pub(crate) fn given_timeout(&self) -> Option<Duration> {
        self.timeout.map(Duration::from_millis)
    }

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
/// Parses a timeout: a duration of at least 1 ms, in milliseconds.
fn parse_timeout(text: &str) -> Result<u64, String> {
    match parse_duration_ms(text)? {
        0 => Err(format!("{text:?} is too short: at least 1ms")),
        ms => Ok(ms),
    }
}

/// Parses a duration into milliseconds: a number with a unit, `ms`, `s`, `m` (or `min`)
/// or `h`, a fraction allowed (`1.5s`); a bare number is milliseconds.
pub(crate) fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.' && c != '_')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: f64 = number.replace('_', "").parse().map_err(|_| {
        format!("{text:?} is not a duration: expected a number with a unit, like 30s or 500ms")
    })?;
    let factor: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" => 1.0,
        "s" | "sec" => 1_000.0,
        "m" | "min" => 60_000.0,
        "h" => 3_600_000.0,
        other => {
            return Err(format!(
                "unknown duration unit {other:?}: use ms, s, m or h"
            ));
        }
    };
    let ms = (n * factor).round();
    if !ms.is_finite() || ms > u64::MAX as f64 / 2.0 {
        return Err(format!("{text:?} is too long"));
    }
    Ok(ms as u64)
}

fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '_' && c != '.')
        .unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    // A decimal size (`1.5GiB`) as durations take one (`1.5s`), rounded to whole bytes.
    let n: f64 = digits.replace('_', "").parse().map_err(|_| {
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
    let bytes = (n * factor as f64).round();
    if !(bytes.is_finite() && bytes < usize::MAX as f64) {
        return Err(format!("{text:?} is too large"));
    }
    Ok(bytes as usize)
}

#[cfg(test)]
mod tests {
    use super::{parse_duration_ms, parse_size, parse_timeout};

    #[test]
    fn durations_take_units_or_milliseconds() {
        assert_eq!(parse_duration_ms("30s"), Ok(30_000));
        assert_eq!(parse_duration_ms("500ms"), Ok(500));
        assert_eq!(parse_duration_ms("1.5s"), Ok(1_500));
        assert_eq!(parse_duration_ms("2m"), Ok(120_000));
        assert_eq!(parse_duration_ms("1h"), Ok(3_600_000));
        assert_eq!(parse_duration_ms("250"), Ok(250));
        assert_eq!(parse_duration_ms("0"), Ok(0));
        assert_eq!(
            parse_duration_ms("3 weeks"),
            Err("unknown duration unit \"weeks\": use ms, s, m or h".into())
        );
        assert_eq!(
            parse_duration_ms("soon"),
            Err(
                "\"soon\" is not a duration: expected a number with a unit, like 30s or 500ms"
                    .into()
            )
        );
        assert_eq!(
            parse_timeout("0s"),
            Err("\"0s\" is too short: at least 1ms".into())
        );
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("512k"), Ok(512_000));
        assert_eq!(parse_size("1048576"), Ok(1_048_576));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("0.5k"), Ok(500));
        assert!(parse_size("1.5.2MiB").is_err());
        assert!(parse_size(".").is_err());
        assert_eq!(
            parse_size("99999999999999999999999GiB"),
            Err("\"99999999999999999999999GiB\" is too large".to_owned())
        );
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("").is_err());
    }
}
