// The browser UI of `videotapestry serve`: plain DOM calls, no build step, nothing from outside.
// Every text that comes from a memory, a model or a file name goes in as a text node
// (textContent / createTextNode), never as HTML, so a memory holding markup shows it as text.
"use strict";

const state = { videos: [], memories: [], current: null, buildNotes: {}, outline: null, asked: null,
  searched: null };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

function clock(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  const mm = String(m).padStart(h ? 2 : 1, "0"), ss = String(r).padStart(2, "0");
  return h ? `${h}:${mm}:${ss}` : `${mm}:${ss}`;
}

async function api(path, options) {
  const response = await fetch(path, options);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    throw new Error(`${response.status}: ${detail || response.statusText}`);
  }
  return body;
}

function showError(target, error) {
  target.hidden = false;
  target.textContent = String(error.message || error);
}

// -- library ------------------------------------------------------------------------------

async function loadLibrary() {
  const error = document.getElementById("library-error");
  try {
    [state.videos, state.memories] = await Promise.all([api("/api/videos"), api("/api/memories")]);
    error.hidden = true;
  } catch (e) {
    showError(error, e);
    return;
  }
  for (const video of state.videos) {  // a followed memory's recording opens with that memory
    const live = recordingOf(video);
    if (live) video.memory = live.path;
  }
  renderVideos();
  renderMemories();
  if (!state.current && state.videos.length) chooseVideo(state.videos[0]);
}

// A followed memory's recording (SPEC §16) is a video under the roots, listed as that
// memory's video: opened with it, and never offered a build of its own (it is still
// growing, and the follow already keeps its memory).
function recordingOf(video) {
  return state.memories.find((m) => m.recording && m.recording === video.path) || null;
}

function renderVideos() {
  const list = document.getElementById("videos");
  list.replaceChildren();
  document.getElementById("videos-empty").hidden = state.videos.length > 0;
  for (const video of state.videos) {
    const bar = el("progress", { max: "1", value: "0", hidden: "" });
    const live = recordingOf(video);
    const note = live ? `recording of ${live.path}`
      : state.buildNotes[video.path] || (video.memory ? "memory built" : "no memory yet");
    const status = el("span", { class: "state" }, note);
    const build = live ? null : el("button", { class: "plain build", type: "button",
      onclick: () => startBuild(video, bar, status) }, video.memory ? "Rebuild" : "Build memory");
    const open = el("button", { type: "button", class: "open", onclick: () => chooseVideo(video) },
      "Open");
    list.append(el("li", { dataset: { path: video.path } },
      el("div", { class: "name" }, video.name), open, " ", build, status, bar));
  }
}

function renderMemories() {
  const list = document.getElementById("memories");
  const select = document.getElementById("memory-select");
  list.replaceChildren();
  const chosen = select.value;
  select.replaceChildren();
  for (const memory of state.memories) {
    list.append(el("li", { dataset: { path: memory.path } },
      el("a", { class: "link memory", onclick: () => showOutline(memory.path) }, memory.path),
      memory.live ? el("span", { class: "state live" }, memory.live) : null));
    select.append(el("option", { value: memory.path }, memory.path));
  }
  const wanted = (state.current && state.current.memory) || chosen;
  if (wanted) select.value = wanted;
  // Ask needs a memory: before any exists it is off, with the line saying what to do.
  const none = state.memories.length === 0;
  document.getElementById("memories-empty").hidden = !none;
  document.getElementById("ask-hint").hidden = !none;
  document.getElementById("ask").disabled = none;
}

function chooseVideo(video) {
  state.current = video;
  document.getElementById("current-title").textContent = video.name;
  const player = document.getElementById("player");
  const src = `/api/media?path=${encodeURIComponent(video.path)}`;
  if (player.getAttribute("src") !== src) { player.src = src; renderCues([]); }
  const shipped = document.getElementById("shipped");
  shipped.replaceChildren(el("option", { value: "" }, "(type your own)"));
  video.questions.forEach((q, index) => shipped.append(el("option", { value: String(index) },
    q.id ? `${q.id}: ${q.question}` : q.question)));
  if (video.memory) {
    document.getElementById("memory-select").value = video.memory;
    showOutline(video.memory);
  }
}

