//! The JavaScript installed into every sandbox before the program (`js-prelude/`), in
//! order. Each file is the body of `function (host, internals) { … }`, evaluated under a
//! stable name for stack traces (`codemode:prelude/20_tools.js`).

use rquickjs::context::EvalOptions;
use rquickjs::{Ctx, Function, Object};

/// The prelude files, in load order: (name, source).
pub(crate) const PRELUDE: &[(&str, &str)] = &[
    (
        "00_primordials.js",
        include_str!("../../js-prelude/00_primordials.js"),
    ),
    ("10_host.js", include_str!("../../js-prelude/10_host.js")),
    ("20_tools.js", include_str!("../../js-prelude/20_tools.js")),
    (
        "30_console.js",
        include_str!("../../js-prelude/30_console.js"),
    ),
    (
        "35_guards.js",
        include_str!("../../js-prelude/35_guards.js"),
    ),
    (
        "40_timers.js",
        include_str!("../../js-prelude/40_timers.js"),
    ),
    (
        "90_lockdown.js",
        include_str!("../../js-prelude/90_lockdown.js"),
    ),
];

/// Evaluates every prelude file with the host object; returns the internals object the
/// files filled in.
pub(crate) fn load<'js>(ctx: &Ctx<'js>, host: Object<'js>) -> rquickjs::Result<Object<'js>> {
    let internals = Object::new(ctx.clone())?;
    for (name, source) in PRELUDE {
        let mut options = EvalOptions::default();
        options.global = true;
        options.strict = false;
        options.filename = Some(format!("codemode:prelude/{name}"));
        let code = format!("(function (host, internals) {{{source}\n}})");
        let file: Function<'js> = ctx.eval_with_options(code, options)?;
        file.call::<_, ()>((host.clone(), internals.clone()))?;
    }
    Ok(internals)
}

#[cfg(test)]
mod tests {
    use super::PRELUDE;

    #[test]
    fn every_prelude_file_on_disk_is_listed_in_order() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("js-prelude");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".js"))
            .collect();
        on_disk.sort();
        let listed: Vec<String> = PRELUDE.iter().map(|(n, _)| (*n).to_owned()).collect();
        assert_eq!(on_disk, listed);
    }
}
