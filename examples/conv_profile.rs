fn main() {
    use codemode::bench_support::Crossing::*;
    let setup = "Array.from({length: 6300}, (_, i) => ({id: i, name: 'record number ' + i, score: i * 1.25, active: i % 2 === 0, tags: ['alpha', 'beta', 'gamma'], nested: {depth: 1, label: 'x' + i, values: [i, i + 1, i + 2]}}))";
    let only = std::env::args().nth(1);
    for (name, c) in [
        ("direct", Direct),
        ("json", JsonText),
        ("direct->rust", DirectToRust),
        ("direct->js", DirectToJs),
        ("json->rust", JsonTextToRust),
        ("json->js", JsonTextToJs),
    ] {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let (t, _) = codemode::bench_support::time_round_trips(setup, c, 20);
        eprintln!("{name}: {:?}", t / 20);
    }
}
