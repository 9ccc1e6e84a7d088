// gradsync dashboard: the job list and workers (#/), and one job (#/job/ID)
// with its state and history, per-rank progress, loss / throughput /
// accuracy curves, the bounding phase, a stalled rank and its ranks' log. Polls the JSON
// API every 2 s. Plain DOM and SVG: no libraries, no build step.
"use strict";

const REFRESH_MS = 2000;
const main = document.getElementById("main");

function el(tag, attrs, ...children) {
  const ns = ["svg", "path", "line", "text", "circle", "g"].includes(tag)
    ? "http://www.w3.org/2000/svg" : null;
  const e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(typeof c === "object" ? c : String(c));
  }
  return e;
}

async function api(path) {
  const r = await fetch(path, { cache: "no-store" });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || `${path}: HTTP ${r.status}`);
  return body;
}

const stateName = (s) => (s || "").replace(/^(JOB|WORKER)_STATE_/, "");
const fmt = (v, d = 0) => Number(v || 0).toLocaleString("en-US",
  { minimumFractionDigits: d, maximumFractionDigits: d });
const when = (ms) => ms ? new Date(Number(ms)).toLocaleTimeString() : "";

// Replaces the page's content; null parts are left out.
function show(...parts) {
  main.replaceChildren(...parts.filter((p) => p !== null && p !== undefined));
}

function stateBadge(s) {
  const name = stateName(s);
  return el("span", { class: `state ${name}` }, name);
}

function table(headers, rows, attrs) {
  return el("table", attrs || {},
    el("tr", {}, headers.map((h) => el("th", {}, h))), rows);
}

async function renderList() {
  const [jobs, workers] = await Promise.all([api("/api/jobs"), api("/api/workers")]);
  const jobRows = (jobs.jobs || []).map((j) => {
    const m = j.metrics || {};
    return el("tr", { "data-job": j.id },
      el("td", {}, el("a", { href: `#/job/${j.id}` }, j.id)),
      el("td", {}, j.spec.name), el("td", {}, j.spec.model),
      el("td", {}, stateBadge(j.state)),
      el("td", { class: "num" }, j.world_size),
      el("td", { class: "num" }, fmt(m.samples_per_sec)),
      el("td", {}, j.message || ""));
  });
  const workerRows = (workers.workers || []).map((w) => el("tr", {},
    el("td", {}, w.worker_id), el("td", {}, w.host),
    el("td", {}, stateBadge(w.state)),
    el("td", {}, w.job_id ? `${w.job_id} rank ${w.rank}` : ""),
    el("td", {}, (w.devices || []).filter((d) => d.kind === "cuda").length || "cpu"),
    el("td", { class: "num" },
      `${fmt((Date.now() - Number(w.last_heartbeat_unix_ms)) / 1000, 1)} s`)));
  show(
    el("h1", {}, "Jobs"),
    jobRows.length ? table(["job", "name", "model", "state", "ranks",
      "samples/s", "message"], jobRows, { id: "jobs" })
      : el("p", { class: "muted" }, "no jobs yet"),
    el("h2", {}, "Workers"),
    workerRows.length ? table(["worker", "host", "state", "task", "GPUs",
      "last heartbeat"], workerRows, { id: "workers" })
      : el("p", { class: "muted" }, "no workers registered"));
}

