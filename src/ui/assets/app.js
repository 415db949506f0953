// trainctl dashboard: one page, two views (the job list and a job), fed by one server-sent
// event stream per tab (/api/v1/stream). Text from jobs is only ever set with textContent.
//
// Every view has its own address, so it can be linked, bookmarked and opened in a new tab:
//   #/                                           the list
//   #/job/<source>/<namespace>/<kind>/<name>     a live job
//   #/history/<uid>                              a finished job from the history
// each part percent-encoded. The older #/job?source=&ns=&kind=&name= and #/history?uid= open
// too.
"use strict";

const $ = (id) => document.getElementById(id);
let stream = null;
let route = { view: "list", params: new URLSearchParams() };
let query = "";
let logOffset = 0;
let charts = [];
let page = null;  // the job page's last document
let csrf = "";    // this session's X-CSRF-Token (in-cluster sign-in only)
const MAX_LOG_LINES = 5000;

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function duration(ms) {
  if (!(ms >= 0)) return "";
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + (s % 60 ? (s % 60) + "s" : "");
  if (s < 86400) return Math.floor(s / 3600) + "h" + (Math.floor(s / 60) % 60 ? (Math.floor(s / 60) % 60) + "m" : "");
  return Math.floor(s / 86400) + "d" + (Math.floor(s / 3600) % 24 ? (Math.floor(s / 3600) % 24) + "h" : "");
}

function since(t) { return t ? duration(Date.now() - Date.parse(t)) : ""; }

function ran(row) {
  const start = Date.parse(row.started || row.created);
  if (!start) return "";
  const end = row.finished ? Date.parse(row.finished) : Date.now();
  return duration(end - start);
}

// --- the stream -----------------------------------------------------------------------

function openStream() {
  if (stream) stream.close();
  const p = new URLSearchParams();
  if (query) p.set("q", query);
  if (route.view === "job") {
    for (const k of ["source", "ns", "kind", "name"]) p.set(k, route.params.get(k) || "");
    const replica = $("replica-select").value;
    if (replica) { p.set("replica", replica); p.set("from", String(logOffset)); }
  }
  stream = new EventSource("/api/v1/stream?" + p.toString());
  stream.onopen = () => { $("connection").textContent = "live"; };
  stream.onerror = () => {
    $("connection").textContent = "reconnecting…";
    // Refused for good (a 401 once the sign-in ended): ask again who this is.
    if (stream && stream.readyState === EventSource.CLOSED) whoami();
  };
  stream.addEventListener("jobs", (e) => renderList(JSON.parse(e.data)));
  stream.addEventListener("job", (e) => renderJob(JSON.parse(e.data)));
  stream.addEventListener("log", (e) => {
    const d = JSON.parse(e.data);
    if (d.replica !== $("replica-select").value || d.from !== logOffset) return;
    appendLog(d.text);
    logOffset = d.next;
  });
  stream.addEventListener("metrics", (e) => renderMetrics(JSON.parse(e.data)));
}

function closeStream() {
  if (stream) stream.close();
  stream = null;
  $("connection").textContent = "paused";
}

// --- the list -------------------------------------------------------------------------

let lastRows = [];

// The filter menus offer the values the rows have; a chosen value stays while it has rows.
function fillFilters(rows) {
  for (const select of document.querySelectorAll("select.filter")) {
    const field = select.dataset.field;
    const values = Array.from(new Set(rows.map((r) => r[field]).filter(Boolean))).sort();
    const keep = select.value;
    const first = select.options[0];
    select.replaceChildren(first, ...values.map((v) => { const o = el("option", v); o.value = v; return o; }));
    select.value = values.includes(keep) ? keep : "";
  }
}

