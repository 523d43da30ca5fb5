//! Entry points for the criterion benches in `benches/` and the fuzz targets in
//! `tests/fuzz/`: not part of the public API.
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

/// Registers the tools of an MCP `tools/list` answer (`{"tools": [{name, description,
/// inputSchema, outputSchema?}]}`) in `registry` as `SERVER.tool`, each answering with its
/// arguments: the tool sets of the MCP fixtures, for figures and tests of what the model
/// reads. Panics on a schema the importer refuses.
pub fn register_listed_tools(
    registry: &crate::Registry,
    server: &str,
    list: &serde_json::Value,
) -> Vec<crate::ToolHandle> {
    use crate::schema::{ParameterSchema, ValueSchema};
    let tools = list["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    tools
        .iter()
        .map(|t| {
            let name = format!("{server}.{}", t["name"].as_str().unwrap_or_default());
            let mut b = crate::Tool::builder(&name)
                .description(t["description"].as_str().unwrap_or_default())
                .parameters(
                    ParameterSchema::from_json_schema(&t["inputSchema"])
                        .unwrap_or_else(|e| panic!("{name}: {e}"))
                        .0,
                )
                .execute(|a, _e| async move { Ok((*a).clone()) });
            if let Some(out) = t.get("outputSchema") {
                b = b.output(
                    ValueSchema::from_json_schema(out)
                        .unwrap_or_else(|e| panic!("{name}: {e}"))
                        .0,
                );
            }
            registry
                .register(b.build().unwrap_or_else(|e| panic!("{name}: {e}")))
                .unwrap_or_else(|e| panic!("{name}: {e}"))
        })
        .collect()
}

/// Prepares a program's text as a run does (fences, parsing, program forms, TypeScript
/// stripping, positions): the JavaScript the engine would evaluate, or the error with its
/// position in the model's own source.
pub fn prepare_program(source: &str) -> Result<String, String> {
    crate::program::prepare(source)
        .map(|p| p.code)
        .map_err(|e| {
            let position = e
                .line
                .map(|l| format!(" at {l}:{}", e.column.unwrap_or(0)))
                .unwrap_or_default();
            format!("{}{position}: {}", e.kind.name(), e.message)
        })
}
