//! Keeping a paused run, and `run_code_resume`: the program runs again from the start
//! against the run's journal (see `src/sandbox/journal.rs`), every call that already ended
//! gets its recorded outcome without executing, and the calls it paused at run, or are
//! denied, as the decisions say.
//!
//! Arguments: `{"id": string, "decisions": [{"call": integer, "approve": boolean,
//! "reason"?: string}]}`, one decision for each call the run paused at. The value is
//! `run_code`'s (it can pause again, under a new id).

use std::collections::HashMap;

use serde_json::{Value, json};

use super::background::Run;
use super::output::{PauseInfo, SHOWN_APPROVAL};
use super::paused::{PausedRun, PendingApproval, ToolPrint, expires_at, new_id, now_ms, valid_id};
use super::{RunCodeConfig, cap, render_text, run_code_output_schema};
use crate::Registry;
use crate::dispatch::{Approval, Arguments, Content, Exec, Outcome, Tool, ToolError, Visibility};
use crate::sandbox::Paused;
use crate::sandbox::journal::Recorder;
use crate::schema::{Node, ParameterSchema};

/// The tool's name.
pub const RUN_CODE_RESUME: &str = "run_code_resume";

/// Builds the `run_code_resume` tool. Give it a clone of the config `run_code_tool` has, so
/// both use the same [`PausedRuns`](super::PausedRuns) store.
pub fn run_code_resume_tool(config: RunCodeConfig) -> Tool {
    let decision = Node::object([
        (
            "call",
            Node::integer()
                .minimum(1)
                .required()
                .describe("The call's number, as the paused result lists it."),
        ),
        (
            "approve",
            Node::boolean().required().describe(
                "true runs the call; false denies it (the program sees a ToolCallError).",
            ),
        ),
        (
            "reason",
            Node::string().describe("Why it was denied, for the program's error."),
        ),
    ])
    .additional_properties(false);
    Tool::builder(RUN_CODE_RESUME)
        .description(
            "Continue a run_code run that paused because calls needed approval: give its id and a decision for each call it lists. The program runs again from the start; calls that already ran give their recorded results without running again, and the approved calls run once.",
        )
        .parameters(ParameterSchema::new([
            (
                "id",
                Node::string()
                    .required()
                    .describe("The paused run's id (`paused.id` of run_code's result)."),
            ),
            (
                "decisions",
                Node::array(decision)
                    .required()
                    .describe("One decision for each call the run paused at."),
            ),
        ]))
        .output(run_code_output_schema())
        .visibility(Visibility::NotInSandbox)
        .render(|_args, value| vec![Content::text(render_text(value))])
        .execute(move |args, exec| execute(config.clone(), args, exec))
        .build()
        .unwrap_or_else(|e| unreachable!("the run_code_resume definition is valid: {e}"))
}

/// Resumes the paused run `id` through `registry`'s `run_code_resume` tool, with a decision
/// for each call it paused at: `(call, Approval)`.
pub async fn resume(registry: &Registry, id: &str, decisions: &[(u64, Approval)]) -> Outcome {
    let decisions: Vec<Value> = decisions
        .iter()
        .map(|(call, approval)| match approval {
            Approval::Approved => json!({"call": call, "approve": true}),
            Approval::Denied(reason) => json!({"call": call, "approve": false, "reason": reason}),
        })
        .collect();
    registry
        .call(RUN_CODE_RESUME, json!({"id": id, "decisions": decisions}))
        .await
}

/// What a denied call's error says (then the decision's reason, if it gave one).
const DENIED: &str = "the call was denied by the person asked to approve it";

