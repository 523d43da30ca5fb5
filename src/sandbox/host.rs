//! The two objects the prelude and the host hand each other, named in one place each:
//! [`Host`], the native functions the prelude receives as `host` (it mirrors
//! `js-prelude/10_host.js`), and [`Internals`], the prelude's own functions the host reads
//! back from the `internals` object once the prelude has run.
//!
//! Neither object is reachable from the program: the prelude captures `host` in its
//! closures, and `internals` is returned to the host only.

use std::sync::Arc;

use rquickjs::function::Opt;
use rquickjs::object::Property;
use rquickjs::{Ctx, Exception, Function, Object, Value};

use super::bridge::{BridgeSlot, tool_function};
use super::convert::json_to_js;
use super::flags::RunFlags;
use super::guards;
use super::logs::LogLevel;
use super::prelude::{self, Lazy};
use super::shared::{Shared, lock};
use super::stack::StackFloor;
use crate::dispatch::registry::unknown_tool_in_program;

/// The `host` object of one run, field for field as `js-prelude/10_host.js` describes it.
pub(super) struct Host<'js> {
    /// `tools`: an object without prototype whose own properties are the tools' native
    /// functions, `(args)` → a promise of the call's result: each under its name
    /// (enumerable) and, when that differs and is free, its alias (not enumerable); none
    /// writable or configurable. 20_tools.js gives it its prototype and freezes it.
    tools: Object<'js>,
    /// `unknownTool(name)` → the message naming the available tools.
    unknown_tool: Function<'js>,
    /// `log(level, text)`: one console line.
    log: Function<'js>,
    /// `load(module, primordials)`: loads a module of the prelude that runs only when a run
    /// first needs it, and returns what it gives (see [`Lazy`]): `"discovery"` →
    /// `{ search, describe, unknown }` (22_discovery.js, given the host's `searchTools` and
    /// `describeTools`, made then: see [`discovery_functions`]), `"inspect"` →
    /// `{ formatArgs, inspect }` (31_inspect.js), `"arrayChecks"` →
    /// `check(name, self, args)` (36_array_checks.js), `"journalClock"` → `undefined`
    /// (41_journal_clock.js), `"timers"` → `{ start, stop, fire }` (42_timer_table.js,
    /// given the host's `setTimer` and `clearTimer`, made then: see [`timer_functions`]).
    /// Throws for any other name.
    load: Function<'js>,
    /// `clock()` → milliseconds since the epoch, fractional and never going back; recorded,
    /// or replayed, by a run that may pause (see `journal.rs`).
    clock: Function<'js>,
    /// `random()` → the next `Math.random` value of a run that may pause.
    random: Function<'js>,
    /// `programStack(text)`: a stack trace the engine wrote, with the program's positions
    /// in the model's own source (see [`crate::program::Program::stack_in_source`]).
    program_stack: Function<'js>,
    /// `isProxy(value)`: whether `value` is a Proxy (which JavaScript cannot tell without
    /// running its traps); the array checks read a `length` only when no code runs for it.
    is_proxy: Function<'js>,
    /// `maxArrayLength`: the longest array the memory limit can hold (see
    /// [`guards::max_array_length`]); the array checks refuse longer lengths.
    max_array_length: f64,
}