document.getElementById("shipped").addEventListener("change", (event) => {
  const q = state.current && state.current.questions[Number(event.target.value)];
  if (!q || event.target.value === "") return;
  document.getElementById("question").value = q.question;
  document.getElementById("options").value = q.options.join("\n");
});

// -- builds -------------------------------------------------------------------------------

async function startBuild(video, bar, status) {
  bar.hidden = false;
  bar.removeAttribute("value");
  status.textContent = "starting";
  try {
    const job = await api("/api/jobs", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ kind: "build", video: video.path }) });
    follow(job.id, {
      progress: (event) => {
        status.textContent = `${event.stage} ${Math.round(event.done)}/${event.total ?? "?"}`;
        if (event.total) { bar.max = String(event.total); bar.value = String(event.done); }
      },
      end: async (finished) => {
        bar.max = "1";
        bar.value = finished.state === "done" ? "1" : "0";
        status.textContent = finished.state === "done"
          ? builtText(finished.result.report) : `${finished.state}: ${finished.error || ""}`;
        state.buildNotes[video.path] = status.textContent;
        const path = video.path;
        await loadLibrary();
        const now = state.videos.find((v) => v.path === path);
        if (now) chooseVideo(now);
        refreshJobs();
      },
    });
  } catch (e) {
    status.textContent = String(e.message || e);
  }
}

// A source still arriving, followed as a build job: one progress event per version published,
// with the time the memory covers and how far it lags the source.
document.getElementById("follow-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const status = document.getElementById("follow-state");
  const out = document.getElementById("follow-out").value.trim();
  const body = { kind: "build", follow: true, video: document.getElementById("follow-source").value.trim() };
  if (out) body.out = out;
  status.textContent = "starting";
  try {
    const job = await api("/api/jobs", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body) });
    status.textContent = "following: waiting for the first version";
    follow(job.id, {
      progress: (e) => {
        const lag = e.lag_s === null || e.lag_s === undefined ? "unknown" : `${Math.round(e.lag_s)} s`;
        status.textContent = `${e.version}: ${e.covers}; lag ${lag}`;
        loadLibrary();
      },
      end: async (finished) => {
        status.textContent = finished.state === "done"
          ? `${finished.result.covers}; ${builtText(finished.result.report)}`
          : `${finished.state}: ${finished.error || ""}`;
        await loadLibrary();
        refreshJobs();
      },
    });
  } catch (e) {
    status.textContent = String(e.message || e);
  }
});

// A partial build or a lost step is said where the build is shown, never passed over.
function builtText(report) {
  const parts = [`memory built (${report.status})`];
  if ((report.failures || []).length) parts.push(`${report.failures.length} clips failed`);
  for (const d of report.degradations || []) parts.push(`degraded: ${d.what || ""} ${d.why || ""}`.trim());
  return parts.join("; ");
}

// -- questions ----------------------------------------------------------------------------

document.getElementById("ask-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const stateLine = document.getElementById("ask-state");
  const options = document.getElementById("options").value.split("\n").map((s) => s.trim()).filter(Boolean);
  const body = {
    kind: "ask",
    memory: document.getElementById("memory-select").value,
    video: state.current && !document.getElementById("memory-only").checked ? state.current.path : null,
    question: document.getElementById("question").value,
    options,
  };
  state.asked = { video: state.current, question: body.question, options };
  resetResult();
  stateLine.textContent = "asking";
  try {
    const job = await api("/api/jobs", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body) });
    follow(job.id, {
      level: (e) => addLevel(e),
      end: (finished) => { stateLine.textContent = finished.state; showAnswer(finished); refreshJobs(); },
    });
  } catch (e) {
    stateLine.textContent = String(e.message || e);
  }
});

function resetResult() {
  document.getElementById("result").hidden = false;
  for (const id of ["timeline", "citations", "degraded", "warnings", "usage"]) document.getElementById(id).replaceChildren();
  document.getElementById("verdict").hidden = true;
  renderCues([]);
  document.getElementById("degraded").hidden = true;
  document.getElementById("warnings").hidden = true;
  document.getElementById("unobserved").hidden = true;
  document.getElementById("covers").hidden = true;
  document.getElementById("answer").textContent = "…";
  document.getElementById("reasoning").textContent = "";
}