async fn execute(config: RunCodeConfig, args: Arguments, exec: Exec) -> Result<Value, ToolError> {
    let registry = exec
        .registry()
        .ok_or_else(|| ToolError::new("the registry that ran run_code_resume is gone"))?;
    let Some(store) = config.paused_runs.clone() else {
        return Err(ToolError::new(
            "this host keeps no paused runs, so there is nothing to resume",
        ));
    };
    let id = args.str("id").unwrap_or_default().to_owned();
    let mut decisions: HashMap<u64, Approval> = HashMap::new();
    for d in args
        .get("decisions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let call = d.get("call").and_then(Value::as_u64).unwrap_or_default();
        let approval = if d.get("approve").and_then(Value::as_bool) == Some(true) {
            Approval::Approved
        } else {
            Approval::Denied(match d.get("reason").and_then(Value::as_str) {
                Some(reason) => format!("{DENIED}: {reason}"),
                None => DENIED.to_owned(),
            })
        };
        if decisions.insert(call, approval).is_some() {
            return Err(ToolError::new(format!("call {call} has two decisions")));
        }
    }
    let now = now_ms();
    let taken = if valid_id(&id) {
        store.take(&id).map_err(ToolError::new)?
    } else {
        None
    };
    let Some(paused) = taken else {
        return Err(ToolError::new(match expires_at(&id) {
            Some(at) if at <= now => format!(
                "the paused run {id} has expired: paused runs are kept for {} s",
                config.paused_ttl.as_secs()
            ),
            _ => format!(
                "there is no paused run {:?}: it was resumed already, dropped to keep the store within its bounds, or never existed",
                cut(&id)
            ),
        }));
    };
    if paused.expires_at_ms <= now {
        return Err(ToolError::new(format!(
            "the paused run {id} has expired: paused runs are kept for {} s",
            config.paused_ttl.as_secs()
        )));
    }
    // Nothing has run yet: a refusal puts the run back, to be resumed right.
    let refuse = |paused: PausedRun, message: String| {
        let _ = store.put(paused);
        Err(ToolError::new(message))
    };
    if let Some(message) = undecided(&paused, &decisions) {
        return refuse(paused, message);
    }
    if paused.host != config.paused_host {
        let message = format!(
            "the run cannot resume here: it paused under other host settings ({}) than this host's ({})",
            cut_json(&paused.host),
            cut_json(&config.paused_host)
        );
        return refuse(paused, message);
    }
    if let Some(message) = tool_set_change(&paused.tools, &prints(&registry)) {
        return refuse(
            paused,
            format!("the run cannot resume, because the tools changed since it paused: {message}"),
        );
    }
    // Kept aside: a resume that diverges has run nothing, and the run goes back to the store
    // (another attempt, in another setting, may replay it).
    let kept = paused.clone();
    let PausedRun {
        code,
        timeout_ms,
        journal,
        ..
    } = paused;
    let decisions = decisions.into_iter().collect();
    let mut run = Run::new(&config, &registry, &exec, code);
    if let Some(t) = timeout_ms {
        run.request.limits.timeout = std::time::Duration::from_millis(t)
            .min(config.max_timeout.max(config.background_timeout));
    }
    run.request.journal = Some(Recorder::resume(
        journal,
        decisions,
        config.max_journal_bytes,
    ));
    let result = run.finish(&config, &registry, timeout_ms).await;
    if let Err(e) = &result
        && e.message().starts_with(super::background::DIVERGED)
    {
        let _ = store.put(kept);
        return Err(ToolError::new(format!(
            "{}; the paused run is kept",
            e.message()
        )));
    }
    result
}

/// Why `decisions` do not fit the calls `paused` waits on: a call with no decision, or a
/// decision for a call it does not wait on.
fn undecided(paused: &PausedRun, decisions: &HashMap<u64, Approval>) -> Option<String> {
    let waiting: Vec<u64> = paused.approvals.iter().map(|a| a.call).collect();
    if let Some(a) = paused
        .approvals
        .iter()
        .find(|a| !decisions.contains_key(&a.call))
    {
        return Some(format!(
            "call {} ({}) has no decision; the run waits on call(s) {}",
            a.call,
            a.tool,
            list(&waiting)
        ));
    }
    let mut extra: Vec<u64> = decisions
        .keys()
        .filter(|c| !waiting.contains(c))
        .copied()
        .collect();
    extra.sort_unstable();
    extra.first().map(|c| {
        format!(
            "call {c} does not wait for approval; the run waits on call(s) {}",
            list(&waiting)
        )
    })
}

