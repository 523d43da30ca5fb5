//! Profiling aid for the validation bench: `cargo run --release --example val_profile`.

#[path = "../benches/support/realistic.rs"]
mod realistic;

fn main() {
    let (params, value) = realistic::realistic();
    let t = std::time::Instant::now();
    for _ in 0..200_000 {
        std::hint::black_box(params.validate(std::hint::black_box(&value)).is_ok());
    }
    eprintln!("{:?} per validation", t.elapsed() / 200_000);
}
