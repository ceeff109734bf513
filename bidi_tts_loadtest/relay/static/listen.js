// The listen page: send a turn through the relay in either shape, play it in an AudioWorklet, and
// measure time to first byte, time to first audible sample, underruns, and the relay's split.
//
// Every browser time is performance.now(); the relay reports its own durations (its clock is never
// compared with ours), so: relay hop = browser first byte - container first byte - LLM wait - connect.
// `window.listen.speak(options)` runs one turn and resolves with its record (used by
// python -m loadtest.browser_ttfa).
"use strict";

const state = {
  ctx: null,
  node: null,
  ws: null,
  wsHandler: null, // the current turn's handlers for WebSocket messages
  pending: new Map(), // turn id -> {onPlayerMessage}
  turns: 0,
  sessionId: (crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2)),
  results: [],
};

// -- audio ----------------------------------------------------------------------------------------
async function ensureContext(sampleRate) {
  if (state.ctx && state.ctx.sampleRate === sampleRate) {
    if (state.ctx.state !== "running") await state.ctx.resume();
    return state.ctx;
  }
  if (state.ctx) await state.ctx.close();
  const ctx = new AudioContext({ sampleRate, latencyHint: "interactive" });
  await ctx.audioWorklet.addModule("/static/player-worklet.js");
  const node = new AudioWorkletNode(ctx, "pcm-player", { numberOfInputs: 0, numberOfOutputs: 1, outputChannelCount: [1] });
  node.connect(ctx.destination);
  node.port.onmessage = (event) => {
    const entry = state.pending.get(event.data.turn);
    if (entry) entry.onPlayerMessage(event.data);
  };
  state.ctx = ctx;
  state.node = node;
  await ctx.resume();
  return ctx;
}

// The moment a context frame reaches the output, on the performance.now() clock: the output
// timestamp pairs a context time with the performance time at which it is (being) played.
function frameToPerf(frame) {
  const ctx = state.ctx;
  const contextTime = frame / ctx.sampleRate;
  const ts = ctx.getOutputTimestamp();
  if (ts.performanceTime > 0) return ts.performanceTime + (contextTime - ts.contextTime) * 1000;
  // No output timestamp (no device clock yet): render time plus the reported output latency.
  const latency = (ctx.outputLatency || ctx.baseLatency || 0) * 1000;
  return performance.now() - (ctx.currentTime - contextTime) * 1000 + latency;
}

function pcmToFloat(bytes, carry) {
  // s16le mono; a byte split across two deliveries is carried to the next one.
  let data = bytes;
  if (carry.byte !== null) {
    data = new Uint8Array(bytes.length + 1);
    data[0] = carry.byte;
    data.set(bytes, 1);
    carry.byte = null;
  }
  if (data.length % 2) {
    carry.byte = data[data.length - 1];
    data = data.subarray(0, data.length - 1);
  }
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const out = new Float32Array(data.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = view.getInt16(2 * i, true) / 32768;
  return out;
}

function base64ToBytes(text) {
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text.replace(/\s+/g, ""));
  const binary = atob(text.replace(/\s+/g, ""));
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

// -- the two shapes ------------------------------------------------------------------------------
function openSocket() {
  if (state.ws && state.ws.readyState === WebSocket.OPEN) return Promise.resolve(state.ws);
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
    ws.binaryType = "arraybuffer";
    ws.onopen = () => { state.ws = ws; resolve(ws); };
    ws.onerror = () => reject(new Error("cannot open the relay WebSocket"));
    ws.onclose = (event) => {
      if (state.ws === ws) state.ws = null;
      if (state.wsHandler) state.wsHandler.onError("relay_closed", `relay WebSocket closed (${event.code})`, null);
    };
    ws.onmessage = (event) => {
      const at = performance.now();
      const h = state.wsHandler;
      if (!h) return;
      if (typeof event.data === "string") {
        const msg = JSON.parse(event.data);
        if (msg.type === "start") h.onStart(msg.sample_rate);
        else if (msg.type === "done") h.onDone(msg.relay);
        else if (msg.type === "error") h.onError(msg.code, msg.message, msg.relay);
      } else {
        h.onAudio(new Uint8Array(event.data), at);
      }
    };
  });
}

async function sendOverWebSocket(body, handler) {
  const ws = await openSocket();
  state.wsHandler = handler;
  handler.sentAt = performance.now();
  ws.send(JSON.stringify(body));
}

// A small incremental event-stream parser (the page's side of bidi_tts.sse's encoder).
function sseParser(onEvent) {
  let buffer = "";
  let type = "";
  let data = [];
  return (text) => {
    buffer += text;
    const lines = buffer.split(/\r\n|\r|\n/);
    buffer = lines.pop();
    for (const line of lines) {
      if (line === "") {
        if (data.length) onEvent(type || "message", data.join("\n"));
        type = "";
        data = [];
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (name === "data") data.push(value);
        else if (name === "event") type = value;
      }
    }
  };
}

