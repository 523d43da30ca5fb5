//! The function a program's body becomes, and the state it records for the host.
//!
//! The body runs as `0,async function program(STATE) {` … `}`, the opening on a line of
//! its own before the body's first line, so that every line of the body is one more than
//! the model's and every column is the model's (the engine counts some columns of its own
//! first line from 0, and the rest from 1); the code evaluates to that function. The host calls
//! it with a fresh state object of its own (no prototype, own data properties
//! [`AWAIT_KEY`], [`IMPLICIT_KEY`] and [`EXPORTED_KEY`]), which the edited body writes and
//! the host reads.
//!
//! The state is a parameter, not a variable of an enclosing function: a program function
//! nested in another cost the engine's parser about a third more on a long program (every
//! name resolves through one more scope), and the closure with its three getters about
//! 10 µs of a short run. No parenthesis opens the code either: one makes the parser scan
//! ahead to its match, over the whole program, for a possible arrow function.

/// The state's property that holds the number of the await the program last reached (0
/// before the first): `await x` becomes `await (STATE.at = n, x)`.
pub(crate) const AWAIT_KEY: &str = "at";

/// The state's property set just before the program returns the value of its last
/// expression statement (`STATE.implicit = true; return x`): the run then knows its result
/// was not asked for with `return` (see [`Program::code`](super::Program::code)).
pub(crate) const IMPLICIT_KEY: &str = "implicit";

/// The state's property an `export default` value is assigned to where the export stands
/// (`STATE.exported = (x);`); the body then ends with `return STATE.exported;`, so
/// statements after the export still run, as in a module.
pub(crate) const EXPORTED_KEY: &str = "exported";

/// The wrapper around the program body and the places it writes (see [`wrapper`]).
pub(super) struct Wrapper {
    /// Put before the program body, on a line of its own: the engine counts the columns
    /// of its first line from 0 for some positions (a call's, a property read's) and from 1
    /// for others, and from 1 on every later line.
    pub(super) prefix: String,
    /// Put after the program body.
    pub(super) suffix: String,
    /// Where the await mark goes: `STATE.at` (see [`AWAIT_KEY`]). An assignment, not a
    /// call: a call per await cost a measurable share of a sequential tool call.
    pub(super) mark: String,
    /// Where the implicit-result flag goes: `STATE.implicit` (see [`IMPLICIT_KEY`]).
    pub(super) implicit: String,
    /// Where the `export default` value goes: `STATE.exported` (see [`EXPORTED_KEY`]).
    pub(super) default: String,
}

/// The wrapper of this process. The state's name ends in 16 random hex digits, so that no
/// program declares, shadows or reads it by accident.
pub(super) fn wrapper() -> &'static Wrapper {
    static WRAPPER: std::sync::OnceLock<Wrapper> = std::sync::OnceLock::new();
    WRAPPER.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(0x636f_6465_6d6f_6465);
        let tag = hasher.finish();
        let state = format!("__codemode_{tag:016x}");
        Wrapper {
            prefix: format!("0,async function program({state}) {{\n"),
            suffix: "\n}".to_owned(),
            mark: format!("{state}.{AWAIT_KEY}"),
            implicit: format!("{state}.{IMPLICIT_KEY}"),
            default: format!("{state}.{EXPORTED_KEY}"),
        }
    })
}
