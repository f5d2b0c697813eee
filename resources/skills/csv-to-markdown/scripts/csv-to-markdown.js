// Convert a CSV file in the workspace into a Markdown table (plain ES2020, QuickJS worker).
// Uses only console.log, scriptArgs and the workbench's global fs object.

// In the workbench's QuickJS worker, scriptArgs holds the arguments after the script's path.
const clean = scriptArgs.includes("--clean");
const input = scriptArgs.find((arg) => !arg.startsWith("--")) || "data.csv";
const output = input.replace(/\.csv$/i, "") + ".md";

const SAMPLE = "posture,isolation,network\nlocal,none,yes\nhardened,limits,yes\ndocker,container,no\n";

function parseCsvLine(line) {
  // Fields separated by commas; a field in double quotes may hold commas and "" for a quote.
  const fields = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted && c === '"' && line[i + 1] === '"') {
      field += '"';
      i++;
    } else if (c === '"') {
      quoted = !quoted;
    } else if (c === "," && !quoted) {
      fields.push(field);
      field = "";
    } else {
      field += c;
    }
  }
  fields.push(field);
  return fields;
}

function toMarkdown(rows) {
  const escape = (cell) => cell.replace(/\|/g, "\\|").trim();
  const [header, ...body] = rows;
  const lines = [
    "| " + header.map(escape).join(" | ") + " |",
    "|" + header.map(() => "---").join("|") + "|",
  ];
  for (const row of body) {
    const cells = header.map((_, i) => escape(row[i] || ""));
    lines.push("| " + cells.join(" | ") + " |");
  }
  return lines.join("\n") + "\n";
}

if (clean) {
  if (fs.exists(output)) {
    fs.remove(output);
    console.log(`removed ${output}`);
  } else {
    console.log(`nothing to clean: ${output} does not exist`);
  }
} else {
  if (!fs.exists(input)) {
    fs.writeText(input, SAMPLE);
    console.log(`${input} was missing; wrote a sample`);
  }
  const rows = fs
    .readText(input)
    .split(/\r?\n/)
    .filter((line) => line.trim() !== "")
    .map(parseCsvLine);
  if (rows.length === 0) {
    throw new Error(`${input} is empty`);
  }
  fs.writeText(output, toMarkdown(rows));
  console.log(`wrote ${output}: ${rows.length - 1} row(s), ${rows[0].length} column(s)`);
  console.log("workspace now holds: " + fs.list(".").join(", "));
}