async function sendOverSSE(body, handler) {
  handler.sentAt = performance.now();
  const response = await fetch("/sse", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ ...body, session: state.sessionId }),
  });
  if (!response.ok) {
    let detail = { code: `http_${response.status}`, message: response.statusText };
    try { detail = await response.json(); } catch (e) { /* keep the status */ }
    handler.onError(detail.code, detail.message, null);
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let at = 0;
  const parse = sseParser((type, data) => {
    if (type === "audio") handler.onAudio(base64ToBytes(data), at);
    else if (type === "start") handler.onStart(JSON.parse(data).sample_rate);
    else if (type === "done") handler.onDone(JSON.parse(data).relay);
    else if (type === "error") { const m = JSON.parse(data); handler.onError(m.code, m.message, m.relay); }
  });
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    at = performance.now();
    parse(decoder.decode(value, { stream: true }));
  }
  if (!handler.ended) handler.onError("relay_closed", "the event stream ended before done", null);
}

// -- one turn ---------------------------------------------------------------------------------------
function splitOf(rec) {
  const r = rec.relay;
  if (!r || rec.ttfb_ms === null || r.container_first_byte === null) return null;
  const waits = (r.llm_wait || 0) + (r.upstream_connect || 0);
  return {
    upstream_connect: r.upstream_connect,
    llm_wait: r.llm_wait,
    container_first_byte: r.container_first_byte,
    relay: rec.ttfb_ms - r.container_first_byte - waits,
    // first byte -> first sample played at the output: decoding, the prebuffer, the worklet and output latency
    browser_decode_buffer: rec.playing_ms === null ? null : rec.playing_ms - rec.ttfb_ms,
    // first sample played -> first one above the threshold: the quiet start of the audio itself, counted in
    // context frames (each mapping to the page clock reads a fresh output timestamp, which jitters by a ms)
    leading_silence: rec.audible_frame === null || rec.playing_frame === null ? null
      : ((rec.audible_frame - rec.playing_frame) / rec.context.sample_rate) * 1000,
  };
}

async function speak(options) {
  const o = {
    shape: "ws", voice: "af_heart", speed: 1.0, sampleRate: 24000, tokensPerSecond: null,
    prebufferMs: 0, threshold: 0.01, timeoutMs: 60000, ...options,
  };
  const ctx = await ensureContext(o.sampleRate);
  const turn = ++state.turns;
  const rec = {
    turn, shape: o.shape, chars: o.text.length, sample_rate: null, ttfb_ms: null, first_audible_ms: null,
    playing_ms: null, finished_ms: null, decode_first_ms: null, playing_frame: null, audible_frame: null,
    underruns: 0, underrun_ms: 0, audio_ms: 0,
    arrivals: [], underrun_spans: [], relay: null, split: null, error: null, context: {
      sample_rate: ctx.sampleRate, base_latency_ms: ctx.baseLatency * 1000, output_latency_ms: (ctx.outputLatency || 0) * 1000,
    },
  };
  const carry = { byte: null };
  let resolveFinished;
  const finished = new Promise((resolve) => { resolveFinished = resolve; });
  const handler = {
    sentAt: 0,
    ended: false,
    onStart(rate) {
      rec.sample_rate = rate;
      if (rate !== ctx.sampleRate) this.onError("rate_mismatch", `stream at ${rate} Hz, player at ${ctx.sampleRate} Hz`, null);
    },
    onAudio(bytes, at) {
      if (this.ended) return;
      const began = performance.now();
      const samples = pcmToFloat(bytes, carry);
      if (rec.ttfb_ms === null) {
        rec.ttfb_ms = at - this.sentAt;
        rec.decode_first_ms = performance.now() - began;
      }
      rec.arrivals.push([at - this.sentAt, (samples.length / ctx.sampleRate) * 1000]);
      rec.audio_ms += (samples.length / ctx.sampleRate) * 1000;
      state.node.port.postMessage({ type: "pcm", samples }, [samples.buffer]);
    },
    onDone(relay) {
      if (this.ended) return;
      this.ended = true;
      rec.relay = relay;
      state.node.port.postMessage({ type: "end" });
      if (rec.audio_ms === 0) resolveFinished();
    },
    onError(code, message, relay) {
      if (this.ended) return;
      this.ended = true;
      rec.error = { code, message };
      rec.relay = relay;
      state.node.port.postMessage({ type: "end" });
      if (rec.audio_ms === 0) resolveFinished();
    },
  };
  state.pending.set(turn, {
    onPlayerMessage(m) {
      const t = frameToPerf(m.frame) - handler.sentAt;
      if (m.type === "playing") [rec.playing_ms, rec.playing_frame] = [t, m.frame];
      else if (m.type === "audible") [rec.first_audible_ms, rec.audible_frame] = [t, m.frame];
      else if (m.type === "underrun") {
        const ms = (m.frames / ctx.sampleRate) * 1000;
        rec.underruns += 1;
        rec.underrun_ms += ms;
        rec.underrun_spans.push([t, ms]);
      } else if (m.type === "finished") {
        rec.finished_ms = t;
        resolveFinished();
      }
    },
  });
  state.node.port.postMessage({
    type: "turn", turn, threshold: o.threshold, prebufferFrames: Math.round((o.prebufferMs / 1000) * ctx.sampleRate),
  });
  const body = { text: o.text, voice: o.voice, speed: o.speed, sample_rate: o.sampleRate };
  if (o.tokensPerSecond) body.tokens_per_second = o.tokensPerSecond;
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve("timeout"), o.timeoutMs); });
  try {
    const send = o.shape === "sse" ? sendOverSSE(body, handler) : sendOverWebSocket(body, handler);
    await Promise.race([send.then(() => finished), timeout]);
    if (!rec.error && rec.finished_ms === null && rec.audio_ms > 0) {
      // the stream is over but playback is not: wait for it (bounded by the same timeout)
      if ((await Promise.race([finished, timeout])) === "timeout") rec.error = { code: "timeout", message: "playback did not finish" };
    }
    if (!handler.ended) { handler.ended = true; rec.error = { code: "timeout", message: `no end within ${o.timeoutMs} ms` }; }
  } catch (err) {
    handler.ended = true;
    rec.error = { code: "page_error", message: String(err && err.message || err) };
  } finally {
    clearTimeout(timer);
    state.pending.delete(turn);
    if (state.wsHandler === handler) state.wsHandler = null;
  }
  rec.split = splitOf(rec);
  state.results.push(rec);
  renderRow(rec);
  return rec;
}

