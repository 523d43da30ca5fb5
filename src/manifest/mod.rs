//! Command-backed tools from a JSON manifest: any program that reads
//! JSON on stdin and writes JSON on stdout becomes a tool.
//!
//! ```json
//! {"tools": [{"name": "echo", "description": "Echo the arguments back.",
//!             "parameters": {"text": {"type": "string", "required": true}},
//!             "output": {"type": "object", "properties": {"text": {"type": "string"}},
//!                        "additionalProperties": false},
//!             "command": ["python3", "echo.py"], "timeout_ms": 5000,
//!             "env": {"MODE": "fast"}}]}
//! ```
//!
//! A tool entry has `name` and `command` (required), `description`, either `parameters`
//! (our nodes, see `codemode::schema`) or `input_schema` (JSON Schema, imported), either `output` (a
//! node) or `output_schema` (JSON Schema; with neither, the output is any JSON value),
//! `timeout_ms` (default [`DEFAULT_TIMEOUT_MS`]), `env` (strings), `run_in_background`
//! (`true` lets a call run as a background job) and `annotations` (MCP's hints,
//! `{"readOnlyHint": true}`). Any other key is an
//! error, so a typo cannot silently drop a setting. How a call runs is in [`process`].

mod process;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

pub use self::process::{ENV_ALLOW_LIST, MAX_STDERR_SHOWN, MAX_STDOUT_BYTES};
use crate::dispatch::{Registry, Tool, ToolHandle};
use crate::schema::{DefinitionError, ImportWarning, ParameterSchema, ValueSchema};

/// The timeout of a call when the tool's entry has no `timeout_ms`: 30 000 ms.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// A manifest that could not be loaded or registered: the file, where in it, and what.
/// Displays as `file: path: message`, or `file: message` for the whole file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
pub struct ManifestError {
    /// The manifest's file name as given.
    pub file: String,
    /// Where in the manifest (`tools[3].parameters.x.type`); empty for the whole file.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// One command-backed tool, as the manifest defines it.
#[derive(Clone, Debug)]
pub struct CommandTool {
    /// The tool's name.
    pub name: String,
    /// What the model reads about it.
    pub description: String,
    /// Its arguments.
    pub parameters: ParameterSchema,
    /// Its output.
    pub output: ValueSchema,
    /// The program and its arguments; a relative program path with a `/` is resolved
    /// against the manifest's folder, a bare name on `PATH`.
    pub command: Vec<String>,
    /// Variables added to the allowed environment ([`ENV_ALLOW_LIST`]).
    pub env: BTreeMap<String, String>,
    /// How long one call may run.
    pub timeout: Duration,
    /// The folder the command runs in: the manifest's.
    pub dir: PathBuf,
    /// What the import of its `input_schema`/`output_schema` kept for display only (not
    /// enforced), with paths from the manifest (`tools[0].input_schema.x-order`).
    pub warnings: Vec<ImportWarning>,
    /// Whether a call may ask to run as a background job (`"run_in_background": true` in
    /// the entry; see [`ToolBuilder::run_in_background`](crate::ToolBuilder::run_in_background)).
    /// The job's command keeps `timeout`.
    pub run_in_background: bool,
    /// What the command does to the world, from the entry's `annotations` (MCP's names:
    /// `readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`).
    pub annotations: crate::ToolAnnotations,
}

/// The tools of one manifest file.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// The file name as given (for messages).
    pub file: String,
    /// Its tools, in the file's order.
    pub tools: Vec<CommandTool>,
}

