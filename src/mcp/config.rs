//! Where upstream MCP servers are: `--mcp NAME=COMMAND` and the `mcpServers` JSON file that
//! MCP clients already use.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

/// How long one `tools/call` to a server may take when its entry sets no `timeout_ms`:
/// 60 000 ms (the MCP TypeScript SDK's default request timeout).
pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 60_000;

/// How long a server may take to start and answer `initialize` and `tools/list` when its
/// entry sets no `startup_timeout_ms`: 30 000 ms (room for `npx -y` to fetch a package).
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 30_000;

/// One upstream MCP server and how to reach it.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    /// The server's name: its tools are registered as `NAME.tool`. Letters, digits, `_` and
    /// `-`, at most 64 characters.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// How long one call may take before it is cancelled (`notifications/cancelled`) and
    /// fails with a timeout naming the server, the tool and this limit.
    pub call_timeout: Duration,
    /// How long starting, `initialize` and the first `tools/list` may take together.
    pub startup_timeout: Duration,
    /// Whether image and audio content keep their base64 `data` (`true`), or show only
    /// their `mimeType` and decoded `size` in bytes (`false`, the default: a model rarely
    /// wants kilobytes of base64 in its program's values).
    pub include_binary: bool,
    /// Most `o200k_base` tokens the declarations of this server's tools may take in
    /// `run_code`'s description (`tool_budget` in a config file); past it they are listed
    /// by name only ([`crate::ToolBuilder::deferred`]) and programs read them with
    /// `tools.$describe`. `None` (the default): only `run_code`'s own budget applies.
    pub tool_budget: Option<usize>,
}

/// How a server is reached.
#[derive(Clone, Debug, PartialEq)]
pub enum Transport {
    /// A child process speaking MCP over its stdin and stdout (the MCP stdio transport).
    /// It runs in `cwd` (default: the current folder), in a process group of its own, with
    /// the environment cleared except `PATH`, `HOME`, `USER`, `LOGNAME`, `LANG`, `LC_*`,
    /// `TZ`, `TMPDIR` ([`crate::manifest::ENV_ALLOW_LIST`]) and `env` added. Its stderr is
    /// kept (the last 2 000 bytes) for error messages.
    Stdio {
        /// The program: a path, or a name looked up on `PATH`.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the environment.
        env: BTreeMap<String, String>,
        /// The folder it runs in.
        cwd: Option<PathBuf>,
    },
    /// A server over the MCP streamable HTTP transport.
    Http {
        /// Its endpoint, `http://` or `https://`.
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

/// A server entry or flag that cannot be used: where, and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {message}")]
pub struct ConfigError {
    /// `--mcp fs=…`, or `FILE: mcpServers.fs.args[2]`.
    pub at: String,
    /// What is wrong.
    pub message: String,
}

impl ServerConfig {
    /// A server run as `command args…` over stdio, with the default limits.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        ServerConfig::with_transport(
            name,
            Transport::Stdio {
                command: command.into(),
                args,
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A server over streamable HTTP at `url`, with the default limits.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        ServerConfig::with_transport(
            name,
            Transport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
        )
    }

    fn with_transport(name: impl Into<String>, transport: Transport) -> Self {
        ServerConfig {
            name: name.into(),
            transport,
            call_timeout: Duration::from_millis(DEFAULT_CALL_TIMEOUT_MS),
            startup_timeout: Duration::from_millis(DEFAULT_STARTUP_TIMEOUT_MS),
            include_binary: false,
            tool_budget: None,
        }
    }

    /// Parses the `--mcp` flag's `NAME=COMMAND`: `COMMAND` is split into words as a POSIX
    /// shell would (quotes and backslashes), without running a shell, so
    /// `fs="npx -y @modelcontextprotocol/server-filesystem '/my files'"` runs `npx` with
    /// three arguments.
    ///
    /// # Errors
    /// A [`ConfigError`] when there is no `=`, the name is not allowed
    /// ([`check_server_name`]), or the command is empty or badly quoted.
    pub fn parse_flag(text: &str) -> Result<ServerConfig, ConfigError> {
        let at = format!("--mcp {text}");
        let err = |message: String| ConfigError {
            at: at.clone(),
            message,
        };
        let Some((name, command)) = text.split_once('=') else {
            return Err(err(
                "expected NAME=COMMAND, e.g. fs=\"npx -y @modelcontextprotocol/server-filesystem .\""
                    .into(),
            ));
        };
        check_server_name(name).map_err(err)?;
        let words = shlex::split(command).ok_or_else(|| {
            err("the command has an unclosed quote or a trailing backslash".into())
        })?;
        let Some((program, args)) = words.split_first() else {
            return Err(err("the command is empty".into()));
        };
        Ok(ServerConfig::stdio(name, program.clone(), args.to_vec()))
    }
}

/// Checks a server name: 1 to 64 characters, each a letter, a digit, `_` or `-` (no `.`:
/// it separates the server from the tool in `NAME.tool`).
///
/// # Errors
/// What is wrong with it, as a sentence.
pub fn check_server_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the server name is empty".into());
    }
    if name.len() > 64 {
        return Err(format!(
            "the server name {name:?} is longer than 64 characters"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "the server name {name:?} has {c:?}; use letters, digits, '_' and '-'"
        ));
    }
    Ok(())
}