// -- the page -------------------------------------------------------------------------------------
const fmt = (v) => (v === null || v === undefined ? "–" : v.toFixed(1));

function drawTimeline(canvas, rec) {
  const g = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height;
  const end = Math.max(rec.finished_ms || 0, ...rec.arrivals.map(([t]) => t), rec.first_audible_ms || 0, 1);
  const x = (ms) => 2 + (ms / end) * (w - 4);
  g.clearRect(0, 0, w, h);
  g.fillStyle = "#eef1f5";
  g.fillRect(0, 0, w, h);
  g.fillStyle = "#4a78c2"; // frame arrivals, as ticks on the top row
  for (const [t] of rec.arrivals) g.fillRect(x(t), 3, 1.5, 11);
  if (rec.playing_ms !== null) { // playback, with underruns in red
    g.fillStyle = "#3aa655";
    g.fillRect(x(rec.playing_ms), 18, x(rec.finished_ms ?? end) - x(rec.playing_ms), 10);
    g.fillStyle = "#d33";
    for (const [t, ms] of rec.underrun_spans) g.fillRect(x(t), 16, Math.max(2, x(t + ms) - x(t)), 14);
  }
  const mark = (ms, color) => { if (ms !== null) { g.fillStyle = color; g.fillRect(x(ms) - 1, 0, 2, h); } };
  mark(rec.ttfb_ms, "#1d3f8a");
  mark(rec.first_audible_ms, "#116b2c");
  g.fillStyle = "#555";
  g.font = "10px sans-serif";
  g.textAlign = "right";
  g.fillText(`${Math.round(end)} ms`, w - 3, 11);
}

function renderRow(rec) {
  const body = document.getElementById("results");
  if (!body) return;
  const row = document.createElement("tr");
  const s = rec.split || {};
  const cells = [
    rec.turn, rec.shape === "sse" ? "SSE base64" : "WS binary", fmt(rec.ttfb_ms), fmt(rec.first_audible_ms),
    fmt(s.container_first_byte), fmt(s.relay), fmt(s.browser_decode_buffer), fmt(s.leading_silence),
    `${rec.underruns} / ${fmt(rec.underrun_ms)}`,
  ];
  for (const c of cells) {
    const td = document.createElement("td");
    td.textContent = c;
    row.appendChild(td);
  }
  const td = document.createElement("td");
  if (rec.error) {
    td.textContent = `${rec.error.code}: ${rec.error.message}`;
    td.className = "error";
  } else {
    const canvas = document.createElement("canvas");
    canvas.width = 320;
    canvas.height = 32;
    drawTimeline(canvas, rec);
    td.appendChild(canvas);
  }
  row.appendChild(td);
  body.prepend(row);
}

function optionsFromForm() {
  const value = (id) => document.getElementById(id).value;
  return {
    text: value("text"),
    shape: value("shape"),
    voice: value("voice"),
    sampleRate: Number(value("rate")),
    prebufferMs: Number(value("prebuffer")),
    tokensPerSecond: document.getElementById("llm").checked ? Number(value("tps")) : null,
  };
}

function setUp() {
  const button = document.getElementById("speak");
  const status = document.getElementById("status");
  fetch("/config").then((r) => r.json()).then((c) => { document.getElementById("upstream").textContent = c.upstream; });
  button.addEventListener("click", async () => {
    button.disabled = true;
    status.textContent = "speaking…";
    try {
      const rec = await speak(optionsFromForm());
      status.textContent = rec.error ? `failed: ${rec.error.code}` : `first audible after ${fmt(rec.first_audible_ms)} ms`;
    } catch (err) {
      status.textContent = `failed: ${err.message}`;
    } finally {
      button.disabled = false;
    }
  });
}

window.listen = { speak, state, ensureContext };
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
else setUp();
