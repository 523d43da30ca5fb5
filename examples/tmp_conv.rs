use codemode::bench_support::{Crossing, time_round_trips};
const ONE_MB: &str = "Array.from({length: 6300}, (_, i) => ({id: i, name: 'record number ' + i, score: i * 1.25, active: i % 2 === 0, tags: ['alpha', 'beta', 'gamma'], nested: {depth: 1, label: 'x' + i, values: [i, i + 1, i + 2]}}))";
fn main() {
    for c in [
        Crossing::Direct,
        Crossing::JsonText,
        Crossing::DirectToRust,
        Crossing::DirectToJs,
        Crossing::JsonTextToRust,
        Crossing::JsonTextToJs,
    ] {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let (d, _) = time_round_trips(ONE_MB, c, 10);
            best = best.min(d.as_secs_f64() * 100.0);
        }
        println!("{c:?}: {best:.2} ms");
    }
}
