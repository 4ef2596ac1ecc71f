// The catalog index: search and filters over the pre-rendered list, in the browser (no server).
// It only hides and shows rows; every text on the page was written (escaped) when it was built.
"use strict";

function start() {
  const form = document.getElementById("filters");
  const rows = Array.from(document.querySelectorAll("#results > li"));
  const q = document.getElementById("q");
  const selects = ["f-kind", "f-verdict", "f-lifecycle"].map((id) => document.getElementById(id));
  const count = document.getElementById("count");
  if (!form || !q || !count || selects.some((s) => !s)) return;
  const [kind, verdict, lifecycle] = selects;

  function apply() {
    const words = q.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const row of rows) {
      const d = row.dataset;
      const ok = words.every((w) => d.text.includes(w))
        && (!kind.value || d.kind === kind.value)
        && (!verdict.value || d.verdict === verdict.value)
        && (!lifecycle.value || d.lifecycle === lifecycle.value);
      row.hidden = !ok;
      if (ok) shown += 1;
    }
    count.textContent = `${shown} of ${rows.length} shown`;
  }

  form.addEventListener("submit", (e) => e.preventDefault());
  q.addEventListener("input", apply);
  for (const s of selects) s.addEventListener("change", apply);
  form.hidden = false;
  apply();
  document.body.dataset.ready = "true";
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