function renderList(rows) {
  lastRows = rows;
  fillFilters(rows);
  const chosen = Array.from(document.querySelectorAll("select.filter"))
      .filter((s) => s.value).map((s) => [s.dataset.field, s.value]);
  rows = rows.filter((r) => chosen.every(([field, value]) => r[field] === value));
  const body = $("jobs").tBodies[0];
  const active = document.activeElement;
  const focused = active && active.classList.contains("job-link") && body.contains(active)
      ? active.getAttribute("href") : null;
  body.replaceChildren();
  for (const row of rows) {
    const tr = el("tr");
    tr.dataset.key = row.key;
    tr.dataset.name = row.name;
    tr.dataset.state = row.state;
    if (!row.live) tr.classList.add("history");
    const r = row.replicas;
    const replicas = r ? `${r.active}/${r.total} active` + (r.failed ? `, ${r.failed} failed` : "") : "";
    const progress = row.progress === null || row.progress === undefined ? "" : row.progress + "%";
    const cells = [row.kind, row.namespace, row.name, row.state, row.why, since(row.created),
                   ran(row), progress, replicas, row.live ? row.source : row.source + " (history)"];
    cells.forEach((text, i) => {
      const td = el("td", i === 2 ? undefined : text);
      if (i === 2) {  // the name: a link to the job's own address
        const a = el("a", text, "job-link");
        a.href = hrefFor(row);
        td.appendChild(a);
      }
      if (i === 3) td.className = "state state-" + row.state;
      if (i === 4) { td.className = "why-cell"; td.title = row.why; }
      tr.appendChild(td);
    });
    body.appendChild(tr);
  }
  // A link that had the keyboard's focus keeps it across a live update.
  if (focused) {
    const again = Array.from(body.querySelectorAll("a.job-link")).find((a) => a.getAttribute("href") === focused);
    if (again) again.focus();
  }
  $("empty").hidden = rows.length > 0;
}

// The address of a row's page (see the top of this file).
function hrefFor(row) {
  if (!row.live) return "#/history/" + encodeURIComponent(row.uid);
  return "#/job/" + [row.source, row.namespace, row.kind, row.name].map(encodeURIComponent).join("/");
}

// The view an address names: {view: "list" | "job" | "history", params}.
function parseRoute(hash) {
  const [path, qs] = hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/").map((p) => { try { return decodeURIComponent(p); } catch (e) { return null; } });
  const params = new URLSearchParams(qs || "");
  if (parts.includes(null)) return { view: "list", params: new URLSearchParams() };
  if (parts[0] === "job" && parts.length === 5)
    return { view: "job", params: new URLSearchParams({ source: parts[1], ns: parts[2], kind: parts[3], name: parts[4] }) };
  if (parts[0] === "history" && parts.length === 2)
    return { view: "history", params: new URLSearchParams({ uid: parts[1] }) };
  if ((parts[0] === "job" || parts[0] === "history") && parts.length === 1) return { view: parts[0], params };
  return { view: "list", params: new URLSearchParams() };
}

// --- a job ----------------------------------------------------------------------------