// The agents as a person names them, in the order they work: one row each, updated in place,
// so a decision that lands after the answer (Focus decides beside the Answer agent) stays
// on its own row, and the graph's bookkeeping steps (assembling the memory) are not rows.
const LEVELS = [
  ["super", "Overview (whole video)", ["part of the video", "parts of the video"]],
  ["macro", "Skim (events)", ["event", "events"]],
  ["subgraph", "Focus (moments)", ["moment", "moments"]],
  ["controller", "One agent (all levels)", ["level", "levels"]],
  ["answer", "Answer", ["", ""]],
];

const counted = (n, [one, many]) => (n === 0 ? "none" : `${n} ${n === 1 ? one : many}`);

function levelRow(level) {
  const timeline = document.getElementById("timeline");
  let row = timeline.querySelector(`li.level[data-level="${level}"]`);
  if (row) return row;
  const index = LEVELS.findIndex(([name]) => name === level);
  if (index < 0) return null;
  row = el("li", { class: "level", dataset: { level } }, LEVELS[index][1],
    el("span", { class: "what" }, ""));
  const after = [...timeline.children].find((li) =>
    LEVELS.findIndex(([name]) => name === li.dataset.level) > index);
  timeline.insertBefore(row, after || null);
  return row;
}

function addLevel(event) {
  const level = event.level === "assemble" ? "answer" : event.level;
  const row = levelRow(level);
  if (!row) return;
  const [, , things] = LEVELS.find(([name]) => name === level);
  const picked = (event.selected || []).length;
  let what = event.step || "";
  if (level === "answer") {
    what = event.step === "direct" ? "answering from frames of the video" : "answering";
  } else if (level === "controller" && event.step === "done") {
    what = `looked at ${counted((event.levels || []).length, things)}`;
  } else if (event.step === "done") {
    what = level === "subgraph" ? `kept ${counted(picked, things)} as evidence`
      : event.stop ? (picked ? `picked ${counted(picked, things)}; enough to answer` : "enough to answer")
        : `picked ${counted(picked, things)} to look at closer`;
    if (picked) row.title = event.selected.join(", ");
  }
  row.querySelector(".what").textContent = what ? `: ${what}` : "";
}

function showAnswer(job) {
  const answer = document.getElementById("answer");
  if (job.state !== "done") {
    answer.textContent = `${job.state}: ${job.error || ""}`;
    return;
  }
  const r = job.result;
  const timeline = document.getElementById("timeline");
  if (!timeline.children.length) {  // answered before: no live events, the levels it visited
    for (const level of r.levels_visited) addLevel({ level, step: "visited (answered earlier)" });
  }
  levelRow("answer").querySelector(".what").textContent = ": done";
  const chosen = r.options.find((o) => o.trim().startsWith(`${r.answer}.`));
  answer.textContent = r.options.length ? (chosen || r.answer) : (r.answer_text || "(no answer)");
  answer.dataset.letter = r.answer || "";
  document.getElementById("reasoning").textContent = r.reasoning || "";
  const covers = document.getElementById("covers");  // a live memory: the version read
  covers.textContent = r.memory_covers ? `memory: ${r.memory_covers.text}` : "";
  covers.hidden = !r.memory_covers;
  showVerdict(r);
  const degraded = document.getElementById("degraded");
  for (const line of r.degraded_text || []) degraded.append(el("li", {}, `degraded: ${line}`));
  degraded.hidden = !(r.degraded_text || []).length;
  const warnings = document.getElementById("warnings");
  for (const line of r.warnings_text || []) warnings.append(el("li", {}, `warning: ${line}`));
  warnings.hidden = !(r.warnings_text || []).length;
  const unobserved = document.getElementById("unobserved");
  unobserved.textContent = r.observation_disabled ? `not observed: ${r.observation_disabled}` : "";
  unobserved.hidden = !r.observation_disabled;
  const citations = document.getElementById("citations");
  if (r.citations_asked === false) citations.append(el("li", { class: "muted" }, "citations were not asked for (answer.citations is off)"));
  else if (!r.citations.length) citations.append(el("li", { class: "muted" }, "the answer cites nothing"));
  const video = state.asked && state.asked.video;
  // The citations as a person reads them (the server's words and times: the same as the
  // trace page's); each button seeks to the moment it names, and shows that moment's frame
  // when the question was asked with its video (a click on the picture is a click on it).
  const shown = r.citations_shown || [];
  for (const citation of shown) {
    const buttons = citation.sources.map((source) => citeButton(source, video));
    citations.append(el("li", {}, ...buttons, citation.claim));
  }
  renderCues(shown.flatMap((c) => c.sources.map((source) => ({ source, claim: c.claim }))));
  document.getElementById("usage").textContent = r.usage_text ? `cost: ${r.usage_text}` : "";
  document.getElementById("trace-page").href = `/api/jobs/${job.id}/trace.html`;
  document.getElementById("trace-json").href = `/api/jobs/${job.id}/trace`;
}