impl Manifest {
    /// Reads and checks the manifest at `path`.
    ///
    /// # Errors
    /// A [`ManifestError`] naming the file and the place of the first problem: unreadable,
    /// not JSON, an unknown or missing key, a bad schema (`tools[3].parameters.x.type`), a
    /// bad command, two tools with the same name.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let file = path.display().to_string();
        let err = |path: &str, message: String| ManifestError {
            file: file.clone(),
            path: path.to_owned(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err("", e.to_string()))?;
        let value: Value =
            serde_json::from_str(&text).map_err(|e| err("", format!("not JSON: {e}")))?;
        let dir = path
            .parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            })
            .unwrap_or(Path::new("."));
        let dir = dir
            .canonicalize()
            .map_err(|e| err("", format!("its folder {}: {e}", dir.display())))?;
        Manifest::from_json(&value, &dir, &file)
    }

    /// Checks a manifest given as JSON; `dir` is the folder commands run in, `file` names
    /// it in messages.
    ///
    /// # Errors
    /// As [`Manifest::load`].
    pub fn from_json(value: &Value, dir: &Path, file: &str) -> Result<Manifest, ManifestError> {
        let err = |path: String, message: String| ManifestError {
            file: file.to_owned(),
            path,
            message,
        };
        let Value::Object(top) = value else {
            return Err(err(
                String::new(),
                "expected an object {\"tools\": [...]}".into(),
            ));
        };
        if let Some(k) = top.keys().find(|k| *k != "tools") {
            return Err(err(
                k.clone(),
                "unknown key; a manifest has only \"tools\"".into(),
            ));
        }
        let Some(Value::Array(entries)) = top.get("tools") else {
            return Err(err("tools".into(), "expected an array of tools".into()));
        };
        let mut tools: Vec<CommandTool> = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            let at = format!("tools[{i}]");
            let tool = parse_tool(entry, &at, dir).map_err(|(path, message)| err(path, message))?;
            if tool.name == crate::run_code::RUN_CODE {
                return Err(err(
                    format!("{at}.name"),
                    format!(
                        "{:?} is the name of the tool that runs programs; choose another",
                        tool.name
                    ),
                ));
            }
            if let Some(first) = tools.iter().position(|t| t.name == tool.name) {
                return Err(err(
                    format!("{at}.name"),
                    format!("{:?} is also the name of tools[{first}]", tool.name),
                ));
            }
            tools.push(tool);
        }
        Ok(Manifest {
            file: file.to_owned(),
            tools,
        })
    }

    /// What the import of the tools' JSON Schemas kept for display only (not enforced), as
    /// `(tool name, warning)` in the file's order: for the host to log (issue 15, item 3).
    pub fn warnings(&self) -> Vec<(String, ImportWarning)> {
        self.tools
            .iter()
            .flat_map(|t| t.warnings.iter().map(|w| (t.name.clone(), w.clone())))
            .collect()
    }

    /// The tools, built (each runs its command per call; see [`process`]).
    ///
    /// # Errors
    /// A [`ManifestError`] when a tool cannot be built.
    pub fn build(&self) -> Result<Vec<Tool>, ManifestError> {
        self.tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                process::tool(Arc::new(t.clone())).map_err(|e| ManifestError {
                    file: self.file.clone(),
                    path: format!("tools[{i}]"),
                    message: e.to_string(),
                })
            })
            .collect()
    }

    /// Registers every tool in `registry`; dropping the handles unregisters them. Nothing
    /// stays registered when one fails.
    ///
    /// # Errors
    /// A [`ManifestError`] naming the tool whose name (or alias) is taken, or invalid.
    pub fn register(&self, registry: &Registry) -> Result<Vec<ToolHandle>, ManifestError> {
        let tools = self.build()?;
        let mut handles = Vec::with_capacity(tools.len());
        for (i, tool) in tools.into_iter().enumerate() {
            match registry.register(tool) {
                Ok(h) => handles.push(h),
                Err(e) => {
                    return Err(ManifestError {
                        file: self.file.clone(),
                        path: format!("tools[{i}].name"),
                        message: e.to_string(),
                    });
                }
            }
        }
        Ok(handles)
    }
}

type EntryError = (String, String);

/// The one of two exclusive keys that `m` gives, if any: `(value, true)` for the JSON Schema
/// key, `(value, false)` for the key that takes our nodes.
fn either<'a>(
    m: &'a serde_json::Map<String, Value>,
    at: &str,
    ours: &str,
    json_schema: &str,
) -> Result<Option<(&'a Value, bool)>, EntryError> {
    match (m.get(ours), m.get(json_schema)) {
        (Some(_), Some(_)) => Err((
            format!("{at}.{json_schema}"),
            format!("give either {ours} (our nodes) or {json_schema} (JSON Schema), not both"),
        )),
        (Some(v), None) => Ok(Some((v, false))),
        (None, Some(v)) => Ok(Some((v, true))),
        (None, None) => Ok(None),
    }
}

