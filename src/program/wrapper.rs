//! The function a program's body becomes, and the mark that records its awaits.
//!
//! The body runs as `(async function program() {` … `})`, opening on the body's first line
//! so that lines stay the model's; the code evaluates to
//! `[program, () => lastAwait, () => implicit, () => exported]`.

/// The wrapper around the program body and its await mark (see [`wrapper`]).
pub(super) struct Wrapper {
    /// Put before the program body, on its first line: the program's function sits in a
    /// closure with the await mark, the implicit-result flag and the exported value, and
    /// the code evaluates to `[program, () => lastAwait, () => implicit, () => exported]`.
    pub(super) prefix: String,
    /// Put after the program body.
    pub(super) suffix: String,
    /// The variable that records the await about to happen: `await x` becomes
    /// `await (MARK = n, x)`, an assignment to a closure variable (a call per await cost a
    /// measurable share of a sequential tool call).
    pub(super) mark: String,
    /// The variable set just before the program returns the value of its last expression
    /// statement (`IMPLICIT = true; return x`): the run then knows its result was not asked
    /// for with `return` (see [`Program::code`](super::Program::code)).
    pub(super) implicit: String,
    /// The variable an `export default` value is assigned to where the export stands
    /// (`DEFAULT = (x);`); the body then ends with `return DEFAULT;`, so statements after
    /// the export still run, as in a module.
    pub(super) default: String,
}

/// The wrapper of this process. The mark's name ends in 16 random hex digits, so that no
/// program declares, shadows or reads it by accident (a program's own `__codemode_at`
/// would otherwise have been overwritten at every await).
pub(super) fn wrapper() -> &'static Wrapper {
    static WRAPPER: std::sync::OnceLock<Wrapper> = std::sync::OnceLock::new();
    WRAPPER.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(0x636f_6465_6d6f_6465);
        let tag = hasher.finish();
        let mark = format!("__codemode_at_{tag:016x}");
        let implicit = format!("__codemode_implicit_{tag:016x}");
        let default = format!("__codemode_default_{tag:016x}");
        Wrapper {
            prefix: format!(
                "(function(){{let {mark}=0,{implicit}=false,{default};return[async function program() {{"
            ),
            suffix: format!("\n}},()=>{mark},()=>{implicit},()=>{default}]}})()"),
            mark,
            implicit,
            default,
        }
    })
}

/// The prefix's length in characters (the columns it shifts on line 1).
pub(super) fn prefix_chars() -> u32 {
    wrapper().prefix.chars().count() as u32
}
