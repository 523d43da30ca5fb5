// The five largest Rust files under src/, with their line counts and how many `pub fn`
// each declares. Run it from the repository's root:
//
//   cargo run --release -- run examples/largest_rust_files.ts --root .

interface FileStat {
  path: string;
  lines: number;
  pub_fns?: number;
}

const { matches } = await tools.glob({ pattern: "src/**/*.rs" });

// Read every file concurrently: one line is enough, `total_lines` counts them all.
const stats: FileStat[] = await Promise.all(
  matches.map(async (path: string) => {
    const file = await tools.read_file({ path, limit: 1 });
    return { path, lines: file.total_lines };
  }),
);

const largest = stats.sort((a, b) => b.lines - a.lines).slice(0, 5);

// Count `pub fn` in the five largest, again concurrently.
await Promise.all(
  largest.map(async (file) => {
    const hits = await tools.grep({ pattern: String.raw`\bpub fn\b`, path: file.path });
    file.pub_fns = hits.total;
  }),
);

console.log(`${matches.length} Rust files under src/; the five largest:`);
for (const f of largest) {
  console.log(`${String(f.lines).padStart(6)} lines  ${String(f.pub_fns).padStart(3)} pub fn  ${f.path}`);
}
return largest;