impl<'js> Host<'js> {
    /// The host functions of one run over `state` (which a run replaces with its own when it
    /// takes an engine built ahead); `tools` are (name, alias) pairs; `memory` is the
    /// engine's memory limit in bytes.
    pub(super) fn new(
        ctx: &Ctx<'js>,
        state: &Shared,
        flags: &Arc<RunFlags>,
        bridge: &BridgeSlot<'js>,
        floor: &StackFloor,
        tools: &[(String, String)],
        memory: usize,
    ) -> rquickjs::Result<Self> {
        let tool_functions = tools
            .iter()
            .enumerate()
            .map(|(index, (_, alias))| {
                let (state, flags, bridge) = (state.clone(), flags.clone(), bridge.clone());
                let floor = floor.clone();
                Function::new(
                    ctx.clone(),
                    move |ctx: Ctx<'js>, args: Opt<Value<'js>>| -> rquickjs::Result<Value<'js>> {
                        // Settling the call and converting its arguments run JavaScript.
                        floor.enter(&ctx)?;
                        tool_function(&ctx, &state, &flags, &bridge, index, args.0)
                    },
                )?
                .with_name(alias)?
                .with_length(1)
            })
            .collect::<rquickjs::Result<Vec<_>>>()?;
        // Defined here with their attributes, not by the prelude: a property defined from
        // JavaScript reads a descriptor object, which costs about 1 µs per tool per run.
        let tool_object = Object::new(ctx.clone())?;
        tool_object.set_prototype(None)?;
        for ((name, alias), function) in tools.iter().zip(tool_functions) {
            tool_object.prop(name.as_str(), Property::from(function.clone()).enumerable())?;
            if alias != name && !tool_object.contains_key(alias.as_str())? {
                tool_object.prop(alias.as_str(), Property::from(function))?;
            }
        }

        let unknown_state = state.clone();
        let unknown_tool =
            Function::new(ctx.clone(), move |name: rquickjs::String<'js>| -> String {
                // A lone surrogate (no tool name has one) is shown replaced.
                let name = name.to_string().unwrap_or_else(|_| "\u{FFFD}".to_owned());
                let st = lock(&unknown_state);
                let names: Vec<String> = st
                    .calls
                    .tool_names()
                    .iter()
                    .map(|t| t.to_string())
                    .collect();
                unknown_tool_in_program(&name, &names)
            })?;

        let (load_state, load_bridge, load_floor) = (state.clone(), bridge.clone(), floor.clone());
        let load = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  module: rquickjs::String<'js>,
                  primordials: Object<'js>|
                  -> rquickjs::Result<Value<'js>> {
                load_floor.enter(&ctx)?;
                match module.to_string()?.as_str() {
                    "discovery" => {
                        let engine =
                            discovery_functions(&ctx, &load_state, &load_bridge, &load_floor)?;
                        prelude::load_lazy(&ctx, Lazy::Discovery, (primordials, engine))
                    }
                    "inspect" => prelude::load_inspect(&ctx, primordials).map(Object::into_value),
                    "arrayChecks" => prelude::load_lazy(&ctx, Lazy::ArrayChecks, (primordials,)),
                    "journalClock" => prelude::load_lazy(&ctx, Lazy::JournalClock, (primordials,)),
                    "timers" => {
                        let engine = timer_functions(&ctx, &load_state)?;
                        prelude::load_lazy(&ctx, Lazy::TimerTable, (primordials, engine))
                    }
                    other => Err(Exception::throw_message(
                        &ctx,
                        &format!("the prelude has no module {other:?}"),
                    )),
                }
            },
        )?;

        let (log_state, log_flags) = (state.clone(), flags.clone());
        let log = Function::new(
            ctx.clone(),
            move |level: String, text: rquickjs::String<'js>| {
                // A run that is stopping keeps no more lines, and each call returns at once:
                // the engine checks for an interrupt only every few thousand operations, and
                // a flood of long lines would otherwise push that check well past the
                // deadline.
                if log_flags.should_interrupt() {
                    return;
                }
                let text = text.to_string().unwrap_or_else(|_| {
                    "[console text with a lone surrogate could not be shown]".into()
                });
                let mut st = lock(&log_state);
                st.logs.push(LogLevel::parse(&level), text);
                if st.logs.over_limit {
                    // The interrupt handler ends the run at its next check.
                    log_flags.console_limit();
                }
            },
        )?;

        let clock_state = state.clone();
        let clock = Function::new(ctx.clone(), move || -> f64 {
            let mut st = lock(&clock_state);
            match st.journal.as_mut() {
                Some(journal) => journal.clock(),
                None => super::journal::epoch_ms(),
            }
        })?;
        let random_state = state.clone();
        let random = Function::new(ctx.clone(), move || -> f64 {
            let mut st = lock(&random_state);
            match st.journal.as_mut() {
                Some(journal) => journal.random(),
                // Only a run with a journal asks; any other gets a number all the same.
                None => super::journal::Recorder::new(0).random(),
            }
        })?;

        let is_proxy = Function::new(ctx.clone(), |value: Value<'js>| value.is_proxy())?;

        let stack_state = state.clone();
        let program_stack = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  text: rquickjs::String<'js>|
                  -> rquickjs::Result<rquickjs::String<'js>> {
                // Text with a lone surrogate (in a function's name) is left as it is.
                let Ok(raw) = text.to_string() else {
                    return Ok(text);
                };
                let program = lock(&stack_state).program.clone();
                match program.and_then(|p| p.stack_in_source(&raw, super::errors::PROGRAM_FILE)) {
                    Some(mapped) => rquickjs::String::from_str(ctx, &mapped),
                    None => Ok(text),
                }
            },
        )?;

        Ok(Host {
            is_proxy,
            program_stack,
            tools: tool_object,
            unknown_tool,
            log,
            load,
            clock,
            random,
            max_array_length: guards::max_array_length(memory),
        })
    }

    /// The `host` object the prelude receives.
    pub(super) fn into_object(self, ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
        let host = Object::new(ctx.clone())?;
        host.set("tools", self.tools)?;
        host.set("unknownTool", self.unknown_tool)?;
        host.set("load", self.load)?;
        host.set("log", self.log)?;
        host.set("clock", self.clock)?;
        host.set("random", self.random)?;
        host.set("maxArrayLength", self.max_array_length)?;
        host.set("maxSortLength", guards::MAX_SORT_LENGTH)?;
        host.set("isProxy", self.is_proxy)?;
        host.set("programStack", self.program_stack)?;
        Ok(host)
    }
}

