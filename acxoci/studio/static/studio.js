// ACX Studio: edit a workflow (acx.cal/1) or an Agent Graph (acx.agent-graph/1) in a form and as
// JSON, see it as a graph, lint it live through the builder's one read-only endpoint, remix a
// signed parent, export a download. Every string from a document reaches the page as text
// (textContent, form values), never as markup; the graph picture is SVG the builder escaped.
"use strict";

const API = "/api/lint";
const $ = (id) => document.getElementById(id);

const WORKFLOW = {
  schemaVersion: "acx.cal/1",
  id: "my-team",
  version: "0.1.0",
  name: "My agent team",
  description: "Describe what this team does, step by step, in at least twenty characters.",
  license: "Apache-2.0",
  authors: [{ name: "Your name" }],
  tags: ["agent-team"],
  participants: [{ alias: "worker", bind: "slot", slot: { role: "backend_dev" } }],
  start: "begin",
  nodes: [
    { id: "begin", type: "event", event: "start" },
    { id: "work", type: "task", agent: "worker", action: "Do the work",
      completion: { type: "artifact", produces: "result" } },
    { id: "done", type: "event", event: "end" },
  ],
  edges: [{ from: "begin", to: "work" }, { from: "work", to: "done" }],
};

const GRAPH = {
  schemaVersion: "acx.agent-graph/1",
  id: "my-graph",
  version: "0.1.0",
  name: "My agent graph",
  description: "Who talks to whom, about which knowledge, and why.",
  license: "Apache-2.0",
  authors: [{ name: "Your name" }],
  tags: ["agent-graph"],
  limits: { maxPropagationHops: 4, maxFanout: 4 },
  actors: [
    { id: "lead", kind: "agent", description: "Owns the outcome and decides." },
    { id: "helpers", kind: "group", description: "Agents that do the work and report back.",
      cardinality: { min: 1, max: 3 } },
  ],
  knowledge: [
    { id: "brief", kind: "requirement", description: "What to do and why; a description, never the content.",
      stewards: ["lead"], audience: ["helpers"] },
    { id: "report", kind: "status", description: "Progress, results and blockers.",
      stewards: ["helpers"], audience: ["lead"] },
  ],
  routes: [
    { id: "lead-asks", from: "lead", to: ["helpers"], intent: "request", obligation: "must",
      purpose: "Ask the helpers for the work.", carries: ["brief"], returns: ["report"],
      triggers: [{ type: "event", events: ["work.requested"] }],
      expects: { via: "helpers-report", withinMs: 3600000 } },
    { id: "helpers-report", from: "helpers", to: ["lead"], intent: "report", obligation: "must",
      purpose: "Return the results to the lead.", carries: ["report"],
      triggers: [{ type: "event", events: ["work.completed"] }] },
  ],
};

const n = (list) => (Array.isArray(list) ? list.length + 1 : 1);
const KINDS = {
  workflow: {
    label: "Workflow (acx.cal/1)",
    suffix: ".cal.json",
    fields: ["id", "version", "name", "description", "license", "homepage", "start"],
    lists: {
      participants: [["Add participant", (d) => ({ alias: `role-${n(d.participants)}`, bind: "slot",
        slot: { role: "backend_dev" } })]],
      rac: [["Add RAC item", (d) => ({ id: `context-${n(d.rac)}`, kind: "wiki", required: true,
        description: "What this knowledge is, in prose (never its content).",
        check: { type: "manual", hint: "how to confirm it is there" } })]],
      variables: [["Add variable", (d) => ({ name: `var-${n(d.variables)}`, type: "string" })]],
      nodes: [
        ["Add task", (d) => ({ id: `task-${n(d.nodes)}`, type: "task", agent: "", action: "Describe the step",
          completion: { type: "artifact", produces: "result" } })],
        ["Add gateway", (d) => ({ id: `gate-${n(d.nodes)}`, type: "gateway", gateway: "exclusive" })],
        ["Add end event", (d) => ({ id: `end-${n(d.nodes)}`, type: "event", event: "end" })],
      ],
      edges: [["Add edge", () => ({ from: "", to: "" })]],
      authors: [["Add author", () => ({ name: "" })]],
    },
    objects: ["limits"],
  },
  "agent-graph": {
    label: "Agent Graph (acx.agent-graph/1)",
    suffix: ".agent-graph.json",
    fields: ["id", "version", "name", "description", "license", "homepage"],
    lists: {
      actors: [["Add actor", (d) => ({ id: `actor-${n(d.actors)}`, kind: "agent",
        description: "What this actor is responsible for." })]],
      knowledge: [["Add knowledge module", (d) => ({ id: `knowledge-${n(d.knowledge)}`, kind: "requirement",
        description: "What this knowledge is; a description, never the content.", stewards: [] })]],
      routes: [["Add route", (d) => ({ id: `route-${n(d.routes)}`, from: "", to: [], intent: "inform",
        obligation: "should", purpose: "Why this route exists.", carries: [] })]],
      loops: [["Add loop", (d) => ({ id: `loop-${n(d.loops)}`, kind: "acx-workflow",
        description: "A workflow this graph runs." })]],
      convergence: [["Add convergence point", (d) => ({ id: `converge-${n(d.convergence)}`,
        description: "Where signals meet.", inputs: [], steward: "" })]],
      authors: [["Add author", () => ({ name: "" })]],
    },
    objects: ["limits"],
  },
};

