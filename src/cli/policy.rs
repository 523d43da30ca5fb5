//! The command line's permissions, `--allow write`, `--allow shell` and
//! `--allow net=HOST[,HOST…]`, written as any host writes a policy with the public API: a
//! `pre_execute` listener that denies the tools a run was not allowed, and a `guard` that
//! keeps `web_fetch` to the allowed hosts (the tool itself checks every redirect against
//! the same list).

use codemode::hooks::{Decision, HookHandle};
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
        let (write, shell, net) = (self.write, self.shell, !self.net.is_empty());
        let listener = registry.pre_execute(move |exec: &Exec| {
            let flag = match exec.name() {
                "write_file" | "edit_file" if !write => "--allow write",
                "bash" if !shell => "--allow shell",
                "web_fetch" if !net => "--allow net=HOST",
                _ => return Decision::Allow,
            };
            Decision::Deny(format!(
                "not allowed in this run; run codemode with {flag} to allow it"
            ))
        });
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

#[cfg(test)]
mod tests {
    use super::*;

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