function renderJob(doc) {
  page = doc;
  const job = doc.job || {};
  const md = job.metadata || {};
  const status = job.status || {};
  const conditions = status.conditions || [];
  const state = conditions.length ? conditions[conditions.length - 1].type : "Pending";
  $("job-title").textContent = `${job.kind || ""} ${md.namespace || ""}/${md.name || ""}`;
  document.title = `${md.name || ""} · trainctl`;
  $("job-state").textContent = state;
  $("job-state").className = "state state-" + state;
  $("job-meta").textContent = (doc.live ? doc.source : doc.source + ", from the history") +
      (md.creationTimestamp ? " · created " + md.creationTimestamp : "") +
      (status.completionTime ? " · finished " + status.completionTime : "");

  const why = doc.why || {};
  $("why").hidden = !why.reason;
  $("why").textContent = why.reason ? `${why.reason} (since ${why.since}): ${why.message}` : "";

  // What the trainer last reported to the job's status endpoint (status.trainerStatus).
  const ts = status.trainerStatus;
  $("progress").hidden = !ts;
  if (ts) {
    const parts = [];
    if (ts.progressPercentage !== undefined) parts.push(`${ts.progressPercentage}%`);
    if (ts.estimatedRemainingSeconds !== undefined && !status.completionTime) {
      const at = Date.parse(ts.lastUpdatedTime);
      const left = ts.estimatedRemainingSeconds - (isNaN(at) ? 0 : Math.max(0, (Date.now() - at) / 1000));
      parts.push(`about ${Math.max(0, Math.round(left))} s left`);
    }
    for (const m of ts.metrics || []) parts.push(`${m.name}=${m.value}`);
    $("progress").textContent = "Progress: " + parts.join(" · ") +
        (ts.lastUpdatedTime ? ` (reported ${ts.lastUpdatedTime})` : "");
  }

  const f = doc.failure;
  $("failure").hidden = !f;
  if (f) {
    $("failure-text").textContent = (why.firstFailure || f.message || "").split("\n")[0] ||
        `${f.name} exited with code ${f.exitCode}`;
    $("failure-lines").textContent = (f.lastLogLines || []).join("\n");
  }

  const rb = $("replicas").tBodies[0];
  rb.replaceChildren();
  for (const r of doc.replicas || []) {
    const tr = el("tr");
    tr.dataset.name = r.name;
    const where = r.pid ? "pid " + r.pid : (r.node ? r.node : "");
    const devices = (r.gpus || []).join(",");
    for (const text of [r.name, r.state, r.exitCode, r.reason, r.restarts, where, devices])
      tr.appendChild(el("td", text === undefined ? "" : text));
    rb.appendChild(tr);
  }

  const cb = $("conditions").tBodies[0];
  cb.replaceChildren();
  for (const c of conditions) {
    const tr = el("tr");
    for (const text of [c.type, c.status, c.reason, c.message, c.lastTransitionTime])
      tr.appendChild(el("td", text || ""));
    cb.appendChild(tr);
  }
  const eb = $("events").tBodies[0];
  eb.replaceChildren();
  for (const e of doc.events || []) {
    const tr = el("tr");
    for (const text of [e.time, e.type, e.reason, e.object, e.message]) tr.appendChild(el("td", text || ""));
    eb.appendChild(tr);
  }

  const select = $("replica-select");
  const names = doc.replicaNames || [];
  const have = Array.from(select.options).map((o) => o.value);
  if (have.join() !== names.join()) {
    const keep = select.value;
    select.replaceChildren(...names.map((n) => { const o = el("option", n); o.value = n; return o; }));
    const failed = f && f.name ? f.name.replace((md.name || "") + "-", "") : "";
    const wanted = [keep, failed, doc.metricsReplica, names[0]].find((n) => n && names.includes(n));
    if (wanted) select.value = wanted;
    if (select.value !== keep) replicaChanged();
  }
  if (!doc.live) {
    const log = (doc.logs || {})[select.value];
    $("log").textContent = log ? log.tail : "";
    $("log-note").textContent = log ? `the last ${log.tail.length} of ${log.bytes} bytes, kept in the history` : "";
    renderMetrics(doc.metrics);
  }
}

function appendLog(text) {
  const pre = $("log");
  const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  pre.textContent += text;
  const lines = pre.textContent.split("\n");
  if (lines.length > MAX_LOG_LINES) pre.textContent = lines.slice(-MAX_LOG_LINES).join("\n");
  if (atBottom) pre.scrollTop = pre.scrollHeight;
}

function replicaChanged() {
  $("log").textContent = "";
  $("log-note").textContent = page && page.live ? "following" : "";
  logOffset = 0;
  if (route.view === "job") openStream();
  else if (page) renderJob(page);
}

// One chart per quantity, each with its own y axis: the server groups the series
// (doc.charts: ui/views.h, ChartsFor), so a loss and a learning rate never share an axis.
function renderMetrics(doc) {
  const box = $("chart");
  const series = (doc && doc.series) || {};
  const groups = ((doc && doc.charts) || Object.keys(series).map((n) => ({ axis: n, series: [n] })))
      .map((g) => ({ axis: g.axis, series: g.series.filter((n) => series[n]) }))
      .filter((g) => g.series.length);
  const names = [];  // at most 8 curves in all
  for (const g of groups) { g.series = g.series.slice(0, Math.max(0, 8 - names.length)); names.push(...g.series); }
  $("no-metrics").hidden = names.length > 0;
  $("metrics-from").textContent = doc && doc.replica ? "from " + doc.replica : "";
  for (const c of charts) c.destroy();
  charts = [];
  box.replaceChildren();
  box.dataset.series = names.join(",");
  if (!names.length || typeof uPlot === "undefined") { box.dataset.points = "0"; return; }
  const palette = ["#175cd3", "#b42318", "#067647", "#b54708", "#6941c6", "#c11574", "#0e9384", "#475467"];
  // Four significant digits: uPlot's default shows three decimals, so the ticks of a learning
  // rate of 5e-5 would all read 0.
  const number = (v) => (v === null || v === undefined ? "--" : String(+v.toPrecision(4)));
  let colour = 0;
  for (const g of groups.filter((g) => g.series.length)) {
    // One x axis per chart: every step its series have; a series without a point there is a gap.
    const steps = Array.from(new Set(g.series.flatMap((n) => series[n].step))).sort((a, b) => a - b);
    const index = new Map(steps.map((s, i) => [s, i]));
    const columns = g.series.map((n) => {
      const col = new Array(steps.length).fill(null);
      series[n].step.forEach((s, i) => { col[index.get(s)] = series[n].value[i]; });
      return col;
    });
    const div = el("div", undefined, "chart");
    div.dataset.axis = g.axis;
    div.dataset.series = g.series.join(",");
    box.appendChild(div);
    charts.push(new uPlot({
      width: Math.max(320, div.clientWidth || 480), height: 220,
      scales: { x: { time: false } },
      axes: [{ label: "step" }, { label: g.axis, size: 72, values: (u, ticks) => ticks.map(number) }],
      series: [{ label: "step" }, ...g.series.map((n) => ({
        label: n, stroke: palette[colour++ % palette.length], spanGaps: true, value: (u, v) => number(v) }))],
    }, [steps, ...columns], div));
  }
  const first = names.includes("loss") ? "loss" : names[0];
  box.dataset.points = String(series[first].value.filter((v) => v !== null).length);
}