/// The largest configuration file [`load_config`] reads: 1 MiB (a real one is a few
/// kilobytes).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads an MCP client configuration file (`{"mcpServers": {NAME: ENTRY, …}}`, the form
/// Claude Desktop, Cursor and the MCP inspector use). An entry has either `command` (with
/// optional `args`, `env`, `cwd`; a relative `cwd` is taken from the file's folder) or
/// `url` (with optional `headers`); `type` may say `"stdio"`, `"http"` or
/// `"streamable-http"`. codemode also reads `timeout_ms` (per call, default
/// [`DEFAULT_CALL_TIMEOUT_MS`]), `startup_timeout_ms` (default
/// [`DEFAULT_STARTUP_TIMEOUT_MS`]), `include_binary` (default `false`) and `disabled`
/// (`true` skips the entry). Any other key is an error, so a typo cannot drop a setting.
/// A leading UTF-8 byte order mark (which some editors write) is skipped; a file over
/// [`MAX_CONFIG_BYTES`] is refused before it is read.
///
/// # Errors
/// A [`ConfigError`] naming the file and the place of the first problem.
pub fn load_config(path: &Path) -> Result<Vec<ServerConfig>, ConfigError> {
    let file = path.display().to_string();
    let fail = |message: String| ConfigError {
        at: file.clone(),
        message,
    };
    let size = std::fs::metadata(path)
        .map_err(|e| fail(e.to_string()))?
        .len();
    if size > MAX_CONFIG_BYTES {
        return Err(fail(format!(
            "the file is {size} bytes; a configuration is at most {MAX_CONFIG_BYTES} bytes"
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let value: Value = serde_json::from_str(text).map_err(|e| ConfigError {
        at: file.clone(),
        message: format!("not JSON: {e}"),
    })?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    parse_config(&value, dir, &file)
}

/// Reads the `mcpServers` form given as JSON; relative `cwd`s are taken from `dir`, `file`
/// names it in messages. See [`load_config`].
///
/// # Errors
/// As [`load_config`].
pub fn parse_config(
    value: &Value,
    dir: &Path,
    file: &str,
) -> Result<Vec<ServerConfig>, ConfigError> {
    let err = |path: &str, message: String| ConfigError {
        at: if path.is_empty() {
            file.to_owned()
        } else {
            format!("{file}: {path}")
        },
        message,
    };
    let Some(servers) = value.get("mcpServers") else {
        return Err(err(
            "",
            "expected an object {\"mcpServers\": {NAME: {\"command\": …} or {\"url\": …}}}".into(),
        ));
    };
    let Value::Object(servers) = servers else {
        return Err(err("mcpServers", "expected an object of servers".into()));
    };
    let mut out = Vec::with_capacity(servers.len());
    for (name, entry) in servers {
        let at = format!("mcpServers.{name}");
        check_server_name(name).map_err(|m| err(&at, m))?;
        if let Some(config) = parse_entry(name, entry, dir).map_err(|(p, m)| {
            err(
                &if p.is_empty() {
                    at.clone()
                } else {
                    format!("{at}.{p}")
                },
                m,
            )
        })? {
            out.push(config);
        }
    }
    Ok(out)
}

type EntryError = (String, String);

fn parse_entry(name: &str, entry: &Value, dir: &Path) -> Result<Option<ServerConfig>, EntryError> {
    const KEYS: &[&str] = &[
        "type",
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "timeout_ms",
        "startup_timeout_ms",
        "include_binary",
        "tool_budget",
        "disabled",
    ];
    let Value::Object(m) = entry else {
        return Err((String::new(), "expected an object".into()));
    };
    if let Some(k) = m.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err((
            k.clone(),
            format!("unknown key; a server takes {}", KEYS.join(", ")),
        ));
    }
    if flag(m, "disabled")? {
        return Ok(None);
    }
    let string = |key: &str| -> Result<Option<String>, EntryError> {
        match m.get(key) {
            None => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err((key.to_owned(), "expected a non-empty string".into())),
        }
    };
    let strings = |key: &str| -> Result<BTreeMap<String, String>, EntryError> {
        match m.get(key) {
            None => Ok(BTreeMap::new()),
            Some(vars) => crate::child::string_map(vars).map_err(|(k, message)| match k {
                Some(k) => (format!("{key}.{k}"), message),
                None => (key.to_owned(), message),
            }),
        }
    };
    let kind = string("type")?;
    let command = string("command")?;
    let url = string("url")?;
    let transport = match (command, url) {
        (Some(_), Some(_)) => {
            return Err((
                "url".into(),
                "give either command (a server over stdio) or url (over HTTP), not both".into(),
            ));
        }
        (None, None) => {
            return Err((
                String::new(),
                "missing command (a server over stdio) or url (over HTTP)".into(),
            ));
        }
        (Some(command), None) => {
            if let Some(k) = kind.as_deref().filter(|k| *k != "stdio") {
                return Err(("type".into(), format!("{k:?} does not go with command")));
            }
            for key in ["url", "headers"] {
                if m.contains_key(key) {
                    return Err((key.into(), "goes with url, not command".into()));
                }
            }
            let args = match m.get("args") {
                None => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match v {
                        Value::String(s) => Ok(s.clone()),
                        _ => Err((format!("args[{i}]"), "expected a string".to_owned())),
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(("args".into(), "expected an array of strings".into())),
            };
            Transport::Stdio {
                command,
                args,
                env: strings("env")?,
                cwd: string("cwd")?.map(|c| dir.join(c)),
            }
        }
        (None, Some(url)) => {
            match kind.as_deref() {
                None | Some("http" | "streamable-http" | "streamableHttp") => {}
                Some("sse") => {
                    return Err((
                        "type".into(),
                        "the older HTTP+SSE transport is not supported; use the server's streamable HTTP endpoint".into(),
                    ));
                }
                Some(k) => return Err(("type".into(), format!("{k:?} does not go with url"))),
            }
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err((
                    "url".into(),
                    format!("{url:?} is not an http:// or https:// URL"),
                ));
            }
            for key in ["args", "env", "cwd"] {
                if m.contains_key(key) {
                    return Err((key.into(), "goes with command, not url".into()));
                }
            }
            Transport::Http {
                url,
                headers: strings("headers")?,
            }
        }
    };
    let mut config = ServerConfig::with_transport(name, transport);
    if let Some(ms) = millis(m, "timeout_ms")? {
        config.call_timeout = ms;
    }
    if let Some(ms) = millis(m, "startup_timeout_ms")? {
        config.startup_timeout = ms;
    }
    config.include_binary = flag(m, "include_binary")?;
    config.tool_budget = match m.get("tool_budget") {
        None => None,
        Some(v) => Some(v.as_u64().and_then(|n| usize::try_from(n).ok()).ok_or((
            "tool_budget".to_owned(),
            "expected a number of tokens (an integer, 0 or more)".to_owned(),
        ))?),
    };
    Ok(Some(config))
}

fn millis(m: &serde_json::Map<String, Value>, key: &str) -> Result<Option<Duration>, EntryError> {
    match m.get(key) {
        None => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 => Ok(Some(Duration::from_millis(n))),
            _ => Err((
                key.to_owned(),
                "expected a positive integer (milliseconds)".into(),
            )),
        },
    }
}

fn flag(m: &serde_json::Map<String, Value>, key: &str) -> Result<bool, EntryError> {
    match m.get(key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err((key.to_owned(), "expected true or false".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_flag_splits_its_command_as_a_shell_would() {
        let c = ServerConfig::parse_flag(r#"fs=npx -y "@scope/server x" 'a b' c\ d"#).unwrap();
        assert_eq!(c.name, "fs");
        assert_eq!(
            c.transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec![
                    "-y".into(),
                    "@scope/server x".into(),
                    "a b".into(),
                    "c d".into()
                ],
                env: BTreeMap::new(),
                cwd: None,
            }
        );
        assert_eq!(
            c.call_timeout,
            Duration::from_millis(DEFAULT_CALL_TIMEOUT_MS)
        );
        for (bad, says) in [
            ("fs", "expected NAME=COMMAND"),
            ("=npx x", "the server name is empty"),
            ("a.b=npx x", "has '.'"),
            ("fs=", "the command is empty"),
            ("fs=npx 'open", "unclosed quote"),
        ] {
            let e = ServerConfig::parse_flag(bad).unwrap_err();
            assert!(e.to_string().contains(says), "{bad}: {e}");
            assert!(e.to_string().starts_with(&format!("--mcp {bad}: ")), "{e}");
        }
    }

    #[test]
    fn the_client_config_form_reads_every_key_and_refuses_typos() {
        let v = json!({"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}, "cwd": "sub",
                   "timeout_ms": 1500, "startup_timeout_ms": 900},
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                    "headers": {"Authorization": "Bearer x"}, "include_binary": true},
            "off": {"command": "nothing", "disabled": true}
        }});
        let servers = parse_config(&v, Path::new("/etc/cm"), "c.json").unwrap();
        assert_eq!(servers.len(), 2);
        assert_eq!(
            servers[0].transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "pkg".into()],
                env: BTreeMap::from([("K".into(), "v".into())]),
                cwd: Some(PathBuf::from("/etc/cm/sub")),
            }
        );
        assert_eq!(servers[0].call_timeout, Duration::from_millis(1500));
        assert_eq!(servers[0].startup_timeout, Duration::from_millis(900));
        assert!(!servers[0].include_binary);
        assert_eq!(
            servers[1].transport,
            Transport::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer x".into())]),
            }
        );
        assert!(servers[1].include_binary);

        for (bad, says) in [
            (
                json!({"servers": {}}),
                "c.json: expected an object {\"mcpServers\"",
            ),
            (
                json!({"mcpServers": {"a": {"comand": "x"}}}),
                "c.json: mcpServers.a.comand: unknown key",
            ),
            (
                json!({"mcpServers": {"a": {}}}),
                "c.json: mcpServers.a: missing command",
            ),
            (
                json!({"mcpServers": {"a": {"command": "x", "url": "http://h"}}}),
                "mcpServers.a.url: give either",
            ),
            (
                json!({"mcpServers": {"a": {"command": "x", "args": [1]}}}),
                "mcpServers.a.args[0]: expected a string",
            ),
            (
                json!({"mcpServers": {"a": {"url": "ftp://h"}}}),
                "mcpServers.a.url: \"ftp://h\" is not",
            ),
            (
                json!({"mcpServers": {"a": {"url": "http://h", "type": "sse"}}}),
                "HTTP+SSE transport is not supported",
            ),
            (
                json!({"mcpServers": {"a": {"command": "x", "timeout_ms": 0}}}),
                "mcpServers.a.timeout_ms: expected a positive integer",
            ),
            (
                json!({"mcpServers": {"a b": {"command": "x"}}}),
                "mcpServers.a b: the server name \"a b\" has ' '",
            ),
        ] {
            let e = parse_config(&bad, Path::new("."), "c.json").unwrap_err();
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_config_file_may_start_with_a_byte_order_mark_and_is_bounded_in_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bom.json");
        std::fs::write(
            &path,
            "\u{feff}{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}",
        )
        .unwrap();
        let servers = load_config(&path).unwrap();
        assert_eq!(servers.len(), 1);
        assert_eq!(servers[0].name, "a");

        let path = dir.path().join("big.json");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(MAX_CONFIG_BYTES + 1).unwrap();
        let error = load_config(&path).unwrap_err();
        assert_eq!(error.at, path.display().to_string());
        assert_eq!(
            error.message,
            format!(
                "the file is {} bytes; a configuration is at most 1048576 bytes",
                MAX_CONFIG_BYTES + 1
            )
        );
    }
}
