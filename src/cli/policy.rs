//! The command line's permissions, `--allow write`, `--allow shell` and
//! `--allow net=HOST[,HOST…]`, written as any host writes a policy with the public API: a
//! `pre_execute` listener that denies the tools a run was not allowed, and a `guard` that
//! keeps `web_fetch` to the allowed hosts (the tool itself checks every redirect against
//! the same list).

use std::collections::HashSet;
use std::io::{BufRead, IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};

use codemode::cards::CallCard;
use codemode::hooks::{Approval, Approver, Decision, HookHandle, PreExecute};
use codemode::{AllowedHosts, Exec, Registry};

/// What a run may do besides reading under `--root`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Permissions {
    /// `--allow write`: `write_file`, `edit_file`.
    pub(crate) write: bool,
    /// `--allow shell`: `bash`.
    pub(crate) shell: bool,
    /// `--allow net=HOST,…`: `web_fetch` to these hosts.
    pub(crate) net: Vec<String>,
    /// `--read-only`: only tools marked read-only (`run_code` itself runs; its calls are
    /// checked).
    pub(crate) read_only: bool,
    /// `--ask`: a write or shell call not allowed by a flag is asked about on the terminal
    /// instead of refused (`net` stays flag-only: `web_fetch` checks its hosts itself).
    pub(crate) ask: bool,
}

/// The `pre_execute` listener of the `--allow` flags: denies (or, with `--ask`, asks
/// about) a write, shell or network tool its flag did not allow.
struct FlagPolicy {
    write: bool,
    shell: bool,
    net: bool,
    ask: bool,
}

impl PreExecute for FlagPolicy {
    fn pre_execute(&self, exec: &Exec) -> Decision {
        let flag = match exec.name() {
            "write_file" | "edit_file" if !self.write => "--allow write",
            "bash" if !self.shell => "--allow shell",
            "web_fetch" if !self.net => "--allow net=HOST",
            _ => return Decision::Allow,
        };
        if self.ask && flag != "--allow net=HOST" {
            return Decision::Ask(format!("{} is not allowed by {flag}", exec.name()));
        }
        Decision::Deny(format!(
            "not allowed in this run; run codemode with {flag} to allow it"
        ))
    }

    /// Only with `--ask`: without it, no run needs recording in case it pauses.
    fn may_ask(&self) -> bool {
        self.ask
    }
}

/// One `--allow` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Allow {
    Write,
    Shell,
    Net(Vec<String>),
}

/// Parses `write`, `shell` or `net=HOST[,HOST…]` (a host with an optional `:PORT`).
pub(crate) fn parse_allow(text: &str) -> Result<Allow, String> {
    match text {
        "write" => Ok(Allow::Write),
        "shell" => Ok(Allow::Shell),
        _ => match text.strip_prefix("net=") {
            Some(hosts) => {
                let hosts: Vec<String> = hosts
                    .split(',')
                    .map(str::trim)
                    .filter(|h| !h.is_empty())
                    .map(str::to_owned)
                    .collect();
                if hosts.is_empty() {
                    Err("net= needs at least one host: net=example.com[,other.org:8080]".into())
                } else {
                    Ok(Allow::Net(hosts))
                }
            }
            None => Err(format!(
                "{text:?}: expected write, shell or net=HOST[,HOST…]"
            )),
        },
    }
}

impl Permissions {
    /// The permissions of the `--allow` values given.
    pub(crate) fn of(allows: &[Allow]) -> Permissions {
        let mut p = Permissions::default();
        for allow in allows {
            match allow {
                Allow::Write => p.write = true,
                Allow::Shell => p.shell = true,
                Allow::Net(hosts) => p.net.extend(hosts.iter().cloned()),
            }
        }
        p
    }

    /// The hosts `web_fetch` may reach.
    pub(crate) fn hosts(&self) -> AllowedHosts {
        AllowedHosts::new(&self.net)
    }

    /// Installs the policy on `registry`; the handles keep it installed.
    pub(crate) fn install(&self, registry: &Registry) -> Vec<HookHandle> {
        let ask = self.ask;
        let listener = registry.pre_execute(FlagPolicy {
            write: self.write,
            shell: self.shell,
            net: !self.net.is_empty(),
            ask,
        });
        if ask && let Some(approver) = TerminalApprover::open() {
            registry.set_approver(Some(Arc::new(approver)));
        }
        let hosts = self.hosts();
        let guard = registry.guard(move |exec: &Exec| {
            if exec.name() != "web_fetch" {
                return Ok(());
            }
            let url = exec.arguments().str("url").unwrap_or_default();
            // An address that does not parse, or is not http(s): the tool says what is wrong.
            let Ok(parsed) = reqwest::Url::parse(url) else {
                return Ok(());
            };
            if !matches!(parsed.scheme(), "http" | "https") {
                return Ok(());
            }
            if hosts.allows(&parsed) {
                return Ok(());
            }
            let host = match parsed.port() {
                Some(port) => format!("{}:{port}", parsed.host_str().unwrap_or_default()),
                None => parsed.host_str().unwrap_or_default().to_owned(),
            };
            Err(format!(
                "{url}: host {host} is not allowed; run codemode with --allow net={host} to allow it"
            ))
        });
        let mut hooks = vec![listener, guard];
        if self.read_only {
            hooks.push(registry.guard(|exec: &Exec| {
                if exec.name() == "run_code" {
                    return Ok(());
                }
                let read_only = exec
                    .registry()
                    .and_then(|r| r.get(exec.name()))
                    .is_some_and(|t| t.annotations().is_read_only());
                if read_only {
                    Ok(())
                } else {
                    Err(
                        "refused: this run is --read-only and the tool is not marked read-only"
                            .into(),
                    )
                }
            }));
        }
        hooks
    }
}