// A cited source as a button that plays the video given (the open one when null) from its moment,
// with that moment's frame when the video is known.
function citeButton(source, video) {
  return el("button", {
    type: "button", class: video ? "plain cite pictured" : "plain cite",
    dataset: { seek: String(source.seek_s) },
    title: source.shown, "aria-label": `play from ${source.when}: ${source.shown}`,
    onclick: () => seek(source.seek_s, video),
  }, video ? thumbnail(video, source) : null, source.when);
}

// A cited moment's frame, from the server's frame route, loaded when it scrolls near; one
// the server cannot give (a 4xx) is left out rather than shown broken.
const THUMB_WIDTH = 160;  // pixels asked for: twice the width shown, for sharp screens
function thumbnail(video, source) {
  const query = `path=${encodeURIComponent(video.path)}&t=${source.seek_s}&w=${THUMB_WIDTH}`;
  return el("img", { class: "thumb", loading: "lazy", decoding: "async", alt: source.when,
    width: "80", height: "45", src: `/api/frame?${query}`,
    onerror: (event) => event.target.remove() });
}

// The right/wrong mark, only for a shipped question asked as shipped whose file gives the key.
function showVerdict(r) {
  const line = document.getElementById("verdict");
  const asked = state.asked;
  const shipped = asked && asked.video && asked.video.questions.find((q) =>
    q.question === r.question && q.options.join("\n") === r.options.join("\n"));
  if (!shipped || !shipped.answer || !r.options.length) { line.hidden = true; return; }
  const right = shipped.answer === r.answer;
  line.className = `verdict ${right ? "right" : "wrong"}`;
  line.textContent = right ? `✓ right (the answer key says ${shipped.answer})`
    : `✗ wrong: the answer key says ${shipped.answer}`;
  line.hidden = false;
}

// A cited moment: the player comes into view (on a phone it is far above the citations) and
// plays from there; a citation about another video than the one open opens it first.
function seek(seconds, video) {
  if (video && (!state.current || state.current.path !== video.path)) chooseVideo(video);
  const player = document.getElementById("player");
  player.scrollIntoView({ block: "center", behavior: "instant" });
  const go = () => {
    player.currentTime = seconds;
    const playing = player.play();
    if (playing) playing.catch(() => {});  // a browser refusing to play still shows the frame
  };
  if (player.readyState >= 1) go();
  else player.addEventListener("loadedmetadata", go, { once: true });
}