// --- routing --------------------------------------------------------------------------

function show(view) {
  $("login-view").hidden = view !== "login";
  $("list-view").hidden = view !== "list";
  $("job-view").hidden = view === "list" || view === "login";
}

// --- signing in (the in-cluster dashboard only) -------------------------------------------

// Who this page is for; false when the server wants a sign-in first.
async function whoami() {
  const r = await fetch("/api/v1/whoami", { credentials: "same-origin" });
  const body = await r.json().catch(() => ({}));
  if (r.status === 401 && body.login) {
    closeStream();
    show("login");
    $("connection").textContent = "signed out";
    $("login-error").hidden = !body.error || !$("login-token").value;
    $("login-error").textContent = body.error || "";
    return false;
  }
  $("user").hidden = !body.user;
  $("user").textContent = body.user || "";
  $("logout").hidden = !body.session;
  csrf = body.csrf || "";
  return true;
}

$("login-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const r = await fetch("/api/v1/login", {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token: $("login-token").value }),
  });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) {
    $("login-error").hidden = false;
    $("login-error").textContent = body.error || ("sign-in failed (" + r.status + ")");
    return;
  }
  $("login-token").value = "";
  $("login-error").hidden = true;
  navigate();
});

$("logout").addEventListener("click", async () => {
  await fetch("/api/v1/logout", { method: "POST", credentials: "same-origin",
                                  headers: { "X-CSRF-Token": csrf } });
  csrf = "";
  navigate();
});

async function navigate() {
  if (!(await whoami())) return;
  route = parseRoute(location.hash);
  page = null;
  logOffset = 0;
  $("log").textContent = "";
  $("replica-select").replaceChildren();
  renderMetrics(null);
  show(route.view);
  // The page names its job before its data comes (a linked job that is gone says so below).
  const p = route.params;
  $("job-title").textContent = route.view === "job" ? `${p.get("kind")} ${p.get("ns")}/${p.get("name")}` : "";
  $("job-state").textContent = "";
  $("job-meta").textContent = "";
  document.title = route.view === "job" ? `${p.get("name")} · trainctl` : "trainctl";
  if (route.view === "history") {
    closeStream();
    const r = await fetch("/api/v1/job?uid=" + encodeURIComponent(route.params.get("uid") || ""));
    if (!r.ok) { $("job-title").textContent = (await r.json()).error || "not found"; return; }
    renderJob(await r.json());
    $("connection").textContent = "history";
    return;
  }
  openStream();
  if (route.view === "job") {  // a linked job that is gone, or not this user's, says so
    const r = await fetch("/api/v1/job?" + route.params.toString());
    if (!r.ok) $("job-meta").textContent = (await r.json().catch(() => ({}))).error || ("error " + r.status);
  }
}

let searchTimer = null;
$("search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => {
    query = $("search").value.trim();
    if (route.view !== "list") location.hash = "#/";
    else openStream();
  }, 300);
});
$("replica-select").addEventListener("change", replicaChanged);
for (const select of document.querySelectorAll("select.filter"))
  select.addEventListener("change", () => renderList(lastRows));
document.addEventListener("visibilitychange", () => {
  if (document.hidden) closeStream();
  else if (route.view !== "history") openStream();
});
window.addEventListener("hashchange", navigate);
navigate();