/// The host's side of the timers, made when the timer table (42_timer_table.js) loads:
/// `{ setTimer(id, milliseconds), clearTimer(id) }`, which the run's event loop keeps (see
/// `timers.rs`).
fn timer_functions<'js>(ctx: &Ctx<'js>, state: &Shared) -> rquickjs::Result<Object<'js>> {
    let engine = Object::new(ctx.clone())?;
    engine.set_prototype(None)?;
    let set_state = state.clone();
    engine.set(
        "setTimer",
        Function::new(ctx.clone(), move |id: f64, ms: f64| {
            lock(&set_state).timers.set(id as u64, ms);
        })?,
    )?;
    let clear_state = state.clone();
    engine.set(
        "clearTimer",
        Function::new(ctx.clone(), move |id: f64| {
            lock(&clear_state).timers.clear(id as u64);
        })?,
    )?;
    Ok(engine)
}

/// The host's side of `tools.$search` and `tools.$describe`, made when the discovery module
/// loads (a run that never calls them makes neither): an object without prototype holding
/// `searchTools(query, limit)` → `[{name, description}, …]` (see
/// [`crate::discovery::search`]) and `describeTools(names)` → the declarations of those
/// tools, which throws when one is no tool (see [`crate::discovery::describe`]).
fn discovery_functions<'js>(
    ctx: &Ctx<'js>,
    state: &Shared,
    bridge: &BridgeSlot<'js>,
    floor: &StackFloor,
) -> rquickjs::Result<Object<'js>> {
    let (search_state, search_bridge) = (state.clone(), bridge.clone());
    let search_floor = floor.clone();
    let search_tools = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>,
              query: rquickjs::String<'js>,
              limit: f64|
              -> rquickjs::Result<Value<'js>> {
            // The conversion of what it found can call `BigInt`.
            search_floor.enter(&ctx)?;
            let query = unicode(&ctx, &query, "the query")?;
            let limit = if limit >= 1.0 {
                (limit as usize).min(crate::discovery::MAX_SEARCH_LIMIT)
            } else {
                crate::discovery::DEFAULT_SEARCH_LIMIT
            };
            let found: Vec<serde_json::Value> = with_catalog(&search_state, |c| {
                c.search(&query, limit)
                        .into_iter()
                        .map(|t| serde_json::json!({"name": t.name, "description": t.tagged_description()}))
                        .collect()
            });
            let slot = search_bridge.borrow();
            let Some(b) = slot.as_ref() else {
                return Err(Exception::throw_message(&ctx, "the run has ended"));
            };
            json_to_js(&ctx, &b.prims, serde_json::Value::Array(found))
        },
    )?;
    let (describe_state, describe_floor) = (state.clone(), floor.clone());
    let describe_tools = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, names: Vec<rquickjs::String<'js>>| -> rquickjs::Result<String> {
            // Rendering declarations recurses in Rust: not from the bottom of a recursion.
            describe_floor.enter(&ctx)?;
            let names = names
                .iter()
                .map(|n| unicode(&ctx, n, "a tool name"))
                .collect::<rquickjs::Result<Vec<String>>>()?;
            with_catalog(&describe_state, |c| c.describe(&names))
                .map_err(|message| throw_text(&ctx, &message))
        },
    )?;

    let engine = Object::new(ctx.clone())?;
    engine.set_prototype(None)?;
    engine.set("searchTools", search_tools)?;
    engine.set("describeTools", describe_tools)?;
    Ok(engine)
}

