// The bridge to the host. `host` is an object of native functions made for this run:
//   tools: an object without prototype holding one native function per tool, `(args)`
//     -> a promise of the call's result (see 20_tools.js for the helpers it uses), under
//     the tool's name (enumerable) and its alias (not enumerable), neither writable nor
//     configurable
//   unknownTool(name) -> message naming the available tools
//   log(level, text)
//   load(module, primordials) -> what a module loaded on first use gives, the first time
//     it is needed: "discovery" -> { search, describe, unknown } (22_discovery.js, with
//     the host's searchTools(query, limit) -> [{name, description}, ...] and
//     describeTools(names) -> the declarations of those tools, which throws for a name
//     that is no tool);
//     "inspect" -> { formatArgs, inspect } (31_inspect.js); "arrayChecks" ->
//     check(name, self, args) (36_array_checks.js); "journalClock" -> undefined
//     (41_journal_clock.js); "timers" -> { start, stop, fire } (42_timer_table.js, with
//     the host's setTimer(id, milliseconds) and clearTimer(id))
//   clock() -> milliseconds since the epoch (fractional), recorded or replayed by a run
//     that may pause; random() -> the next Math.random value of such a run
//   maxArrayLength: the longest array the memory limit can hold; maxSortLength: the
//     longest a sort without a comparator may sort (35_guards.js)
//   isProxy(value) -> whether value is a Proxy (35_guards.js)
//   programStack(text) -> a stack trace with the program's positions in its own source
//     (00_primordials.js)
// The Rust side builds it as `Host` in src/sandbox/host.rs (keep the two in step). It is
// the prelude function's parameter, so every file reads it directly; nothing reaches the
// program's global scope from it. What the host reads back from `internals` is listed by
// `Internals` in the same Rust file. (This file has no code of its own.)
