// Word statistics of this repository's Markdown files, with a command-backed tool from
// examples/tools/manifest.json (a Python script) next to the built-in file tools:
//
//   cargo run --release -- run examples/word_stats.ts --root . --tools examples/tools/manifest.json
const { matches } = await tools.glob({ pattern: "*.md" });
const files = await Promise.all(matches.map((path) => tools.read_file({ path })));
const stats = await Promise.all(
  files.map(async (f) => ({ path: f.path, ...(await tools.word_stats({ text: f.content, top: 3 })) })),
);
for (const s of stats) {
  console.log(`${s.path}: ${s.words} words, ${s.lines} lines; most frequent: ${s.top.map((t) => `${t.word} (${t.count})`).join(", ")}`);
}
return stats.map((s) => ({ path: s.path, words: s.words }));