/// `text` as Rust text; a lone surrogate (which no tool name or word has) throws a message
/// naming `what` (see [`throw_text`]).
fn unicode<'js>(
    ctx: &Ctx<'js>,
    text: &rquickjs::String<'js>,
    what: &str,
) -> rquickjs::Result<String> {
    text.to_string().map_err(|_| {
        throw_text(
            ctx,
            &format!("{what} is not valid Unicode (it has a lone surrogate)"),
        )
    })
}

/// Throws `message` as a string, which the discovery module makes the `ToolCallError`'s
/// message: an `Error` would get its message by assignment, which a program that froze
/// `Error.prototype` or put a `message` accessor on it could refuse or read.
fn throw_text(ctx: &Ctx<'_>, message: &str) -> rquickjs::Error {
    match rquickjs::String::from_str(ctx.clone(), message) {
        Ok(text) => ctx.throw(text.into_value()),
        Err(e) => e,
    }
}

/// Runs `f` on the run's catalog: the declarations of the tools it sees (those registered
/// when it started that are still registered at its first `$search` or `$describe`).
fn with_catalog<T>(state: &Shared, f: impl FnOnce(&mut crate::discovery::Catalog) -> T) -> T {
    let mut guard = lock(state);
    let st = &mut *guard;
    let calls = &st.calls;
    let catalog = st.catalog.get_or_insert_with(|| {
        let names = calls.tool_names();
        let mut tools = crate::declarations::tool_decls(calls.registry());
        tools.retain(|t| names.iter().any(|n| **n == *t.name));
        crate::discovery::Catalog::new(tools)
    });
    f(catalog)
}