fn list(calls: &[u64]) -> String {
    calls
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `value` as compact JSON, at most 300 characters.
fn cut_json(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 300 {
        return text;
    }
    let head: String = text.chars().take(300).collect();
    format!("{head}…")
}

fn cut(id: &str) -> String {
    id.chars().take(80).collect()
}

/// The tools a program run through `registry` can call, with digests of their schemas.
fn prints(registry: &Registry) -> Vec<ToolPrint> {
    let mut prints: Vec<ToolPrint> = registry
        .sandbox_tools()
        .iter()
        .map(|tool| {
            let schema = tool.schema();
            let mut digest = Fnv::default();
            digest.write(schema.input_schema.to_string().as_bytes());
            digest.write(&[0]);
            digest.write(schema.output_schema.to_string().as_bytes());
            ToolPrint {
                name: tool.name().to_owned(),
                schema: format!("{:016x}", digest.0),
            }
        })
        .collect();
    prints.sort_by(|a, b| a.name.cmp(&b.name));
    prints
}

/// FNV-1a, 64 bits: stable across processes and versions, unlike `std`'s hasher.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The first difference between the tools a run paused with and the tools now.
fn tool_set_change(then: &[ToolPrint], now: &[ToolPrint]) -> Option<String> {
    for t in then {
        match now.iter().find(|n| n.name == t.name) {
            None => return Some(format!("tool {} is gone", t.name)),
            Some(n) if n.schema != t.schema => {
                return Some(format!("the schema of tool {} changed", t.name));
            }
            Some(_) => {}
        }
    }
    now.iter()
        .find(|n| !then.iter().any(|t| t.name == n.name))
        .map(|n| format!("tool {} is new", n.name))
}

/// Keeps a paused run in `config`'s store: its [`PauseInfo`] for the result.
///
/// # Errors
/// No store, or the store's refusal.
pub(super) fn keep(
    paused: Paused,
    config: &RunCodeConfig,
    registry: &Registry,
    code: String,
    timeout_ms: Option<u64>,
) -> Result<PauseInfo, String> {
    let store = config
        .paused_runs
        .as_ref()
        .ok_or_else(|| "no store for paused runs is configured".to_owned())?;
    let now = now_ms();
    let expires_at_ms = now.saturating_add(config.paused_ttl.as_millis() as u64);
    let id = new_id(expires_at_ms);
    let approvals: Vec<PendingApproval> = paused
        .awaiting
        .into_iter()
        .map(|a| {
            let card = registry
                .get(&a.tool)
                .map(|t| t.present_call(&a.arguments))
                .and_then(|card| serde_json::to_value(card).ok())
                .unwrap_or(Value::Null);
            PendingApproval {
                call: a.call,
                tool: a.tool,
                arguments: a.arguments,
                prompt: a.prompt,
                card,
            }
        })
        .collect();
    let shown = approvals
        .iter()
        .map(|a| PendingApproval {
            arguments: cap::shrink_json(&a.arguments, SHOWN_APPROVAL)
                .unwrap_or_else(|| a.arguments.clone()),
            card: cap::shrink_json(&a.card, SHOWN_APPROVAL).unwrap_or_else(|| a.card.clone()),
            ..a.clone()
        })
        .collect();
    store.put(PausedRun {
        id: id.clone(),
        paused_at_ms: now,
        expires_at_ms,
        code,
        timeout_ms,
        tools: prints(registry),
        approvals,
        journal: paused.journal,
        host: config.paused_host.clone(),
    })?;
    Ok(PauseInfo {
        id,
        approvals: shown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(name: &str, schema: &str) -> ToolPrint {
        ToolPrint {
            name: name.into(),
            schema: schema.into(),
        }
    }

    #[test]
    fn a_changed_tool_set_names_its_first_difference() {
        let then = vec![print("a", "1"), print("b", "2")];
        assert_eq!(tool_set_change(&then, &then), None);
        assert_eq!(
            tool_set_change(&then, &[print("a", "1")]).as_deref(),
            Some("tool b is gone")
        );
        assert_eq!(
            tool_set_change(&then, &[print("a", "9"), print("b", "2")]).as_deref(),
            Some("the schema of tool a changed")
        );
        assert_eq!(
            tool_set_change(&then, &[print("a", "1"), print("b", "2"), print("c", "3")]).as_deref(),
            Some("tool c is new")
        );
    }
}
