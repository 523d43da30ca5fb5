// Renames a function across a small project, then runs the project's tests.
//
//   codemode run examples/rename_function.ts --root examples/rename_project \
//     --allow write --allow shell
//
// (On a copy: it changes the files it finds.)
const from = "circle_area";
const to = "area_of_circle";

// Every file that mentions the old name, then one exact replacement per file.
const found = await tools.grep({ pattern: `\\b${from}\\b`, path: "." });
const files = [...new Set(found.matches.map((m) => m.path))].sort();
const edits = await Promise.all(
  files.map((path) =>
    tools.edit_file({ path, old_text: from, new_text: to, replace_all: true }),
  ),
);
for (const e of edits) console.log(`${e.path}: ${e.replacements} replaced`);

// The project's own test script, through the shell.
const run = await tools.bash({ command: "python3 test_geometry.py" });
const passed = run.stdout.split("\n").filter((l) => l.startsWith("ok ")).map((l) => l.slice(3));
return { renamed: `${from} -> ${to}`, files, passed, exit_code: run.exit_code };