/// What the host reads back from the prelude's `internals` object (each field names the
/// prelude file that sets it).
pub(super) struct Internals<'js> {
    /// `primordials` (00_primordials.js): the built-ins the host reads, as they were before
    /// the program ran (no program code can reach this object).
    pub(super) primordials: Object<'js>,
    /// `failed(name, error, site)` (20_tools.js): the rejected promise of a call that failed
    /// before or while starting.
    pub(super) failed: Function<'js>,
    /// `toolError(name, message, site)` (20_tools.js): the `ToolCallError` a call in flight
    /// rejects with.
    pub(super) tool_error: Function<'js>,
    /// `sites` (20_tools.js): a WeakMap from each host-made `ToolCallError` to where it
    /// surfaced: the number of the await the program had reached, or, for an unknown tool,
    /// the engine's stack text where the program named it (read by `Primordials::site_of`).
    pub(super) sites: Object<'js>,
    /// `format()` (30_console.js): loads the printer (31_inspect.js) the first time, and
    /// returns its `{ formatArgs, inspect }` (see [`Internals::inspect`]).
    format: Function<'js>,
    /// The internals object itself, for what is there only once a lazy module loaded.
    object: Object<'js>,
    /// `runDefault(main, state, isClassSource)` (90_run_default.js): runs the program function
    /// with its state, then, for `export default <fn>`, the exported function (unless
    /// `isClassSource` takes its source for a class's).
    pub(super) run_default: Function<'js>,
    /// `startClock(journaled)` (40_timers.js): `performance` counts from now (an engine may
    /// be built long before its run); `journaled`: the clock and `Math.random` come from the
    /// run's journal.
    pub(super) start_clock: Function<'js>,
    /// `checkArrayCall(name, self, args)` (35_guards.js): the full checks of a guarded
    /// array call that did not pass at once (see `guards.rs`).
    pub(super) check_array_call: Function<'js>,
}

impl<'js> Internals<'js> {
    /// `fireTimer(id)`: runs timer `id`'s callback. The timer table (42_timer_table.js)
    /// puts it in the internals object when it loads, which is before any timer is set.
    ///
    /// # Errors
    /// The engine's, when it is not there (no timer was ever set).
    pub(super) fn fire_timer(&self) -> rquickjs::Result<Function<'js>> {
        self.object.get("fireTimer")
    }

    /// `value` shown as `console.log` shows it (well-formed: lone surrogates as U+FFFD).
    /// Loads the printer the first time.
    ///
    /// # Errors
    /// What the printer threw (running out of stack, say), or the engine's error.
    pub(super) fn inspect<R: rquickjs::FromJs<'js>>(
        &self,
        value: Value<'js>,
    ) -> rquickjs::Result<R> {
        let formatter: Object<'js> = self.format.call(())?;
        formatter.get::<_, Function<'js>>("inspect")?.call((value,))
    }

    /// Reads every field from the `internals` object the prelude filled in.
    pub(super) fn read(internals: &Object<'js>) -> rquickjs::Result<Self> {
        Ok(Internals {
            primordials: internals.get("primordials")?,
            failed: internals.get("failed")?,
            tool_error: internals.get("toolError")?,
            sites: internals.get("sites")?,
            format: internals.get("format")?,
            object: internals.clone(),
            run_default: internals.get("runDefault")?,
            start_clock: internals.get("startClock")?,
            check_array_call: internals.get("checkArrayCall")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::dispatch::registry::unknown_tool_message;

    #[test]
    fn unknown_tools_get_a_suggestion() {
        let tools = vec!["read_file".to_owned(), "grep".to_owned()];
        assert_eq!(
            unknown_tool_message("readFile", &tools),
            "unknown tool \"readFile\"; did you mean \"read_file\"? Available tools: read_file, grep"
        );
        let mcp = vec![
            "memory.create_entities".to_owned(),
            "memory.create_relations".to_owned(),
            "memory.delete_entities".to_owned(),
        ];
        assert_eq!(
            unknown_tool_message("create_entity", &mcp),
            "unknown tool \"create_entity\"; did you mean \"memory.create_entities\"? Available tools: memory.create_entities, memory.create_relations, memory.delete_entities"
        );
        let near: Vec<String> = ["read_a", "zzzzzz", "read_b", "read_c", "read_d"]
            .map(str::to_owned)
            .into();
        assert_eq!(
            unknown_tool_message("read_x", &near),
            "unknown tool \"read_x\"; did you mean \"read_a\", \"read_b\" or \"read_c\"? Available tools: read_a, zzzzzz, read_b, read_c, read_d"
        );
        assert_eq!(
            unknown_tool_message("zzz", &tools),
            "unknown tool \"zzz\"; available tools: read_file, grep"
        );
    }
}