/// Asks a person at the terminal about a call (`--ask`): shows what the call would do
/// (its call card) and reads `y` (this call), `a` (every call of this tool from now on) or
/// `n` from `/dev/tty`, one question at a time. Made only when stderr is a terminal and
/// `/dev/tty` opens; without it, a call that needs asking is denied and says so.
struct TerminalApprover {
    tty: Arc<Mutex<std::fs::File>>,
    always: Arc<Mutex<HashSet<String>>>,
}

impl TerminalApprover {
    fn open() -> Option<TerminalApprover> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        Some(TerminalApprover {
            tty: Arc::new(Mutex::new(tty)),
            always: Arc::default(),
        })
    }
}

/// `text` with every control character shown as an escape (`\u{1b}`), so that a program
/// cannot redraw the question it is asked about.
fn visible(text: &str) -> String {
    text.chars()
        .flat_map(|c| -> Vec<char> {
            if c.is_control() {
                c.escape_unicode().collect()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// One line saying what a call would do, from its call card, control characters escaped.
fn describe(card: &CallCard) -> String {
    visible(&describe_raw(card))
}

fn describe_raw(card: &CallCard) -> String {
    match card {
        CallCard::Terminal { command, cwd, .. } => match cwd {
            Some(cwd) => format!("run in {cwd}: {command}"),
            None => format!("run: {command}"),
        },
        CallCard::Diff {
            path,
            old_text: None,
            new_text,
        } => {
            format!("write {path} ({} bytes)", new_text.len())
        }
        CallCard::Diff { path, .. } => format!("edit {path}"),
        CallCard::Generic { title, .. } => title.clone(),
        _ => "a call".to_owned(),
    }
}

impl Approver for TerminalApprover {
    fn approve(&self, exec: &Exec, prompt: &str) -> futures::future::BoxFuture<'static, Approval> {
        let tool = exec.name().to_owned();
        if self
            .always
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&tool)
        {
            return Box::pin(async { Approval::Approved });
        }
        let what = exec
            .registry()
            .and_then(|r| r.get(&tool))
            .map(|t| describe(&t.present_call(exec.arguments())))
            .unwrap_or_else(|| tool.clone());
        let (shown, prompt) = (visible(&tool), visible(prompt));
        let question = format!(
            "\ncodemode: {shown} wants to {what}\n  ({prompt}) allow? [y]es, [n]o, [a]lways for {shown}: "
        );
        let (tty, always) = (self.tty.clone(), self.always.clone());
        Box::pin(async move {
            // The terminal is read on a thread of its own: the run's other calls and timers
            // go on while the person thinks.
            let answer = tokio::task::spawn_blocking(move || {
                let mut tty = tty.lock().unwrap_or_else(PoisonError::into_inner);
                super::status::ASKING.store(true, std::sync::atomic::Ordering::Relaxed);
                let _ = tty.write_all(question.as_bytes());
                let _ = tty.flush();
                let mut line = String::new();
                let _ = std::io::BufReader::new(&mut *tty).read_line(&mut line);
                super::status::ASKING.store(false, std::sync::atomic::Ordering::Relaxed);
                line.trim().to_ascii_lowercase()
            })
            .await
            .unwrap_or_default();
            match answer.as_str() {
                "y" | "yes" => Approval::Approved,
                "a" | "always" => {
                    always
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(tool);
                    Approval::Approved
                }
                _ => Approval::Denied(format!("{tool}: denied at the terminal")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_show_control_characters_as_escapes() {
        let card = CallCard::Terminal {
            command: "rm -rf x #\u{1b}[2K\rls\nok".into(),
            description: None,
            cwd: None,
        };
        assert_eq!(describe(&card), "run: rm -rf x #\\u{1b}[2K\\u{d}ls\\u{a}ok");
    }

    #[test]
    fn allow_values_parse_or_say_what_is_expected() {
        assert_eq!(parse_allow("write"), Ok(Allow::Write));
        assert_eq!(parse_allow("shell"), Ok(Allow::Shell));
        assert_eq!(
            parse_allow("net=a.com, b.org:8080"),
            Ok(Allow::Net(vec!["a.com".into(), "b.org:8080".into()]))
        );
        assert_eq!(
            parse_allow("net="),
            Err("net= needs at least one host: net=example.com[,other.org:8080]".into())
        );
        assert_eq!(
            parse_allow("exec"),
            Err("\"exec\": expected write, shell or net=HOST[,HOST…]".into())
        );
    }
}