// The cited moments as marks on a bar under the player, placed by time over the duration.
function renderCues(cues) {
  const bar = document.getElementById("cues");
  const player = document.getElementById("player");
  bar.replaceChildren();
  bar.hidden = !cues.length;
  document.getElementById("cues-note").hidden = !cues.length;
  if (!cues.length) return;
  const place = () => {
    const duration = player.duration;
    if (!Number.isFinite(duration) || duration <= 0) return;
    const video = state.asked && state.asked.video;
    const seen = new Set();
    for (const { source, claim } of cues) {
      const key = `${source.seek_s}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const left = Math.min(100, Math.max(0, (100 * source.seek_s) / duration));
      bar.append(el("button", { type: "button", class: "cue", dataset: { seek: String(source.seek_s) },
        style: `left: ${left.toFixed(3)}%`, title: `${source.when} ${claim}`,
        "aria-label": `play from ${source.when}`, onclick: () => seek(source.seek_s, video) }));
    }
  };
  if (player.readyState >= 1) place();
  else player.addEventListener("loadedmetadata", place, { once: true });
}

// -- the memory outline -------------------------------------------------------------------

async function showOutline(path) {
  const target = document.getElementById("outline");
  state.outline = path;  // the latest choice wins: an earlier, slower reply is dropped
  try {
    const outline = await api(`/api/memory?path=${encodeURIComponent(path)}`);
    if (state.outline !== path) return;
    const title = titler(outline);
    const supers = outline.super_events.map((s) => el("div", { class: "outline-super" },
      el("div", { class: "label" }, el("span", { class: "time" }, clock(s.start_s)),
        el("span", { class: "title" }, title(s.label, s.description))),
      clipped("div", "description", s.description, 280),
      ...s.macro_events.map((m) => el("div", { class: "outline-macro" },
        el("a", { class: "link time", onclick: () => seek(m.start_s) }, clock(m.start_s)),
        el("span", { class: "label" }, title(m.label, m.summary)), " ",
        clipped("span", "summary", m.summary, 160)))));
    target.replaceChildren(
      el("p", { class: "name" }, outline.title || path),
      clipped("p", "root-description", outline.description, 400), ...supers);
  } catch (e) {
    if (state.outline === path) target.replaceChildren(el("p", { class: "error" }, String(e.message || e)));
  }
}

// An entry's title: its label, unless the builder gave none of its own (empty, the video's
// title, or one label on several entries): then the first words of its text, less the time
// range said beside it and the repeated label.
function titler(outline) {
  const norm = (text) => String(text || "").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");
  const count = {};
  const labels = outline.super_events.flatMap((s) => [s.label, ...s.macro_events.map((m) => m.label)]);
  for (const label of labels) count[norm(label)] = (count[norm(label)] || 0) + 1;
  const root = norm(outline.title);
  return (label, text) => {
    const key = norm(label);
    if (key && key !== root && count[key] === 1) return label;
    let words = String(text || "")
      .replace(/^\s*from \d[\d:.]* to \d[\d:.]*[,:]?\s*/i, "")
      .replace(/\(\d[\d:.]*\s*[-–]\s*\d[\d:.]*\)/g, "");
    for (const repeated of [label, outline.title]) {
      if (repeated) words = words.split(new RegExp(`"${escaped(repeated)}"\\s*[,;]?`)).join("");
    }
    words = words.replace(/\s+([,;.])/g, "$1").replace(/\s+/g, " ").trim();
    return shorten(words, 60) || label || "(untitled)";
  };
}

function escaped(text) {
  return String(text).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

// Text cut at a word near ``limit`` characters, with "…" where it was cut.
function shorten(text, limit) {
  const s = String(text || "");
  if (s.length <= limit) return s;
  const cut = s.slice(0, limit);
  const space = cut.lastIndexOf(" ");
  return `${(space > limit * 0.6 ? cut.slice(0, space) : cut).replace(/[\s,;:.]+$/, "")}…`;
}

// A long text shown cut with "…"; a click shows it whole (and cut again).
function clipped(tag, cls, text, limit) {
  const full = String(text || "");
  const short = shorten(full, limit);
  if (short === full) return el(tag, { class: cls }, full);
  const node = el(tag, { class: `${cls} clipped`, title: "click to show it all" }, short);
  node.addEventListener("click", () => {
    node.textContent = node.textContent === short ? full : short;
  });
  return node;
}

// -- jobs ---------------------------------------------------------------------------------

function follow(jobId, handlers) {
  const source = new EventSource(`/api/jobs/${jobId}/events`);
  for (const type of ["progress", "level", "state"]) {
    source.addEventListener(type, (e) => handlers[type] && handlers[type](JSON.parse(e.data)));
  }
  source.addEventListener("end", (e) => {
    source.close();
    handlers.end && handlers.end(JSON.parse(e.data).job);
  });
  source.onerror = () => { source.close(); };
}

async function refreshJobs() {
  const list = document.getElementById("jobs");
  let jobs = [];
  try { jobs = await api("/api/jobs"); } catch (e) { return; }
  list.replaceChildren(...jobs.slice(0, 20).map((job) => {
    const what = job.kind === "ask" || job.kind === "library_ask" ? job.inputs.question
      : job.kind === "eval" ? `${job.inputs.benchmark} → ${job.inputs.out}`
        : job.kind === "library_index" ? job.inputs.library : job.inputs.video;
    return el("li", { dataset: { state: job.state } },
      el("span", { class: "time" }, new Date(job.created_at * 1000).toLocaleTimeString()),
      `${job.kind} · ${job.state} · `, what || "", job.error ? ` · ${job.error}` : "");
  }));
}

// -- across the library (SPEC §15) ------------------------------------------------------

// A video the library names by its path under the roots, as the player opens it: the one
// listed under Videos, else one made of its path and title; null when it has no video.
function libraryVideo(path, title) {
  if (!path) return null;
  return state.videos.find((v) => v.path === path)
    || { path, name: title || path, questions: [], memory: null };
}

// What the library holds; with nothing in it, the line saying what to do.
async function loadLibraryIndex() {
  const count = document.getElementById("lib-count");
  let videos;
  try { videos = await api("/api/library/videos"); } catch (e) {
    count.hidden = false;
    count.textContent = String(e.message || e);
    return;
  }
  document.getElementById("lib-empty").hidden = videos.length > 0;
  count.hidden = !videos.length;
  count.textContent = shorten(`${videos.length} ${videos.length === 1 ? "video" : "videos"} in the `
    + `library: ${videos.map((v) => v.title).join(", ")}`, 240);
}

function indexedText(r) {
  const parts = [`library indexed: ${r.added.length} added, ${r.updated.length} updated, `
    + `${r.removed.length} removed, ${r.unchanged} unchanged; ${r.moments} moments`];
  for (const failed of r.failed || []) parts.push(`failed: ${failed.memory}: ${failed.why}`);
  return parts.join("; ");
}

document.getElementById("lib-index").addEventListener("click", async () => {
  const button = document.getElementById("lib-index");
  const bar = document.getElementById("lib-index-bar");
  const status = document.getElementById("lib-index-state");
  button.disabled = true;
  bar.hidden = false;
  bar.removeAttribute("value");
  status.textContent = "starting";
  delete status.dataset.state;
  try {
    const job = await api("/api/library/index", { method: "POST" });
    follow(job.id, {
      progress: (event) => {
        status.textContent = `indexing: ${Math.round(event.done)}/${event.total ?? "?"} memories`;
        if (event.total) { bar.max = String(event.total); bar.value = String(event.done); }
      },
      end: async (finished) => {
        button.disabled = false;
        bar.max = "1";
        bar.value = finished.state === "done" ? "1" : "0";
        status.textContent = finished.state === "done"
          ? indexedText(finished.result) : `${finished.state}: ${finished.error || ""}`;
        status.dataset.state = finished.state;
        await loadLibraryIndex();
        refreshJobs();
      },
    });
  } catch (e) {
    button.disabled = false;
    status.textContent = String(e.message || e);
  }
});

// A moment found: its frame, video title, time, level and text; a click plays it.
function hitItem(hit) {
  const video = libraryVideo(hit.video, hit.title);
  const text = el("span", { class: "hit-text" },
    el("span", { class: "title" }, hit.title), " ", el("span", { class: "time" }, hit.when),
    el("span", { class: "kind" }, hit.level),
    el("span", { class: "text" }, shorten(hit.text, 220)),
    video ? null : el("span", { class: "kind" }, "no video of it under the roots"));
  const button = el("button", { type: "button", class: "hit",
    dataset: { seek: String(hit.seek_s), video: hit.video || "" },
    title: video ? `play from ${hit.when}` : "", onclick: () => seek(hit.seek_s, video) },
  video ? thumbnail(video, hit) : null, text);
  button.disabled = !video;
  return el("li", {}, button);
}

document.getElementById("lib-search-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const query = document.getElementById("lib-query").value.trim();
  const list = document.getElementById("lib-hits");
  const line = document.getElementById("lib-search-state");
  if (!query) return;
  state.searched = query;  // the latest search wins: an earlier, slower reply is dropped
  line.textContent = "searching";
  list.replaceChildren();
  try {
    const hits = await api(`/api/library/search?q=${encodeURIComponent(query)}&top=10`);
    if (state.searched !== query) return;
    line.textContent = hits.length ? `${hits.length} ${hits.length === 1 ? "moment" : "moments"}`
      : "nothing in the library fits that (is the library indexed?)";
    list.replaceChildren(...hits.map(hitItem));
  } catch (e) {
    if (state.searched === query) line.textContent = String(e.message || e);
  }
});

document.getElementById("lib-ask-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const line = document.getElementById("lib-ask-state");
  const button = document.getElementById("lib-ask");
  document.getElementById("lib-result").hidden = true;
  button.disabled = true;
  line.textContent = "asking across the library";
  try {
    const job = await api("/api/library/ask", { method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ question: document.getElementById("lib-question").value }) });
    follow(job.id, {
      end: (finished) => {
        button.disabled = false;
        line.textContent = "";
        showLibraryAnswer(finished);
        refreshJobs();
      },
    });
  } catch (e) {
    button.disabled = false;
    line.textContent = String(e.message || e);
  }
});

// A library answer: the answer, the videos it came from, and each claim with its video and
// sources; a source plays its video from its moment (one with no video is shown, not played).
function showLibraryAnswer(job) {
  const answer = document.getElementById("lib-answer");
  const from = document.getElementById("lib-from");
  const citations = document.getElementById("lib-citations");
  const degraded = document.getElementById("lib-degraded");
  document.getElementById("lib-result").hidden = false;
  citations.replaceChildren();
  degraded.replaceChildren();
  const r = job.state === "done" ? job.result : null;
  answer.dataset.state = job.state;
  answer.textContent = r ? (r.answer_text || r.answer || "(no answer)")
    : `${job.state}: ${job.error || ""}`;
  from.textContent = !r ? "" : r.none_found ? "None of the videos in the library shows this."
    : `from: ${r.answered_from.join(", ")}`;
  document.getElementById("lib-reasoning").textContent = r ? r.reasoning || "" : "";
  for (const line of r ? r.degraded : []) degraded.append(el("li", {}, `degraded: ${line}`));
  degraded.hidden = !degraded.children.length;
  for (const citation of r ? r.citations_shown : []) {
    const video = libraryVideo(citation.video, citation.title);
    const buttons = citation.sources.map((source) => citeButton(source, video));
    for (const b of buttons) { b.dataset.video = citation.video || ""; b.disabled = !video; }
    citations.append(el("li", {}, el("span", { class: "title" }, `${citation.title}: `),
      ...buttons, citation.claim));
  }
  if (r && !r.citations_shown.length) citations.append(el("li", { class: "muted" }, "the answer cites nothing"));
  document.getElementById("lib-usage").textContent = r && r.usage_text ? `cost: ${r.usage_text}` : "";
}

// -- eval runs ----------------------------------------------------------------------------

async function loadEvals() {
  let runs = [];
  try { runs = await api("/api/evals"); } catch (e) { return; }
  const list = document.getElementById("evals");
  const view = document.getElementById("eval-view");
  list.replaceChildren(...runs.map((run) => el("li", { dataset: { path: run.path } },
    el("a", { class: "link", onclick: async () => {
      try { view.textContent = (await api(`/api/evals/report?path=${encodeURIComponent(run.path)}`)).markdown; }
      catch (e) { view.textContent = String(e.message || e); }
    } }, run.path))));
  for (const id of ["compare-a", "compare-b"]) {
    document.getElementById(id).replaceChildren(...runs.map((run) => el("option", { value: run.path }, run.path)));
  }
  if (runs.length > 1) document.getElementById("compare-b").selectedIndex = 1;
  document.getElementById("evals-empty").hidden = runs.length > 0;
  const compare = document.getElementById("compare");
  compare.disabled = runs.length < 2;
  compare.title = runs.length < 2 ? "compare needs two eval runs" : "";
}

document.getElementById("compare").addEventListener("click", async () => {
  const a = document.getElementById("compare-a").value, b = document.getElementById("compare-b").value;
  const view = document.getElementById("eval-view");
  if (!a || !b) { view.textContent = "no eval runs under the roots"; return; }
  try {
    const answer = await api(`/api/evals/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
    view.textContent = answer.text;
  } catch (e) { view.textContent = String(e.message || e); }
});

loadLibrary();
loadLibraryIndex();
loadEvals();
refreshJobs();