fn parse_tool(entry: &Value, at: &str, dir: &Path) -> Result<CommandTool, EntryError> {
    const KEYS: &[&str] = &[
        "name",
        "description",
        "parameters",
        "input_schema",
        "output",
        "output_schema",
        "command",
        "timeout_ms",
        "env",
        "run_in_background",
        "annotations",
    ];
    let Value::Object(m) = entry else {
        return Err((at.to_owned(), "expected a tool object".into()));
    };
    if let Some(k) = m.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err((
            format!("{at}.{k}"),
            format!("unknown key; a tool takes {}", KEYS.join(", ")),
        ));
    }
    let name = match m.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(_) => return Err((format!("{at}.name"), "expected a non-empty string".into())),
        None => return Err((format!("{at}.name"), "missing".into())),
    };
    let description = match m.get("description") {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err((format!("{at}.description"), "expected a string".into())),
    };
    let schema_err = |e: DefinitionError| (format!("{at}.{}", e.path), e.message);
    let mut warnings = Vec::new();
    let mut keep = |found: Vec<ImportWarning>| {
        warnings.extend(found.into_iter().map(|w| ImportWarning {
            path: format!("{at}.{}", w.path),
            message: w.message,
        }));
    };
    let parameters = match either(m, at, "parameters", "input_schema")? {
        Some((p, false)) => ParameterSchema::from_json(p).map_err(schema_err)?,
        Some((s, true)) => {
            let (p, found) = ParameterSchema::from_json_schema(s).map_err(schema_err)?;
            keep(found);
            p
        }
        None => ParameterSchema::empty(),
    };
    let output = match either(m, at, "output", "output_schema")? {
        Some((o, false)) => ValueSchema::from_json(o).map_err(schema_err)?,
        Some((s, true)) => {
            let (o, found) = ValueSchema::from_json_schema(s).map_err(schema_err)?;
            keep(found);
            o
        }
        None => ValueSchema::default(),
    };
    let command: Vec<String> = match m.get("command") {
        Some(Value::Array(parts)) if !parts.is_empty() => parts
            .iter()
            .enumerate()
            .map(|(j, p)| match p {
                Value::String(s) if !(j == 0 && s.is_empty()) => Ok(s.clone()),
                _ => Err((
                    format!("{at}.command[{j}]"),
                    "expected a non-empty string".to_owned(),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err((
                format!("{at}.command"),
                "expected a non-empty array of strings: the program, then its arguments".into(),
            ));
        }
        None => return Err((format!("{at}.command"), "missing".into())),
    };
    let timeout_ms = match m.get("timeout_ms") {
        None => DEFAULT_TIMEOUT_MS,
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 => n,
            _ => {
                return Err((
                    format!("{at}.timeout_ms"),
                    "expected a positive integer (milliseconds)".into(),
                ));
            }
        },
    };
    let env = match m.get("env") {
        None => BTreeMap::new(),
        Some(vars) => crate::child::string_map(vars).map_err(|(k, message)| match k {
            Some(k) => (format!("{at}.env.{k}"), message),
            None => (format!("{at}.env"), message),
        })?,
    };
    let run_in_background = match m.get("run_in_background") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err((
                format!("{at}.run_in_background"),
                "expected true or false".into(),
            ));
        }
    };
    let annotations = match m.get("annotations") {
        None => crate::ToolAnnotations::default(),
        Some(Value::Object(a)) => {
            const HINTS: &[&str] = &[
                "readOnlyHint",
                "destructiveHint",
                "idempotentHint",
                "openWorldHint",
            ];
            if let Some((k, _)) = a
                .iter()
                .find(|(k, v)| !HINTS.contains(&k.as_str()) || !v.is_boolean())
            {
                return Err((
                    format!("{at}.annotations.{k}"),
                    format!("expected one of {} with true or false", HINTS.join(", ")),
                ));
            }
            crate::ToolAnnotations::from_mcp(&Value::Object(a.clone()))
        }
        Some(_) => {
            return Err((
                format!("{at}.annotations"),
                "expected an object of hints, like {\"readOnlyHint\": true}".into(),
            ));
        }
    };
    Ok(CommandTool {
        annotations,
        run_in_background,
        name,
        description,
        parameters,
        output,
        command,
        env,
        timeout: Duration::from_millis(timeout_ms),
        dir: dir.to_path_buf(),
        warnings,
    })
}
