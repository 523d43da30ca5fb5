// The five largest Rust files under src/, with their line counts, how many functions each
// defines and how many of those are public (`pub` or `pub(crate)`). Run it from the
// repository's root:
//
//   cargo run --release -- run examples/largest_rust_files.ts --root .

interface FileStat {
  path: string;
  lines: number;
  fns?: number;
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

// Count the functions of the five largest, and the public ones, again concurrently.
const FN = String.raw`^\s*(pub(\([a-z]+\))?\s+)?((async|const|unsafe)\s+)*fn\s`;
const PUB_FN = String.raw`^\s*pub(\([a-z]+\))?\s+((async|const|unsafe)\s+)*fn\s`;
await Promise.all(
  largest.map(async (file) => {
    const [all, public_] = await Promise.all([
      tools.grep({ pattern: FN, path: file.path }),
      tools.grep({ pattern: PUB_FN, path: file.path }),
    ]);
    file.fns = all.total;
    file.pub_fns = public_.total;
  }),
);

console.log(`${matches.length} Rust files under src/; the five largest:`);
for (const f of largest) {
  console.log(
    `${String(f.lines).padStart(6)} lines  ${String(f.fns).padStart(3)} fn (${String(f.pub_fns).padStart(2)} pub)  ${f.path}`,
  );
}
return largest;