const state = { doc: null, kind: null, seq: 0, timer: 0, signed: null };

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, "");
    else if (value !== false && value != null) node.setAttribute(key, String(value));
  }
  for (const child of children) node.append(child);
  return node;
}

function kindOf(doc) {
  return doc && doc.schemaVersion === "acx.agent-graph/1" ? "agent-graph" : "workflow";
}

function say(text, bad = false) {
  const m = $("message");
  m.textContent = text;
  m.classList.toggle("error", bad);
}

// ---- the document ------------------------------------------------------------------------------

function load(doc, { note = "", text = null } = {}) {
  state.doc = doc;
  state.kind = kindOf(doc);
  $("json").value = text !== null ? text : JSON.stringify(doc, null, 2) + "\n";
  $("json-error").textContent = "";
  $("export").disabled = false;
  renderForm();
  say(note);
  lintSoon(0);
}

function changed({ structure = false } = {}) {
  $("json").value = JSON.stringify(state.doc, null, 2) + "\n";
  if (structure) renderForm();
  lintSoon();
}

// ---- the form ----------------------------------------------------------------------------------

let uid = 0;
const fieldId = () => `f${++uid}`;

function scalarInput(label, value, onValue, { optional = false, long = false, name = label } = {}) {
  const id = fieldId();
  let input;
  if (typeof value === "boolean") {
    input = el("input", { id, name, type: "checkbox" });
    input.checked = value;
    input.addEventListener("change", () => onValue(input.checked));
    return el("div", { class: "field check" }, input, el("label", { for: id, text: label }));
  }
  if (typeof value === "number") {
    input = el("input", { id, name, type: "number", step: "any" });
    input.value = String(value);
    input.addEventListener("input", () => {
      if (input.value !== "" && Number.isFinite(Number(input.value))) onValue(Number(input.value));
    });
  } else {
    input = long ? el("textarea", { id, name, rows: 3 }) : el("input", { id, name, type: "text" });
    input.value = value == null ? "" : String(value);
    input.addEventListener("input", () => onValue(optional && input.value === "" ? undefined : input.value));
  }
  return el("div", { class: "field" }, el("label", { for: id, text: label }), input);
}

function jsonInput(label, value, onValue, name = label) {
  const id = fieldId();
  const area = el("textarea", { id, name, class: "mono", rows: 3, spellcheck: "false" });
  area.value = JSON.stringify(value, null, 1);
  const problem = el("span", { class: "error", role: "alert" });
  area.addEventListener("input", () => {
    try {
      onValue(JSON.parse(area.value));
      area.removeAttribute("aria-invalid");
      problem.textContent = "";
    } catch (err) {
      area.setAttribute("aria-invalid", "true");
      problem.textContent = "not valid JSON yet";
    }
  });
  return el("div", { class: "field" }, el("label", { for: id, text: `${label} (JSON)` }), area, problem);
}

// `name` is the field's JSON path (`start`, `nodes[2].action`): what it edits, for people and tests.
function valueEditor(label, value, onValue, name = label) {
  if (value === null || typeof value === "object") return jsonInput(label, value, onValue, name);
  return scalarInput(label, value, onValue, { long: typeof value === "string" && value.length > 60, name });
}

