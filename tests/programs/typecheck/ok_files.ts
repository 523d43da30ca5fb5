// expect: ok
const [found, matches] = await Promise.all([
  tools.glob({ pattern: "src/**/*.rs" }),
  tools.grep({ pattern: "pub fn", glob: "*.rs", max_results: 10 }),
]);
const sizes: { path: string; lines: number }[] = [];
for (const path of found.matches.slice(0, 3)) {
  const file = await tools.read_file({ path, offset: 1, limit: 5 });
  sizes.push({ path: file.path, lines: file.total_lines });
}
console.log(`${matches.total} matches`, matches.matches[0]?.line_number);
return sizes;
