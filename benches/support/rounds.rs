//! Ratios from rounds that alternate the sides being compared, so that a shared machine's
//! load, which drifts over seconds, weighs on every side alike.

use std::time::Duration;

/// The median of `samples` (the upper one of an even count).
///
/// # Panics
/// When `samples` is empty.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs `rounds` rounds of every side (`time(side)` runs side `side` once and returns how
/// long it took), rotating which side goes first each round; returns each side's median.
pub fn interleaved(
    rounds: usize,
    sides: usize,
    mut time: impl FnMut(usize) -> Duration,
) -> Vec<Duration> {
    let mut times = vec![Vec::with_capacity(rounds); sides];
    for round in 0..rounds {
        for i in 0..sides {
            let side = (i + round) % sides;
            times[side].push(time(side));
        }
    }
    times.into_iter().map(median).collect()
}