function itemEditor(listName, list, index) {
  const item = list[index];
  const title = item && typeof item === "object" && typeof (item.id ?? item.alias ?? item.name) === "string"
    ? `${listName}[${index}] ${item.id ?? item.alias ?? item.name}`
    : `${listName}[${index}]`;
  const box = el("fieldset", { class: "item" }, el("legend", { text: title }));
  if (item && typeof item === "object" && !Array.isArray(item)) {
    for (const key of Object.keys(item)) {
      box.append(valueEditor(key, item[key], (v) => {
        if (v === undefined) delete item[key];
        else item[key] = v;
        changed();
      }, `${listName}[${index}].${key}`));
    }
  } else {
    box.append(valueEditor("value", item, (v) => { list[index] = v; changed(); }, `${listName}[${index}]`));
  }
  box.append(el("button", {
    type: "button", class: "remove", "aria-label": `Remove ${title}`, text: "Remove",
    onclick: () => { list.splice(index, 1); changed({ structure: true }); },
  }));
  return box;
}

function listSection(name, adders) {
  const doc = state.doc;
  const list = Array.isArray(doc[name]) ? doc[name] : null;
  const count = list ? list.length : 0;
  const section = el("details", { class: "list", open: count <= 8 },
    el("summary", { text: `${name} (${count})` }));
  if (doc[name] !== undefined && !list) {
    section.append(jsonInput(name, doc[name], (v) => { doc[name] = v; changed(); }));
    return section;
  }
  (list || []).forEach((_, i) => section.append(itemEditor(name, list, i)));
  const buttons = el("div", { class: "adders" });
  for (const [label, make] of adders) {
    buttons.append(el("button", {
      type: "button", text: label,
      onclick: () => {
        if (!Array.isArray(doc[name])) doc[name] = [];
        doc[name].push(make(doc));
        changed({ structure: true });
      },
    }));
  }
  section.append(buttons);
  return section;
}

function renderForm() {
  const form = $("form");
  form.replaceChildren();
  const doc = state.doc;
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) {
    $("doc-kind").textContent = "The JSON source is not an object; fix it there.";
    return;
  }
  const spec = KINDS[state.kind];
  $("doc-kind").textContent = spec.label;
  const main = el("fieldset", { class: "item" }, el("legend", { text: "About" }));
  for (const key of spec.fields) {
    const value = doc[key];
    if (value !== undefined && typeof value !== "string") {
      main.append(valueEditor(key, value, (v) => { doc[key] = v; changed(); }));
      continue;
    }
    main.append(scalarInput(key, value, (v) => {
      if (v === undefined) delete doc[key];
      else doc[key] = v;
      changed();
    }, { optional: true, long: key === "description" }));
  }
  const tags = Array.isArray(doc.tags) && doc.tags.every((t) => typeof t === "string");
  if (tags || doc.tags === undefined) {
    main.append(scalarInput("tags (comma-separated)", (doc.tags || []).join(", "), (v) => {
      const list = (v || "").split(",").map((t) => t.trim()).filter(Boolean);
      if (list.length) doc.tags = list;
      else delete doc.tags;
      changed();
    }, { optional: true, name: "tags" }));
  }
  for (const key of spec.objects) {
    if (doc[key] !== undefined) main.append(jsonInput(key, doc[key], (v) => { doc[key] = v; changed(); }));
  }
  form.append(main);
  for (const [name, adders] of Object.entries(spec.lists)) form.append(listSection(name, adders));
}

// ---- talking to the builder ----------------------------------------------------------------------

// What is linted, remixed and exported: the JSON source exactly as it stands (a file opened keeps
// its bytes, so the builder's strict reading sees duplicate keys as acx does).
function bodyText() {
  return $("json").value;
}