// A line chart of points [[x, y], ...] as SVG; `cls` styles the curve.
function chart(title, points, cls, dots) {
  const W = 540, H = 220, L = 52, R = 12, T = 10, B = 28;
  const svg = el("svg", { width: W, height: H, class: `plot ${cls}` });
  if (points.length === 0) {
    svg.append(el("text", { x: L, y: H / 2 }, "no data yet"));
    return el("div", { class: "chart" }, el("div", { class: "title" }, title), svg);
  }
  const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
  const x0 = Math.min(0, ...xs), x1 = Math.max(...xs, x0 + 1);
  let y0 = Math.min(...ys), y1 = Math.max(...ys);
  if (cls !== "accuracy") y0 = Math.min(0, y0);
  if (y1 - y0 < 1e-9) { y1 += 0.5; y0 -= 0.5; }
  const px = (x) => L + (x - x0) / (x1 - x0) * (W - L - R);
  const py = (y) => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const y = y0 + (y1 - y0) * i / 4;
    svg.append(el("line", { class: "grid", x1: L, x2: W - R, y1: py(y), y2: py(y) }),
      el("text", { x: 4, y: py(y) + 4 }, Math.abs(y1 - y0) < 5 ? y.toFixed(2) : fmt(y)));
    const x = x0 + (x1 - x0) * i / 4;
    svg.append(el("text", { x: px(x) - 8, y: H - 8 }, fmt(x)));
  }
  svg.append(el("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }),
    el("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  const d = points.map((p, i) => `${i ? "L" : "M"}${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`).join(" ");
  svg.append(el("path", { class: `curve ${cls}`, d, "data-points": points.length }));
  if (dots) for (const p of points) svg.append(el("circle", { cx: px(p[0]), cy: py(p[1]), r: 3 }));
  return el("div", { class: "chart" }, el("div", { class: "title" }, title), svg);
}

function phaseName(p) {
  return { PHASE_DATA: "data loading", PHASE_COMPUTE: "compute",
    PHASE_ALLREDUCE: "all-reduce" }[p] || "";
}

async function renderJob(id) {
  const [job, curves, logs] = await Promise.all([api(`/api/jobs/${id}`),
    api(`/api/jobs/${id}/curves`), api(`/api/jobs/${id}/logs`)]);
  const m = job.metrics || {};
  const hosts = Object.fromEntries((job.ranks || []).map((r) => [r.rank, r]));
  const rankRows = (m.ranks || []).map((r) => {
    const last = r.last || {};
    const epochs = job.spec.epochs || 1;
    const perEpoch = Number(last.steps_per_epoch || 0);
    const done = perEpoch ? Number(last.step) / (epochs * perEpoch) : 0;
    return el("tr", { "data-rank": r.rank },
      el("td", {}, r.rank), el("td", {}, (hosts[r.rank] || {}).worker_id || ""),
      el("td", {}, (hosts[r.rank] || {}).host || ""),
      el("td", {}, el("span", { class: "bar" }, el("span", { style: `width:${Math.min(100, 100 * done).toFixed(0)}%` }))),
      el("td", { class: "num" }, `${Number(last.epoch) + 1}/${epochs}`),
      el("td", { class: "num" }, last.step),
      el("td", { class: "num" }, fmt(last.loss, 4)),
      el("td", { class: "num" }, fmt(last.samples_per_sec)),
      el("td", { class: "num" }, `${fmt(r.p50_step_ms, 1)} / ${fmt(r.p99_step_ms, 1)}`),
      el("td", { class: "num" }, `${fmt(r.mean_data_wait_ms, 1)} / ${fmt(r.mean_compute_ms, 1)} / ${fmt(r.mean_allreduce_ms, 1)}`));
  });
  const evalRows = (curves.eval || []).map((e) => el("tr", {},
    el("td", { class: "num" }, Number(e.epoch) + 1),
    el("td", { class: "num" }, `${fmt(100 * e.accuracy, 2)}%`),
    el("td", { class: "num" }, fmt(e.loss, 4)),
    el("td", { class: "num" }, e.samples)));
  const train = curves.train || [];
  const epochEnd = {};
  for (const p of train) epochEnd[p.epoch] = Number(p.step);
  const accuracy = (curves.eval || []).filter((e) => e.epoch in epochEnd)
    .map((e) => [epochEnd[e.epoch], 100 * e.accuracy]);
  const history = (job.transitions || []).map((t) => el("tr", {},
    el("td", {}, when(t.time_unix_ms)), el("td", {}, stateBadge(t.to)),
    el("td", {}, t.reason)));
  show(
    el("p", {}, el("a", { href: "#/" }, "← all jobs")),
    el("h1", { id: "job-title" }, `${job.id} ${job.spec.name} `, stateBadge(job.state)),
    el("p", {}, `${job.spec.model}, ${job.world_size} rank(s), attempt ${job.attempt}, `,
      `${fmt(m.samples_per_sec)} samples/s`,
      m.bounding_phase && m.bounding_phase !== "PHASE_UNSPECIFIED"
        ? el("span", { id: "bounding" }, `; bound by ${phaseName(m.bounding_phase)} (slowest rank ${m.slowest_rank})`) : null),
    el("p", { class: "muted" }, job.message || ""),
    job.stall ? el("div", { class: "stall", id: "stall" }, `stalled: ${job.stall}`) : null,
    el("h2", {}, "Ranks"),
    rankRows.length ? table(["rank", "worker", "host", "progress", "epoch", "step",
      "loss", "samples/s", "p50 / p99 step ms", "data / compute / all-reduce ms"],
    rankRows, { id: "ranks" }) : el("p", { class: "muted" }, "no steps reported yet"),
    el("h2", {}, "Curves"),
    el("div", { class: "charts" },
      chart("training loss (rank 0)", train.map((p) => [Number(p.step), p.loss]), "loss"),
      chart("samples/s (all ranks)", train.map((p) => [Number(p.step), p.samples_per_sec]), "speed"),
      chart("evaluation accuracy % (end of epoch)", accuracy, "accuracy", true)),
    el("h2", {}, "Evaluation"),
    evalRows.length ? table(["epoch", "accuracy", "loss", "samples"], evalRows, { id: "eval" })
      : el("p", { class: "muted" }, "no evaluation yet"),
    el("h2", {}, "History"),
    table(["time", "state", "reason"], history, { id: "history" }),
    el("h2", {}, "Log (newest lines; all of it: gradsync logs " + job.id + ")"),
    (logs.lines || []).length
      ? el("pre", { id: "log" }, (logs.lines || []).map((l) =>
        `[rank ${l.rank}${l.attempt > 1 ? `, attempt ${l.attempt}` : ""}] ${l.text}\n`).join(""))
      : el("p", { class: "muted" }, "no log lines yet"));
}

async function refresh() {
  const m = location.hash.match(/^#\/job\/([A-Za-z0-9_-]+)$/);
  try {
    await (m ? renderJob(m[1]) : renderList());
    document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    show(el("p", { class: "stall", id: "error" }, String(e.message || e)));
  }
}

window.addEventListener("hashchange", refresh);
refresh();
setInterval(refresh, REFRESH_MS);
