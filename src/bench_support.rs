//! Entry points for the criterion benches in `benches/`: not part of the public API.
//!
//! No engine type appears here: what drives the engine lives in the sandbox and is only
//! re-exported.

pub use crate::sandbox::bench::{Crossing, time_round_trips};

/// Presents a run's console `lines` and `result` as `run_code` does, capped to `cap`
/// characters: the lines stream through the console capture into a spill file in
/// `spill_dir` (when given), then the preview is built. Returns the canonical value.
pub fn cap_output(
    lines: Vec<String>,
    result: serde_json::Value,
    cap: usize,
    spill_dir: Option<&std::path::Path>,
) -> serde_json::Value {
    let config = crate::run_code::RunCodeConfig::default()
        .output_cap(cap)
        .spill(spill_dir.map(crate::run_code::SpillConfig::new));
    crate::run_code::present_lines(lines, result, &config)
}