async function ask(text, { remix = null } = {}) {
  const params = new URLSearchParams({ publish: $("publish").checked ? "1" : "0" });
  if (remix) params.set("remix", remix);
  const response = await fetch(`${API}?${params}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: text,
    credentials: "omit",
    cache: "no-store",
  });
  const data = await response.json();
  if (!response.ok) throw new Error((data.error && data.error.message) || `HTTP ${response.status}`);
  return data;
}

function lintSoon(delay = 250) {
  clearTimeout(state.timer);
  state.timer = setTimeout(lintNow, delay);
}

async function lintNow() {
  const seq = ++state.seq;
  document.body.dataset.lint = "pending";
  let answer = null;
  let failure = null;
  try {
    answer = await ask(bodyText());
  } catch (err) {
    failure = err.message;
  }
  if (seq !== state.seq) return; // a newer edit is being linted
  if (failure !== null) showFailure(failure);
  else showAnswer(answer);
  document.body.dataset.lint = "done";
}

function showFailure(message) {
  const head = $("lint-headline");
  head.textContent = `INVALID — ${message}`;
  head.className = "headline bad";
  $("lint-issues").replaceChildren();
  state.signed = null;
  $("remix").disabled = true;
}

function showAnswer(answer) {
  const head = $("lint-headline");
  head.textContent = answer.headline;
  head.className = `headline ${answer.lint.ok ? "ok" : "bad"}`;
  const issues = $("lint-issues");
  issues.replaceChildren(...answer.lint.issues.map((i) =>
    el("li", { class: `issue ${i.severity}`, "data-rule": i.rule, text: i.text })));
  if (answer.lint.issueCount > answer.lint.issues.length) {
    issues.append(el("li", { class: "muted", text: `… and ${answer.lint.issueCount - answer.lint.issues.length} more` }));
  }
  $("digest").textContent = answer.digest || "— (cannot be canonicalised)";
  const sig = answer.signature;
  $("signature").textContent = sig ? `${sig.trust}: ${sig.summary}` : "unsigned (a draft; sign it with acx)";
  state.signed = sig && sig.signed && sig.ok ? sig : null;
  $("remix").disabled = state.signed === null;
  showLineage();
  showGraph(answer.graph.svg);
}

function showLineage() {
  const lineage = state.doc && state.doc.lineage;
  const parents = lineage && Array.isArray(lineage.parents) ? lineage.parents : [];
  $("lineage").textContent = parents.length
    ? parents.map((p) => `${p.relation} of ${p.artifactType} ${p.publisherId}/${p.id}@${p.version || ""} ${p.digest}`).join("; ")
    : "—";
}

function showGraph(svgText) {
  const parsed = new DOMParser().parseFromString(svgText, "image/svg+xml");
  const root = parsed.documentElement;
  const box = $("graph");
  if (root.nodeName !== "svg" || parsed.getElementsByTagName("parsererror").length) {
    box.replaceChildren(el("p", { class: "error", text: "the graph could not be drawn" }));
    return;
  }
  box.replaceChildren(document.importNode(root, true));
}

async function remixText(text) {
  const relation = $("relation").value;
  let answer;
  try {
    answer = await ask(text, { remix: relation });
  } catch (err) {
    say(`Cannot remix: ${err.message}`, true);
    return;
  }
  if (!answer.remix || answer.remix.error) {
    say(`Cannot remix: ${answer.remix ? answer.remix.error : "no answer"}`, true);
    return;
  }
  const p = answer.remix.parent;
  load(answer.remix.draft, {
    note: `Draft: ${relation} of ${p.publisherId}/${p.id}@${p.version || ""} (${p.digest}). ` +
      "Its integrity block was removed; sign the export with acx.",
  });
}

// ---- files -------------------------------------------------------------------------------------

async function readFile(input) {
  const file = input.files && input.files[0];
  input.value = "";
  if (!file) return null;
  if (file.size > 1024 * 1024) {
    say(`${file.name} is larger than 1 MiB; the Studio does not analyse it.`, true);
    return null;
  }
  return file.text();
}

function openText(text, name) {
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    say(`${name} is not JSON: ${err.message}`, true);
    return;
  }
  load(doc, { note: `Opened ${name}.`, text });
}

function exportDraft() {
  if (!state.doc) return;
  const spec = KINDS[state.kind];
  const base = typeof state.doc.id === "string" && /^[a-z][a-z0-9._-]{0,127}$/.test(state.doc.id)
    ? state.doc.id : "draft";
  const text = bodyText();
  const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const a = el("a", { href: url, download: base + spec.suffix, class: "visually-hidden" });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
  say(`Exported ${base}${spec.suffix}. Lint, sign and verify it with acx before publishing.`);
}

function wire() {
  $("new-workflow").addEventListener("click", () => load(structuredClone(WORKFLOW), { note: "New workflow." }));
  $("new-graph").addEventListener("click", () => load(structuredClone(GRAPH), { note: "New agent graph." }));
  $("open-file").addEventListener("change", async (e) => {
    const text = await readFile(e.target);
    if (text !== null) openText(text, "the file");
  });
  $("import-parent").addEventListener("change", async (e) => {
    const text = await readFile(e.target);
    if (text !== null) remixText(text);
  });
  $("remix").addEventListener("click", () => remixText(bodyText()));
  $("export").addEventListener("click", exportDraft);
  $("publish").addEventListener("change", () => state.doc && lintSoon(0));
  $("json").addEventListener("input", () => {
    const text = $("json").value;
    try {
      const doc = JSON.parse(text);
      $("json-error").textContent = "";
      state.doc = doc;
      state.kind = kindOf(doc);
      $("export").disabled = false;
      renderForm();
    } catch (err) {
      $("json-error").textContent = `Not valid JSON yet: ${err.message}`;
    }
    lintSoon();
  });
  document.body.dataset.ready = "true";
}

wire();
