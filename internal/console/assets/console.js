// intake web console: plain JavaScript over the collector's JSON API and event stream, no
// build step. Every page is a function of the hash (#/page?params); it polls the endpoints
// it shows while it is open and stops when the user leaves it. The API's bearer token, when
// the collector has one, is asked for once and sent as a header on every request, the event
// stream included (read with fetch: EventSource cannot send headers).
'use strict';

// ---------------------------------------------------------------------------------------
// DOM helpers: elements are built, never parsed from strings, so no value from the API is
// ever read as markup.

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, kids);
  return el;
}

const svgNS = 'http://www.w3.org/2000/svg';

function s(tag, attrs, ...kids) {
  const el = document.createElementNS(svgNS, tag);
  setAttrs(el, attrs);
  append(el, kids);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k === undefined || k === null || k === false) continue;
    el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
}

function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

function table(head, rows, attrs) {
  return h('table', attrs,
    h('thead', null, h('tr', null, head.map((c) => {
      const num = c.startsWith('#');
      return h('th', { class: num ? 'num' : null }, num ? c.slice(1) : c);
    }))),
    h('tbody', null, rows));
}

// td makes a cell; numbers and strings that look like values align right.
function td(v, cls) { return h('td', { class: cls }, v); }
function tdn(v, cls) { return h('td', { class: 'num' + (cls ? ' ' + cls : '') }, v); }

// ---------------------------------------------------------------------------------------
// Formatting: latencies are nanoseconds on the wire, shown with a unit; counts grouped.

// Numbers are rounded half up with Math.round and then printed, never with toLocaleString
// or toFixed alone (half-even in places, and differing between browsers): the browser test
// formats the collector's values the same way and compares the text exactly.
function fmtNum(v, digits) {
  if (v === undefined || v === null) return '–';
  if (typeof v !== 'number') return String(v);
  const d = Number.isInteger(v) ? 0 : (digits ?? 1);
  const p = Math.pow(10, d);
  const [i, f] = (Math.round(v * p) / p).toFixed(d).split('.');
  return i.replace(/\B(?=(\d{3})+(?!\d))/g, ',') + (f ? '.' + f : '');
}

// fmtNs shows a latency in nanoseconds with a unit and three significant digits or so.
function fmtNs(v) {
  if (v === undefined || v === null) return '–';
  const a = Math.abs(v);
  if (a < 1000) return Math.round(v) + ' ns';
  if (a < 1e4) return (Math.round(v / 10) / 100).toFixed(2) + ' µs';
  if (a < 1e6) return (Math.round(v / 100) / 10).toFixed(1) + ' µs';
  if (a < 1e7) return (Math.round(v / 1e4) / 100).toFixed(2) + ' ms';
  if (a < 1e9) return (Math.round(v / 1e5) / 10).toFixed(1) + ' ms';
  return (Math.round(v / 1e7) / 100).toFixed(2) + ' s';
}

function fmtBytes(v) {
  if (v >= 1 << 30) return (v / (1 << 30)).toFixed(1) + ' GiB';
  if (v >= 1 << 20) return (v / (1 << 20)).toFixed(1) + ' MiB';
  if (v >= 1 << 10) return (v / (1 << 10)).toFixed(1) + ' KiB';
  return v + ' B';
}

function fmtPct(f) { return f === undefined || f === null ? '–' : (100 * f).toFixed(f < 0.01 && f > 0 ? 2 : 1) + ' %'; }

function fmtAge(iso) {
  const t = Date.parse(iso);
  if (!t) return '–';
  const d = (Date.now() - t) / 1000;
  if (d < 1) return 'now';
  if (d < 120) return d.toFixed(0) + ' s ago';
  return (d / 60).toFixed(0) + ' min ago';
}

function fmtTime(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return '–';
  return d.toLocaleTimeString('en-GB', { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

// metrics: the per-hop values the flow cache and the topology carry, and how to show them.
const metrics = {
  hop_latency: { label: 'hop latency', fmt: fmtNs },
  queue_occupancy: { label: 'queue occupancy', fmt: (v) => fmtNum(v) },
  tx_utilization: { label: 'tx utilization', fmt: (v) => fmtNum(v), old: 'tx_util' },
};

// metricIn reads metric k of an API object (a hop's latest, a topology's latest) under its
// name or, from a collector that still writes it, its older one (tx_util).
function metricIn(obj, k) {
  if (!obj) return undefined;
  if (obj[k] !== undefined) return obj[k];
  return metrics[k] && metrics[k].old ? obj[metrics[k].old] : undefined;
}

// metricInfo: how to show a metric the API names, by either name.
function metricInfo(name) { return metrics[name] || Object.values(metrics).find((m) => m.old === name); }

// The flow notation is the CLI's (telemetry.FlowString and ParseFlowKey): what the console
// writes a user can paste into intake query flow, and the search box reads what any of them
// writes. Protocols by name where the CLI names them (telemetry.ProtoName), "proto N"
// otherwise.
const protoNumbers = { icmp: 1, tcp: 6, udp: 17, icmpv6: 58, sctp: 132 };

function protoName(p) { return Object.keys(protoNumbers).find((k) => protoNumbers[k] === p) || 'proto ' + p; }

// parseProto reads tcp, udp, icmp, icmpv6, sctp (any case), "proto N" or N (0-255).
function parseProto(t) {
  t = t.trim().toLowerCase();
  if (t in protoNumbers) return protoNumbers[t];
  t = t.replace(/^proto\s*/, '');
  return /^\d{1,3}$/.test(t) && Number(t) < 256 ? Number(t) : null;
}

function hostPort(addr, port) { return addr.includes(':') ? '[' + addr + ']:' + port : addr + ':' + port; }

function flowText(f) { return hostPort(f.src, f.sport) + ' > ' + hostPort(f.dst, f.dport) + ' ' + protoName(f.proto); }

// splitHostPort reads 10.0.0.1:80 or [2001:db8::1]:80.
function splitHostPort(t) {
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(t) || /^([0-9.]+):(\d{1,5})$/.exec(t);
  return m && Number(m[2]) < 65536 ? [m[1], Number(m[2])] : null;
}

// parseFlow reads a 5-tuple as the CLI does: "SRC:SPORT > DST:DPORT PROTO" (also -> or →,
// spaces optional around them) or src,dst,sport,dport,proto; null when it is neither.
function parseFlow(text) {
  const t = text.trim().replace(/\s*(->|→|>)\s*/, ' > ');
  let f;
  if (t.includes(' > ')) {
    const [a, rest] = t.split(' > ');
    const m = /^(\S+)\s+(.+)$/.exec(rest || '');
    const sp = splitHostPort(a.trim()), dp = m && splitHostPort(m[1]);
    if (!sp || !dp) return null;
    f = { src: sp[0], sport: sp[1], dst: dp[0], dport: dp[1], proto: parseProto(m[2]) };
  } else {
    const p = t.split(',').map((x) => x.trim());
    if (p.length !== 5 || !/^\d{1,5}$/.test(p[2]) || !/^\d{1,5}$/.test(p[3])) return null;
    f = { src: p[0], dst: p[1], sport: Number(p[2]), dport: Number(p[3]), proto: parseProto(p[4]) };
  }
  const v6 = (a) => a.includes(':');
  if (f.proto === null || f.sport > 65535 || f.dport > 65535 || v6(f.src) !== v6(f.dst)) return null;
  return f;
}

function flowQuery(f) {
  return new URLSearchParams({ src: f.src, dst: f.dst, sport: f.sport, dport: f.dport, proto: f.proto }).toString();
}

function flowLink(f) { return h('a', { href: '#/flow?' + flowQuery(f), class: 'mono' }, flowText(f)); }

function switchLink(id) { return h('a', { href: '#/switch?id=' + id }, String(id)); }

function pathLinks(path) {
  const out = [];
  (path || []).forEach((id, i) => { if (i) out.push(' → '); out.push(switchLink(id)); });
  return h('span', { class: 'path' }, out);
}

// ---------------------------------------------------------------------------------------
// The API: every request carries the token, if there is one; a 401 asks for it.

const tokenKey = 'intake.token';
const token = () => localStorage.getItem(tokenKey) || '';

function authHeaders() {
  const t = token();
  return t ? { Authorization: 'Bearer ' + t } : {};
}

class APIError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// waitingForToken is set by a 401 and cleared when the user gives a token: meanwhile the
// pages stop polling, so that a collector with a token is not asked again and again.
let waitingForToken = false;

async function api(path, signal) {
  if (waitingForToken) throw new APIError(401, 'the collector needs a bearer token');
  const r = await fetch(path, { headers: authHeaders(), signal, cache: 'no-store' });
  if (r.status === 401) {
    waitingForToken = true;
    askToken(token() ? 'The token was refused: enter the collector\'s http.token.' : null);
    throw new APIError(401, 'the collector needs a bearer token');
  }
  let body = null;
  try { body = await r.json(); } catch (e) { /* not JSON: the status says it */ }
  if (!r.ok) throw new APIError(r.status, (body && body.error) || r.status + ' ' + r.statusText);
  return body;
}

// tryAPI is api for endpoints of components that may be off: null on 404.
async function tryAPI(path, signal) {
  try { return await api(path, signal); } catch (e) {
    if (e.status === 404) return null;
    throw e;
  }
}

function askToken(message) {
  const f = document.getElementById('token-form');
  f.hidden = false;
  if (message) f.querySelector('label').textContent = message;
  document.getElementById('token-input').focus();
}

function setupToken() {
  const f = document.getElementById('token-form');
  f.addEventListener('submit', (e) => {
    e.preventDefault();
    const v = document.getElementById('token-input').value.trim();
    if (v) localStorage.setItem(tokenKey, v);
    f.hidden = true;
    waitingForToken = false;
    route();
    headerSummary();
  });
  document.getElementById('token-forget').addEventListener('click', () => {
    localStorage.removeItem(tokenKey);
    document.getElementById('token-input').value = '';
    waitingForToken = false;
    route();
  });
  document.getElementById('token-button').addEventListener('click', () => {
    f.hidden = !f.hidden;
    if (!f.hidden) document.getElementById('token-input').focus();
  });
}

// stream reads server-sent events with fetch (headers allowed), calling onEvent(name, data)
// for each, and reconnects after an error until signal aborts.
async function stream(path, signal, onEvent, onState) {
  while (!signal.aborted) {
    if (waitingForToken) { onState('needs a token'); return; }
    try {
      const r = await fetch(path, { headers: authHeaders(), signal, cache: 'no-store' });
      if (r.status === 401) { waitingForToken = true; askToken(null); onState('needs a token'); return; }
      if (!r.ok) {
        let msg = r.status + ' ' + r.statusText;
        try { msg = (await r.json()).error || msg; } catch (e) { /* keep the status */ }
        throw new Error(msg);
      }
      onState('live');
      const rd = r.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await rd.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let name = 'message';
          const data = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event:')) name = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
          }
          if (data.length) onEvent(name, JSON.parse(data.join('\n')));
        }
      }
      onState('ended; reconnecting');
    } catch (e) {
      if (signal.aborted) return;
      onState('down: ' + e.message + '; reconnecting');
    }
    await sleep(2000, signal);
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

// ---------------------------------------------------------------------------------------
// Pages and the router. A page gets main, the hash's parameters and a context whose
// every(ms, fn) polls while the page is open; errors show in the banner.

const pages = {};
let current = null;

function showError(msg) {
  const el = document.getElementById('error');
  el.hidden = !msg;
  el.textContent = msg || '';
}

// background runs an async step that nothing awaits (a click's, a select's): its error
// shows in the banner, and a request cut short because the user left the page is no error.
function background(p) {
  p.catch((e) => {
    if (e.name !== 'AbortError' && e.status !== 401) showError(e.message);
  });
}

function newContext() {
  const ctl = new AbortController();
  const timers = [];
  return {
    signal: ctl.signal,
    every(ms, fn) {
      let busy = false;
      const tick = async () => {
        if (busy || ctl.signal.aborted) return;
        busy = true;
        try { await fn(); showError(null); } catch (e) {
          if (!ctl.signal.aborted && e.name !== 'AbortError' && e.status !== 401) showError(e.message);
        } finally { busy = false; }
      };
      tick();
      timers.push(setInterval(tick, ms));
    },
    stop() { ctl.abort(); timers.forEach(clearInterval); },
  };
}

function route() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [name, query] = hash.split('?');
  const page = pages[name] ? name : 'overview';
  if (current) current.stop();
  current = newContext();
  showError(null);
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', a.dataset.page === page || (page === 'flow' && a.dataset.page === 'flows'));
  }
  const main = clear(document.getElementById('main'));
  main.dataset.page = page;
  pages[page](main, new URLSearchParams(query || ''), current);
}

// The header's one line: the collector's rates, refreshed while any page is open.
let lastStatus = null;
async function headerSummary() {
  try {
    const st = await api('api/v1/status');
    lastStatus = st;
    const r = st.rates || {};
    document.getElementById('summary').textContent =
      fmtNum(Math.round(r.reports_per_s || 0)) + ' reports/s · up ' + fmtDuration(st.uptime_s) +
      ' · drops ' + fmtNum(st.drops ? st.drops.total : 0);
  } catch (e) {
    document.getElementById('summary').textContent = e.status === 401 ? 'token needed' : 'collector unreachable';
  }
}

function fmtDuration(sec) {
  if (sec === undefined) return '–';
  if (sec < 120) return sec.toFixed(0) + ' s';
  if (sec < 7200) return (sec / 60).toFixed(0) + ' min';
  return (sec / 3600).toFixed(1) + ' h';
}

// ---------------------------------------------------------------------------------------
// Colour: a value against the largest shown, from green through yellow to red.

const ramp = [[102, 187, 106], [156, 204, 101], [253, 216, 53], [251, 140, 0], [211, 47, 47]];

function color(f) {
  if (!(f >= 0)) return '#9aa5b4';
  f = Math.min(1, f) * (ramp.length - 1);
  const i = Math.min(Math.floor(f), ramp.length - 2);
  const t = f - i;
  const c = ramp[i].map((a, j) => Math.round(a + t * (ramp[i + 1][j] - a)));
  return 'rgb(' + c.join(',') + ')';
}

// niceTicks: round steps (1, 2 or 5 × 10^k) covering [lo, hi] in about n steps.
function niceTicks(lo, hi, n) {
  if (!(hi > lo)) hi = lo + 1;
  const raw = (hi - lo) / (n || 5);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * p).find((v) => v >= raw);
  const out = [];
  for (let v = Math.floor(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  if (out[out.length - 1] < hi) out.push(+(out[out.length - 1] + step).toPrecision(12));
  return out;
}

// ---------------------------------------------------------------------------------------
// The time axis: GET /api/v1/history keeps the last hour of per-switch and per-flow figures
// in periods, so what happened minutes ago stays visible after the flow cache let the flows
// go (flowcache.idle_timeout). The range is in the address (range=5m|15m|1h), shared by the
// overview, switch and flow pages.

const ranges = ['5m', '15m', '1h'];

function pageRange(params) { return ranges.includes(params.get('range')) ? params.get('range') : '15m'; }

// setParam changes one parameter of the address without reloading the page (replaceState
// fires no hashchange), so a bookmark keeps what the user chose.
function setParam(k, v) {
  const [name, query] = location.hash.replace(/^#\/?/, '').split('?');
  const q = new URLSearchParams(query || '');
  if (v === '' || v === null || v === undefined) q.delete(k); else q.set(k, v);
  const qs = q.toString();
  history.replaceState(null, '', '#/' + (name || 'overview') + (qs ? '?' + qs : ''));
}

// rangePicker: the three ranges as buttons; onChange(range) after the address holds it.
function rangePicker(current, onChange) {
  const box = h('span', { class: 'range', id: 'range-picker', role: 'group', 'aria-label': 'time range' });
  for (const r of ranges) {
    box.append(h('button', {
      type: 'button', 'data-range': r, class: r === current ? 'active' : null,
      onclick: () => {
        for (const b of box.children) b.classList.toggle('active', b.dataset.range === r);
        setParam('range', r);
        onChange(r);
      },
    }, 'last ' + r.replace('m', ' min').replace('1h', '1 h')));
  }
  return box;
}

// history asks GET /api/v1/history; null when the collector has none (an older one, or the
// flow cache off).
function fetchHistory(range, extra, signal) {
  return tryAPI('api/v1/history?range=' + range + (extra ? '&' + extra : ''), signal);
}

// lastSeen is the newest period with reports in a history answer, in Unix ns, or 0.
function lastSeen(hist) {
  let t = 0;
  for (const sw of (hist && hist.switches) || []) for (const p of sw.points) if (p.reports > 0 && p.t_ns > t) t = p.t_ns;
  for (const f of (hist && hist.flows) || []) for (const p of f.points) if (p.packets > 0 && p.t_ns > t) t = p.t_ns;
  return t;
}

function fmtClock(ns) {
  const d = new Date(ns / 1e6);
  return d.toLocaleTimeString('en-GB', { hour12: false });
}

function fmtAgoNs(ns) { return fmtAge(new Date(ns / 1e6).toISOString()); }

const seriesColors = ['#1f4e79', '#d32f2f', '#f9a825', '#2e7d32', '#6a1b9a', '#00838f'];

// timeChart draws series ([{name, points: [{t, v}]}]) over [from, to] (Unix ns) as lines,
// broken where a period has no point (nothing was reported then), with the clock below.
function timeChart(series, from, to, opts) {
  const W = opts.width || 460, H = opts.height || 150, L = 58, R = 10, T = 10, B = 22;
  const all = series.flatMap((x) => x.points.map((p) => p.v)).filter((v) => v !== undefined && v !== null);
  // The axis starts at the oldest point when the history is younger than the range, so
  // that a collector up for a minute shows its minute, not a line at the right edge.
  const first = Math.min(...series.flatMap((x) => x.points.filter((p) => p.v !== undefined && p.v !== null).map((p) => p.t)));
  if (first > from && first < to) from = Math.max(from, first - (opts.period || 0));
  const svg = s('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'chart', id: opts.id, 'data-series': series.length });
  const legend = h('div', { class: 'legend small' });
  const X = (t) => L + (W - L - R) * (to > from ? (t - from) / (to - from) : 0.5);
  const g = s('g', { class: 'grid axis' });
  const ticks = niceTicks(0, Math.max(...all, 0) || 1, 3);
  const top = ticks[ticks.length - 1];
  const Y = (v) => T + (H - T - B) * (1 - v / top);
  for (const t of ticks) g.append(s('line', { x1: L, x2: W - R, y1: Y(t), y2: Y(t) }), s('text', { x: L - 5, y: Y(t), dy: '0.35em', 'text-anchor': 'end', text: opts.fmt(t) }));
  // Clock ticks every 5 s to 30 min, about four across; seconds shown below a minute.
  const stepS = [5, 10, 15, 30, 60, 120, 300, 600, 900, 1800].find((m) => (to - from) / (m * 1e9) <= 5) || 3600;
  const step = stepS * 1e9;
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) {
    g.append(s('text', { x: X(t), y: H - 6, 'text-anchor': 'middle', text: fmtClock(t).slice(0, stepS < 60 ? 8 : 5) }));
  }
  svg.append(g);
  series.forEach((x, i) => {
    const col = x.color || seriesColors[i % seriesColors.length];
    const gap = 2.5 * (opts.period || 0);
    let run = [];
    const flush = () => {
      if (run.length === 1) svg.append(s('circle', { cx: X(run[0].t), cy: Y(run[0].v), r: 2, fill: col }));
      else if (run.length) svg.append(s('polyline', { class: 'series', 'data-name': x.name, points: run.map((p) => X(p.t).toFixed(1) + ',' + Y(p.v).toFixed(1)).join(' '), fill: 'none', stroke: col, 'stroke-width': 1.6 }));
      run = [];
    };
    for (const p of x.points) {
      if (p.v === undefined || p.v === null) continue;
      if (run.length && gap && p.t - run[run.length - 1].t > gap) flush();
      run.push(p);
    }
    flush();
    const sw = h('span', { class: 'swatch' });
    sw.style.background = col;
    if (series.length > 1) legend.append(h('span', null, sw, x.name));
  });
  if (!all.length) svg.append(s('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'muted', text: 'nothing reported in this range' }));
  return h('div', null, svg, legend);
}

// chartPanel: a titled small chart.
function chartPanel(title, chart) { return h('div', { class: 'chart-panel' }, h('h3', null, title), chart); }

// historyUnavailable says why there is no chart.
function historyUnavailable() { return h('p', { class: 'muted small' }, 'This collector keeps no history (GET /api/v1/history: the flow cache is off, or the collector predates it).'); }

// switchSeries: a switch's series of a history answer, as the switch page and the overview
// show them.
function switchSeries(sw, key) { return sw.points.map((p) => ({ t: p.t_ns, v: p[key] })); }

// flowSeries: a flow's series; a latency of 0 is a period whose reports carried none (a gap).
function flowSeries(f, key) { return f.points.map((p) => ({ t: p.t_ns, v: key === 'packets' || p[key] ? p[key] : null })); }

// ---------------------------------------------------------------------------------------
// Overview: the landing page. What is slow, what is hot, what happened, what is lost; each
// part links to its detail page. Every figure is one of the API's answers as it stands
// (the slowest flows are GET /api/v1/flowcache/top?by=latency's first rows, the drops are
// /api/v1/status' drops).

const notableKinds = ['above', 'below', 'path_change', 'expire', 'new_key'];

// tile is a health figure linking to the page that explains it.
function tile(id, label, value, href, bad, note) {
  return h('a', { class: 'card tile' + (bad ? ' bad' : ''), href, id },
    h('div', { class: 'v' }, value), h('div', { class: 'l' }, label), note ? h('div', { class: 'n small' }, note) : null);
}

// lost lists the nonzero drop counters of a status answer's drops, largest first.
function lost(st) {
  return flatten(st.drops, '', []).filter(([k, v]) => k !== 'total' && v > 0).sort((a, b) => b[1] - a[1]);
}

// heat is a cell whose background says how close a value is to the column's largest.
function heat(text, f) {
  const c = tdn(text);
  if (f >= 0) c.style.background = color(f).replace('rgb', 'rgba').replace(')', ',0.35)');
  return c;
}

const mx = (latest, k) => (metricIn(latest, k) ? metricIn(latest, k).max : undefined);

pages.overview = (main, params, ctx) => {
  let range = pageRange(params);
  const tiles = h('div', { class: 'cards', id: 'ov-tiles' });
  const slow = h('div', { class: 'panel', id: 'ov-slow' }, h('h2', null, 'Slowest flows'));
  const hotSw = h('div', { class: 'panel', id: 'ov-switches' }, h('h2', null, 'Hot switches'));
  const hotLinks = h('div', { class: 'panel', id: 'ov-links' }, h('h2', null, 'Hot links'));
  const events = h('div', { class: 'panel', id: 'ov-events' }, h('h2', null, 'Recent events'));
  const hist = h('div', { class: 'panel', id: 'ov-history' }, h('h2', null, 'History'));
  main.append(h('div', { class: 'title-row' }, h('h1', null, 'Overview ', rangePicker(range, (r) => { range = r; refreshSlow(); })), flowSearch()),
    tiles,
    h('div', { class: 'row' }, h('div', { class: 'grow' }, slow, hist), h('div', { class: 'side' }, events)),
    h('div', { class: 'row' }, h('div', { class: 'grow half' }, hotSw), h('div', { class: 'grow half' }, hotLinks)));

  ctx.every(2000, async () => {
    const [st, topo, top] = await Promise.all([api('api/v1/status', ctx.signal), tryAPI('api/v1/topology', ctx.signal),
      tryAPI('api/v1/flowcache/top?by=latency&n=5', ctx.signal)]);
    const r = st.rates || {};
    const l = lost(st);
    clear(tiles).append(
      tile('ov-rate', 'reports/s', fmtNum(Math.round(r.reports_per_s || 0)), '#/health', false, fmtNum(st.reports_decoded) + ' since start'),
      tile('ov-drops', 'dropped, every component', fmtNum(st.drops.total), '#/health', st.drops.total > 0,
        l.length ? 'lost: ' + l.slice(0, 3).map(([k, v]) => k + ' ' + fmtNum(v)).join(', ') : 'nothing lost'),
      tile('ov-decode', 'reports that did not decode', fmtNum(st.decode_errors.total), '#/health', st.decode_errors.total > 0,
        st.kernel_drops ? 'kernel drops ' + fmtNum(st.kernel_drops) : 'kernel drops 0'),
      tile('ov-flows', 'flows in the flow cache', topo ? fmtNum(topo.flows) : 'off', '#/flows'),
      tile('ov-switches-n', 'switches on their paths', topo ? fmtNum(topo.switches.length) : 'off', '#/fabric'),
      tile('ov-up', 'up', fmtDuration(st.uptime_s), '#/health'));
    drawSlow(top);
    drawHot(topo);
  });
  // The events of the range, every 5 s: up to 10,000 of them to count.
  const loadEvents = async () => drawEvents(await tryAPI('api/v1/events?kind=' + notableKinds.join(',') + '&since=' + range + '&limit=10000', ctx.signal));
  ctx.every(5000, loadEvents);

  let lastTop = null;
  function refreshSlow() { drawSlow(lastTop); background(loadEvents()); background(drawHistory()); }
  function drawSlow(top) {
    lastTop = top;
    clear(slow).append(h('h2', null, 'Slowest flows ', h('a', { class: 'small', href: '#/flows?by=latency' }, 'all top flows')));
    if (!top) { slow.append(h('p', { class: 'empty' }, 'The flow cache is off (flowcache.enabled).')); return; }
    if (!top.flows.length) { slow.append(h('p', { class: 'muted' }, 'No flow in the flow cache now.', ' ', lastSeenText)); return; }
    slow.append(table(['flow', '#mean latency', '#latest', 'path', '#packets'], top.flows.map((f) => h('tr', null,
      td(flowLink(f)), tdn(fmtNs(f.latency.mean)), tdn(fmtNs(f.latency.latest)), td(pathLinks(f.path)), tdn(fmtNum(f.packets)))), { id: 'ov-slow-table' }));
  }

  function drawHot(topo) {
    clear(hotSw).append(h('h2', null, 'Hot switches ', h('span', { class: 'muted small' }, 'largest of their flows\' latest values')));
    clear(hotLinks).append(h('h2', null, 'Hot links ', h('a', { class: 'small', href: '#/fabric' }, 'fabric')));
    if (!topo || !topo.switches.length) {
      hotSw.append(h('p', { class: 'muted' }, topo ? 'No switch on a cached flow\'s path now.' : 'The flow cache is off.'));
      return;
    }
    const keys = Object.keys(metrics);
    // A cell's colour: its value between the smallest and the largest of every switch (or
    // link), not only of the rows shown.
    const top = (xs) => Object.fromEntries(keys.map((k) => {
      const vs = xs.map((x) => mx(x.latest, k)).filter((v) => v !== undefined);
      return [k, [Math.min(...vs), Math.max(...vs)]];
    }));
    const cells = (x, tops) => keys.map((k) => {
      const v = mx(x.latest, k), [lo, hi] = tops[k];
      return heat(v === undefined ? '–' : metrics[k].fmt(v), v === undefined ? -1 : hi > lo ? (v - lo) / (hi - lo) : 0);
    });
    const byLat = (a, b) => (mx(b.latest, 'hop_latency') || 0) - (mx(a.latest, 'hop_latency') || 0);
    const sws = topo.switches.slice().sort(byLat).slice(0, 6), tsw = top(topo.switches);
    hotSw.append(table(['switch', '#flows', '#hop latency', '#queue occupancy', '#tx utilization'],
      sws.map((x) => h('tr', { 'data-id': x.id }, td(switchLink(x.id)), tdn(fmtNum(x.flows)), ...cells(x, tsw))), { id: 'ov-switches-table' }));
    const links = topo.links.slice().sort(byLat).slice(0, 6), tl = top(topo.links);
    hotLinks.append(table(['link (egress of the first)', '#flows', '#hop latency', '#queue occupancy', '#tx utilization'],
      links.map((x) => h('tr', { 'data-link': x.from + '-' + x.to }, td(h('a', { href: '#/fabric?link=' + Math.min(x.from, x.to) + '-' + Math.max(x.from, x.to) }, x.from + ' → ' + x.to)),
        tdn(fmtNum(x.flows)), ...cells(x, tl))), { id: 'ov-links-table' }));
  }

  function drawEvents(ev) {
    clear(events).append(h('h2', null, 'Recent events ', h('span', { class: 'muted small' }, 'last ' + range + ', other than changes'), ' ', h('a', { class: 'small', href: '#/events' }, 'all events')));
    if (!ev) { events.append(h('p', { class: 'empty' }, 'Detection is off (detect.enabled).')); return; }
    const counts = {};
    for (const e of ev.events) counts[e.kind] = (counts[e.kind] || 0) + 1;
    events.append(h('div', { class: 'kinds', id: 'ov-event-counts' }, notableKinds.map((k) =>
      h('a', { href: '#/events?kind=' + k, class: 'pill ' + k + (counts[k] ? '' : ' zero'), 'data-kind': k, 'data-count': counts[k] || 0 }, k + ' ' + fmtNum(counts[k] || 0)))));
    if (ev.events.length >= 10000) events.append(h('p', { class: 'small muted' }, 'at least: the query stops at 10,000 events'));
    // The list: threshold crossings and path changes first, new keys only when nothing else.
    const rare = ev.events.filter((e) => e.kind !== 'new_key');
    const list = (rare.length ? rare : ev.events).slice(-8).reverse();
    events.append(list.length ? h('table', { class: 'compact', id: 'ov-events-table' }, h('tbody', null, list.map((e) => {
      const k = e.key || {};
      return h('tr', { 'data-kind': e.kind }, td(fmtTime(e.time).slice(0, 8), 'mono small nowrap'),
        td([h('span', { class: 'pill ' + e.kind }, e.kind), ' ', h('span', { class: 'small' }, e.measurement + ' ', h('span', { class: 'mono' }, eventValue(e))),
          h('div', { class: 'small' }, k.src ? flowLink(k) : null, k.switch_id !== undefined ? [k.src ? ' · ' : '', 'switch ', switchLink(k.switch_id)] : null)]));
    })))
      : h('p', { class: 'muted' }, 'Nothing but value changes in the last ' + range + '.'));
  }

  // The history: the hottest switches' largest hop latency, and the slowest flows' latency.
  let lastSeenText = '';
  async function drawHistory() {
    const hs = await fetchHistory(range, '', ctx.signal);
    clear(hist).append(h('h2', null, 'History, last ' + range));
    if (!hs) { hist.append(historyUnavailable()); return; }
    const seen = lastSeen(hs);
    lastSeenText = seen ? 'Telemetry last seen at ' + fmtClock(seen) + ' (' + fmtAgoNs(seen) + ').' : 'No telemetry in the last ' + range + '.';
    const peak = (sw) => Math.max(0, ...sw.points.map((p) => p.hop_latency_max_ns || 0));
    const sws = hs.switches.slice().sort((a, b) => peak(b) - peak(a)).slice(0, 5);
    // The slowest flows of the range (the answer lists them by reports, most first).
    const slowest = (f) => Math.max(0, ...f.points.map((p) => p.latency_mean_ns || 0));
    const fl = hs.flows.slice().sort((a, b) => slowest(b) - slowest(a)).slice(0, 5);
    hist.append(h('div', { class: 'charts' },
      chartPanel('Largest hop latency, the 5 hottest switches', timeChart(sws.map((x) => ({ name: 'switch ' + x.switch_id, points: switchSeries(x, 'hop_latency_max_ns') })), hs.from_ns, hs.to_ns, { fmt: fmtNs, period: hs.period_ns, id: 'ov-chart-switches' })),
      chartPanel('Mean end-to-end latency, the 5 slowest flows', timeChart(fl.map((f) => ({ name: f.text, points: flowSeries(f, 'latency_mean_ns') })), hs.from_ns, hs.to_ns, { fmt: fmtNs, period: hs.period_ns, id: 'ov-chart-flows' }))));
  }
  // Every 10 s, the history's default period: a point a period, and the answer holds
  // every flow of the range.
  ctx.every(10000, drawHistory);
};

// ---------------------------------------------------------------------------------------
// Fabric: the switches and links the flows' paths went through (GET /api/v1/topology),
// drawn by hop position: column k holds the switches found most often at hop k+1 of the
// cached flows' paths (source first, docs/hops.md), so traffic reads left to right, as the
// testbed's leaf-spine picture does, and any topology gets columns from its own paths.

// hopColumns gives each switch of the paths its column: the hop index (0: the source's
// switch) it is found at most often, the lowest of equals.
function hopColumns(paths) {
  const counts = new Map();
  for (const p of paths) {
    p.forEach((id, i) => {
      const c = counts.get(id) || [];
      c[i] = (c[i] || 0) + 1;
      counts.set(id, c);
    });
  }
  const col = new Map();
  for (const [id, c] of counts) {
    let best = 0;
    for (let i = 1; i < c.length; i++) if ((c[i] || 0) > (c[best] || 0)) best = i;
    col.set(id, best);
  }
  return col;
}

// fabricLayout places the switches: x by column, y by order in the column, ordered so that
// a switch sits near the switches it links to in the column before (a few barycentre
// sweeps, which keep the crossings few).
function fabricLayout(sw, links, cols) {
  const ncol = Math.max(0, ...sw.map((x) => cols.get(x.id))) + 1;
  const byCol = Array.from({ length: ncol }, () => []);
  for (const x of sw) byCol[cols.get(x.id)].push(x.id);
  byCol.forEach((c) => c.sort((a, b) => a - b));
  const nb = new Map(sw.map((x) => [x.id, []]));
  for (const l of links) {
    if (nb.has(l.from) && nb.has(l.to)) { nb.get(l.from).push(l.to); nb.get(l.to).push(l.from); }
  }
  const rank = new Map();
  const setRanks = () => byCol.forEach((c) => c.forEach((id, i) => rank.set(id, (i + 0.5) / c.length)));
  setRanks();
  for (let sweep = 0; sweep < 4; sweep++) {
    const order = sweep % 2 ? byCol.map((_, i) => ncol - 1 - i) : byCol.map((_, i) => i);
    for (const ci of order) {
      const bary = (id) => {
        const ys = nb.get(id).filter((o) => cols.get(o) !== ci).map((o) => rank.get(o));
        return ys.length ? ys.reduce((a, b) => a + b, 0) / ys.length : rank.get(id);
      };
      const b = new Map(byCol[ci].map((id) => [id, bary(id)]));
      byCol[ci].sort((x, y) => b.get(x) - b.get(y) || x - y);
      setRanks();
    }
  }
  const rows = Math.max(...byCol.map((c) => c.length));
  const W = 1000, padX = 70, top = 46, gap = 64;
  const H = top + gap * rows + 24; // room below for the bows of the bottom row's links
  const pos = {};
  byCol.forEach((c, ci) => c.forEach((id, i) => {
    pos[id] = [ncol === 1 ? W / 2 : padX + (W - 2 * padX) * ci / (ncol - 1), top + gap * (i + 0.5) * rows / c.length];
  }));
  return { W, H, pos, ncol };
}

const linkChoices = { 20: 'the 20 hottest links', 50: 'the 50 hottest links', all: 'every link' };

pages.fabric = (main, params, ctx) => {
  // The metric of the address, by either name (an older bookmark says tx_util).
  const metric = Object.keys(metrics).find((k) => k === params.get('metric') || metrics[k].old === params.get('metric')) || 'hop_latency';
  const state = { metric, stat: 'max', links: params.get('links') || '20', sel: null, topo: null, cols: new Map() };
  if (params.get('link')) state.sel = { link: params.get('link') };
  if (params.get('switch')) state.sel = { sw: Number(params.get('switch')) };
  const metricSel = h('select', { id: 'fabric-metric', onchange: () => { state.metric = metricSel.value; setParam('metric', state.metric); draw(); } },
    Object.entries(metrics).map(([k, m]) => h('option', { value: k, selected: k === state.metric }, m.label)));
  const statSel = h('select', { id: 'fabric-stat', onchange: () => { state.stat = statSel.value; draw(); } },
    h('option', { value: 'max' }, 'largest latest'), h('option', { value: 'mean' }, 'mean of the flows\' latest'));
  const linkSel = h('select', { id: 'fabric-links', onchange: () => { state.links = linkSel.value; setParam('links', state.links); draw(); } },
    Object.entries(linkChoices).map(([k, v]) => h('option', { value: k, selected: k === state.links }, v)));
  const info = h('span', { class: 'muted small', id: 'fabric-info' });
  const view = h('div');
  const side = h('div', { class: 'side panel', id: 'fabric-details' }, h('p', { class: 'muted' }, 'Click a switch or a link.'));
  main.append(h('h1', null, 'Fabric'),
    h('div', { class: 'controls' }, h('label', null, 'colour by', metricSel), h('label', null, statSel), h('label', null, 'draw', linkSel), info),
    h('div', { class: 'row' }, h('div', { class: 'grow panel' }, view), side));

  function val(latest) {
    const m = metricIn(latest, state.metric);
    return m ? m[state.stat] : undefined;
  }

  function draw() {
    const t = state.topo;
    if (!t) return;
    clear(view);
    info.textContent = t.switches.length + ' switches, ' + t.links.length + ' directed links, from ' + fmtNum(t.flows) + ' flows in the flow cache';
    if (!t.switches.length) {
      const empty = h('div', { class: 'empty', id: 'fabric-empty' }, 'No flow with INT hops in the flow cache now: flows leave it after flowcache.idle_timeout without reports.');
      view.append(empty);
      background(fetchHistory('1h', '', ctx.signal).then((hs) => {
        const seen = lastSeen(hs);
        empty.append(h('br'), seen ? ['Telemetry was last seen at ' + fmtClock(seen) + ' (' + fmtAgoNs(seen) + '); what happened since is on the ', h('a', { href: '#/overview?range=1h' }, 'overview'), '.']
          : hs ? 'No telemetry in the last hour.' : '');
      }));
      return;
    }
    // Switches without a column (not on a sampled path) go by their depth.
    const cols = new Map(t.switches.map((x) => [x.id, state.cols.has(x.id) ? state.cols.get(x.id) : x.depth]));
    // Links both ways drawn once, coloured by the worse direction.
    const pairs = new Map();
    for (const l of t.links) {
      const k = Math.min(l.from, l.to) + '-' + Math.max(l.from, l.to);
      const p = pairs.get(k) || { a: Math.min(l.from, l.to), b: Math.max(l.from, l.to), dirs: [] };
      p.dirs.push(l);
      pairs.set(k, p);
    }
    for (const p of pairs.values()) p.v = Math.max(...p.dirs.map((l) => val(l.latest) ?? -1));
    const vals = [...t.switches.map((x) => val(x.latest)), ...[...pairs.values()].map((p) => p.v)].filter((v) => v !== undefined && v >= 0);
    const vmin = vals.length ? Math.min(...vals) : 0, vmax = vals.length ? Math.max(...vals) : 0;
    // frac places a value on the colour ramp, from the smallest shown (green) to the largest
    // (red), so that the hot parts stand out however close the values are; a metric no
    // report carried is grey, and when every value is the same they are all green.
    const frac = (v) => (v === undefined || v < 0 ? -1 : vmax > vmin ? (v - vmin) / (vmax - vmin) : 0);
    const { W, H, pos, ncol } = fabricLayout(t.switches, t.links, cols);
    const fmt = metrics[state.metric].fmt;
    const svg = s('svg', { viewBox: '0 0 ' + W + ' ' + (H + 40), class: 'fabric-svg', id: 'fabric-svg', role: 'img', 'aria-label': 'fabric' });
    for (let c = 0; c < ncol; c++) {
      const x = ncol === 1 ? W / 2 : 70 + (W - 140) * c / (ncol - 1);
      svg.append(s('text', { x, y: 18, 'text-anchor': 'middle', class: 'col-head', 'data-col': c, text: 'hop ' + (c + 1) + (c === 0 ? ' (source)' : '') }));
    }
    // The hottest links only (unless every one is asked for), the worst drawn last, on top.
    // (A truncated topology may list a link to a switch it does not list: not drawn.)
    const sorted = [...pairs.values()].filter((p) => pos[p.a] && pos[p.b]).sort((p, q) => p.v - q.v);
    const shown = state.links === 'all' ? sorted : sorted.slice(-Number(state.links));
    for (const p of shown) {
      const [x1, y1] = pos[p.a], [x2, y2] = pos[p.b];
      const flows = p.dirs.reduce((n, l) => n + l.flows, 0);
      const key = p.a + '-' + p.b;
      const sel = state.sel && state.sel.link === key;
      // Next column: a straight line; otherwise a bow, so that it does not run through the
      // switches between.
      const adj = Math.abs(cols.get(p.a) - cols.get(p.b)) === 1;
      const dx = x2 - x1, dy = y2 - y1, len = Math.hypot(dx, dy) || 1;
      const bend = adj ? 0 : Math.min(0.1 * len + 18, 48);
      const mx_ = (x1 + x2) / 2 - (dy / len) * bend, my = (y1 + y2) / 2 + (dx / len) * bend;
      const f = frac(p.v);
      svg.append(s('path', {
        d: 'M' + x1.toFixed(1) + ',' + y1.toFixed(1) + ' Q' + mx_.toFixed(1) + ',' + my.toFixed(1) + ' ' + x2.toFixed(1) + ',' + y2.toFixed(1),
        class: 'link' + (sel ? ' selected' : ''), 'data-link': key, fill: 'none',
        stroke: color(f), 'stroke-width': (1.5 + 6 * Math.max(0, f)).toFixed(1),
        onclick: () => { state.sel = { link: key }; draw(); },
      }, s('title', { text: 'link ' + p.a + ' – ' + p.b + ': ' + flows + ' flows, ' + metrics[state.metric].label + ' ' + (p.v >= 0 ? fmt(p.v) : '–') })));
    }
    for (const x of t.switches) {
      const [cx, cy] = pos[x.id];
      const v = val(x.latest);
      const sel = state.sel && state.sel.sw === x.id;
      svg.append(s('g', {
        class: 'switch' + (sel ? ' selected' : ''), 'data-id': x.id, 'data-col': cols.get(x.id), transform: 'translate(' + cx.toFixed(1) + ',' + cy.toFixed(1) + ')',
        onclick: () => { state.sel = { sw: x.id }; draw(); },
      }, s('title', { text: 'switch ' + x.id + ': ' + x.flows + ' flows, ' + metrics[state.metric].label + ' ' + (v !== undefined ? fmt(v) : '–') }),
      s('circle', { r: 19, fill: color(frac(v)) }),
      s('text', { 'text-anchor': 'middle', dy: '0.35em', text: x.id })));
    }
    // Legend: the colour ramp from 0 to the largest value shown.
    const lg = s('g', { class: 'legend', transform: 'translate(' + (W - 280) + ',' + (H + 10) + ')' });
    for (let i = 0; i < 50; i++) lg.append(s('rect', { x: i * 4, y: 0, width: 4, height: 10, fill: color(i / 49) }));
    lg.append(s('text', { x: -6, y: 9, 'text-anchor': 'end', text: fmt(vmin) }), s('text', { x: 206, y: 9, text: fmt(vmax) }));
    svg.append(lg, s('text', { x: 10, y: H + 20, class: 'muted', text: metrics[state.metric].label + ' (' + statSel.selectedOptions[0].text + '); '
      + (shown.length < sorted.length ? 'the ' + shown.length + ' hottest of ' + sorted.length + ' links; ' : '') + 'hotter links are thicker' }));
    view.append(svg);
    background(details());
  }

  async function details() {
    const t = state.topo;
    if (!state.sel) return;
    if (state.sel.sw !== undefined) {
      const x = t.switches.find((y) => y.id === state.sel.sw);
      if (!x) return;
      const outs = t.links.filter((l) => l.from === x.id), ins = t.links.filter((l) => l.to === x.id);
      const linkRows = (ls, other) => ls.map((l) => h('tr', null, td(switchLink(l[other])), tdn(fmtNum(l.flows)),
        tdn(l.latest.hop_latency ? fmtNs(l.latest.hop_latency.mean) : '–'),
        tdn(l.latest.queue_occupancy ? fmtNum(l.latest.queue_occupancy.mean) : '–')));
      const box = h('div', null,
        h('h2', null, 'Switch ' + x.id, ' ', h('a', { class: 'small', href: '#/switch?id=' + x.id }, 'histograms')),
        h('dl', { class: 'kv' }, h('dt', null, 'flows through it'), h('dd', null, fmtNum(x.flows)),
          h('dt', null, 'paths starting / ending here'), h('dd', null, x.first + ' / ' + x.last)),
        h('h2', null, 'Latest values of its flows'),
        table(['metric', '#mean', '#largest'], Object.entries(metrics).map(([k, m]) =>
          h('tr', null, td(m.label), tdn(metricIn(x.latest, k) ? m.fmt(metricIn(x.latest, k).mean) : '–'), tdn(metricIn(x.latest, k) ? m.fmt(metricIn(x.latest, k).max) : '–')))),
        h('h2', null, 'Next switches (its egress)'),
        outs.length ? table(['to', '#flows', '#hop latency', '#queue'], linkRows(outs, 'to')) : h('p', { class: 'muted' }, 'none: paths end here'),
        h('h2', null, 'Previous switches'),
        ins.length ? table(['from', '#flows', '#hop latency', '#queue'], linkRows(ins, 'from')) : h('p', { class: 'muted' }, 'none: paths start here'));
      const ports = h('div');
      box.append(ports);
      clear(side).append(box);
      const lp = await tryAPI('api/v1/label/ports', ctx.signal);
      if (lp && lp.ports) {
        const mine = lp.ports.filter((p) => p.switch_id === x.id);
        clear(ports).append(h('h2', null, 'Ports (INT-label, newest state)'),
          mine.length ? table(['port', '#from port', '#latency', '#queue', '#age'], mine.map((p) =>
            h('tr', null, td(String(p.port)), tdn(String(p.ingress_port)), tdn(fmtNs(p.latency_ns)), tdn(fmtNum(p.deq_qdepth)), tdn(fmtNum(p.age_ms, 0) + ' ms'))))
            : h('p', { class: 'muted' }, 'no INT-label state for this switch'));
      }
    } else {
      const [a, b] = state.sel.link.split('-').map(Number);
      const dirs = t.links.filter((l) => (l.from === a && l.to === b) || (l.from === b && l.to === a));
      clear(side).append(h('h2', null, 'Link ' + a + ' – ' + b),
        h('p', { class: 'muted small' }, 'A direction\'s values are its upstream switch\'s, on the flows that went on to the other: its egress towards it.'),
        table(['direction', '#flows', '#hop latency', '#queue', '#tx util'], dirs.map((l) => h('tr', null,
          td([switchLink(l.from), ' → ', switchLink(l.to)]), tdn(fmtNum(l.flows)),
          tdn(l.latest.hop_latency ? fmtNs(l.latest.hop_latency.mean) : '–'),
          tdn(l.latest.queue_occupancy ? fmtNum(l.latest.queue_occupancy.mean) : '–'),
          tdn(metricIn(l.latest, 'tx_utilization') ? fmtNum(metricIn(l.latest, 'tx_utilization').mean) : '–')))));
    }
  }

  ctx.every(2000, async () => {
    const [t, top] = await Promise.all([tryAPI('api/v1/topology', ctx.signal), tryAPI('api/v1/flowcache/top?by=packets&n=1000', ctx.signal)]);
    if (!t) {
      clear(view).append(h('div', { class: 'empty' }, 'The flow cache is off (flowcache.enabled): no paths to draw.'));
      return;
    }
    state.topo = t;
    // The columns come from the paths of the (up to) 1000 busiest flows: enough to say where
    // a switch sits, whatever the fabric's size.
    if (top) state.cols = hopColumns(top.flows.map((f) => f.path));
    draw();
  });
};

// ---------------------------------------------------------------------------------------
// Events: the recent ones, then the live stream, filtered here.

const dtaOps = { 1: 'key-write', 2: 'append', 3: 'key-increment', 4: 'postcard' };

const eventKinds = ['new_key', 'path_change', 'change', 'above', 'below', 'expire', 'immediate'];

function keyText(k) {
  const parts = [];
  if (k.src) parts.push(flowText(k));
  if (k.switch_id !== undefined) parts.push('switch ' + k.switch_id);
  for (const f of ['queue_id', 'port', 'buffer_id', 'reason', 'hw_id']) if (k[f] !== undefined) parts.push(f + ' ' + k[f]);
  return parts.join(' · ');
}

function eventValue(e) {
  const lat = /latency/.test(e.measurement);
  const f = lat ? fmtNs : fmtNum;
  if (e.measurement === 'flow_path') return e.path ? e.path.join(' → ') : '';
  // A DTA report's notification: its primitive (prev, the opcode), an Append's list (value).
  if (e.kind === 'immediate') return (dtaOps[e.prev] || 'opcode ' + e.prev) + (e.prev === 2 ? ' list ' + e.value : '');
  if (e.kind === 'new_key') return f(e.value);
  return f(e.prev) + ' → ' + f(e.value) + (e.threshold !== undefined ? ' (threshold ' + f(e.threshold) + ')' : '');
}

function eventRow(e) {
  const k = e.key || {};
  return h('tr', { 'data-kind': e.kind },
    td(fmtTime(e.time), 'mono small'), td(h('span', { class: 'pill ' + e.kind }, e.kind)), td(e.measurement),
    td([k.src ? flowLink(k) : null, k.src && k.switch_id !== undefined ? ' · ' : null,
      k.switch_id !== undefined ? ['switch ', switchLink(k.switch_id)] : null,
      ['queue_id', 'port', 'buffer_id', 'reason', 'hw_id'].filter((f) => k[f] !== undefined).map((f) => ' · ' + f + ' ' + k[f])]),
    td(eventValue(e), 'mono'));
}

pages.events = (main, params, ctx) => {
  const buf = [];
  const keep = 5000, show = 300;
  const kinds = new Set(params.get('kind') ? params.get('kind').split(',') : eventKinds);
  const boxes = eventKinds.map((k) => h('label', null, h('input', {
    type: 'checkbox', 'data-kind': k, checked: kinds.has(k),
    onchange: (ev) => { ev.target.checked ? kinds.add(k) : kinds.delete(k); render(); },
  }), k));
  const meas = h('select', { id: 'events-measurement', onchange: () => render() }, h('option', { value: '' }, 'every measurement'));
  const text = h('input', { type: 'text', id: 'events-filter', placeholder: 'key contains (address, switch 3, …)', size: 30, oninput: () => render() });
  const pause = h('input', { type: 'checkbox', id: 'events-pause' });
  const state = h('span', { class: 'pill', id: 'events-state' }, 'connecting');
  const count = h('span', { class: 'muted small' });
  const body = h('tbody', { id: 'events-body' });
  main.append(h('h1', null, 'Events ', state),
    h('div', { class: 'controls' }, boxes), 
    h('div', { class: 'controls' }, meas, text, h('label', null, pause, 'pause'), count),
    h('div', { class: 'panel' }, h('table', { id: 'events-table' },
      h('thead', null, h('tr', null, ['time', 'kind', 'measurement', 'key', 'value'].map((c) => h('th', null, c)))), body)));

  const seenMeas = new Set();
  let pending = false;
  function render() {
    pending = false;
    if (pause.checked) return;
    const m = meas.value, q = text.value.trim().toLowerCase();
    const rows = [];
    let n = 0;
    for (let i = buf.length - 1; i >= 0 && rows.length < show; i--) {
      const e = buf[i];
      if (!kinds.has(e.kind) || (m && e.measurement !== m)) continue;
      if (q && !keyText(e.key || {}).toLowerCase().includes(q)) continue;
      rows.push(eventRow(e));
    }
    for (const e of buf) if (kinds.has(e.kind) && (!m || e.measurement === m)) n++;
    clear(body).append(...rows);
    count.textContent = 'showing ' + rows.length + ' of the last ' + buf.length + ' events received (' + n + ' of the kinds and measurement chosen)';
  }
  function add(e) {
    buf.push(e);
    if (buf.length > keep) buf.splice(0, buf.length - keep);
    if (!seenMeas.has(e.measurement)) {
      seenMeas.add(e.measurement);
      meas.append(h('option', { value: e.measurement }, e.measurement));
    }
    if (!pending) { pending = true; setTimeout(render, 250); }
  }
  (async () => {
    try {
      const r = await api('api/v1/events?limit=500', ctx.signal);
      r.events.forEach(add);
      render();
    } catch (e) {
      if (e.status === 404) { state.textContent = 'detection is off (detect.enabled)'; return; }
      if (!ctx.signal.aborted) showError(e.message);
    }
    stream('api/v1/events/stream', ctx.signal, (name, e) => {
      if (name === 'overflow') { state.textContent = 'fell behind: ' + e.lost + ' events lost'; return; }
      add(e);
    }, (st) => {
      state.textContent = st;
      state.className = 'pill ' + (st === 'live' ? 'live' : 'down');
    });
  })();
};

// ---------------------------------------------------------------------------------------
// Top flows by latency (or packets), with their paths.

// flowSearch is the box that takes a flow in any notation the CLI reads and opens its page;
// what it cannot read goes to the flow page as typed, which says what it wants.
function flowSearch() {
  const input = h('input', { type: 'text', id: 'flow-search', size: 38, placeholder: '10.0.0.1:5000 > 10.0.0.2:80 udp', spellcheck: 'false' });
  const form = h('form', { class: 'search', id: 'flow-search-form' }, h('label', null, 'find a flow', input), h('button', { type: 'submit' }, 'Open'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const t = input.value.trim();
    if (!t) return;
    const f = parseFlow(t);
    location.hash = '#/flow?' + (f ? flowQuery(f) : new URLSearchParams({ flow: t }).toString());
  });
  return form;
}

// The top flows' filters, as GET /api/v1/flowcache/top takes them: a switch on the path, an
// address in a prefix (either end), a port (either end).
const topFilters = [['switch', 'switch id', 8, 'e.g. 3'], ['prefix', 'prefix', 18, 'e.g. 10.0.0.0/24'], ['port', 'port', 8, 'e.g. 443']];

pages.flows = (main, params, ctx) => {
  const by = h('select', { id: 'flows-by' }, h('option', { value: 'latency' }, 'mean end-to-end latency'), h('option', { value: 'packets' }, 'packets'));
  by.value = params.get('by') || 'latency';
  const n = h('select', { id: 'flows-n' }, [10, 25, 50, 100].map((v) => h('option', { value: v, selected: v === 25 }, String(v))));
  const inputs = Object.fromEntries(topFilters.map(([k, , size, ph]) => [k, h('input', { type: 'text', id: 'flows-' + k, size, placeholder: ph, value: params.get(k) || '' })]));
  const note = h('span', { class: 'muted small', id: 'flows-note' });
  const body = h('tbody', { id: 'flows-body' });
  main.append(h('h1', null, 'Top flows'),
    h('div', { class: 'controls' }, h('label', null, 'by', by), h('label', null, 'show', n),
      topFilters.map(([k, label]) => h('label', null, label, inputs[k])), note),
    h('div', { class: 'controls' }, flowSearch()),
    h('div', { class: 'panel' }, h('table', { id: 'flows-table' }, h('thead', null, h('tr', null,
      ['#', 'flow', '#packets', '#latency (last)', '#latency (mean)', 'path', '#last seen'].map((c) => h('th', { class: c.startsWith('#') && c.length > 1 ? 'num' : null }, c.length > 1 ? c.replace(/^#/, '') : c)))), body)));
  const query = () => {
    const q = new URLSearchParams({ by: by.value, n: n.value });
    for (const [k] of topFilters) if (inputs[k].value.trim()) q.set(k, inputs[k].value.trim());
    return q;
  };
  const load = async () => {
    const q = query();
    const r = await tryAPI('api/v1/flowcache/top?' + q, ctx.signal);
    if (!r) { clear(body).append(h('tr', null, h('td', { colspan: 7, class: 'empty' }, 'The flow cache is off (flowcache.enabled).'))); return; }
    const filtered = topFilters.filter(([k]) => q.has(k));
    note.textContent = filtered.length ? 'only flows ' + filtered.map(([k]) => (k === 'switch' ? 'through switch ' : k === 'prefix' ? 'to or from ' : 'on port ') + q.get(k)).join(', ') : '';
    clear(body).append(...r.flows.map((f, i) => h('tr', null, tdn(String(i + 1)), td(flowLink(f)), tdn(fmtNum(f.packets)),
      tdn(fmtNs(f.latency.latest)), tdn(fmtNs(f.latency.mean)), td(pathLinks(f.path)), tdn(fmtAge(f.last_seen)))));
    if (!r.flows.length) body.append(h('tr', null, h('td', { colspan: 7, class: 'empty' }, filtered.length ? 'No flow in the flow cache matches.' : 'No flow in the flow cache now.')));
  };
  const changed = () => {
    for (const [k, v] of query()) if (k !== 'n') setParam(k, v);
    for (const [k] of topFilters) if (!inputs[k].value.trim()) setParam(k, '');
    background(load());
  };
  by.onchange = changed;
  n.onchange = changed;
  for (const [k] of topFilters) {
    inputs[k].addEventListener('change', changed);
    inputs[k].addEventListener('keydown', (e) => { if (e.key === 'Enter') changed(); });
  }
  ctx.every(2000, load);
};

// ---------------------------------------------------------------------------------------
// One flow: its per-hop latest and mean values (flow cache) and its events (detect). Hops are
// numbered from the source, as everywhere (docs/hops.md); "latest" is the newest value the
// flow's reports carried, "mean" over its reports since it entered the flow cache: the names
// and figures of intake query flowcache-flow.

pages.flow = (main, params, ctx) => {
  let f = Object.fromEntries(['src', 'dst', 'sport', 'dport', 'proto'].map((k) => [k, params.get(k)]));
  if (params.get('flow')) f = parseFlow(params.get('flow')) || {};
  else if (f.proto !== null) f.proto = parseProto(f.proto);
  if (['src', 'dst', 'sport', 'dport', 'proto'].some((k) => f[k] === null || f[k] === undefined || f[k] === '')) {
    main.append(h('h1', null, 'Flow'),
      params.get('flow') ? h('p', { class: 'bad', id: 'flow-error' }, 'Not a flow: "' + params.get('flow') + '". Write it as the CLI does: SRC:SPORT > DST:DPORT PROTO (10.0.0.1:5000 > 10.0.0.2:80 udp; -> and → work too, the protocol by name or number), or src,dst,sport,dport,proto.') : null,
      h('p', null, 'Pick a flow from ', h('a', { href: '#/flows' }, 'the top flows'), ' or find one:'), flowSearch());
    return;
  }
  ['sport', 'dport', 'proto'].forEach((k) => { f[k] = Number(f[k]); });
  const q = flowQuery(f);
  let range = pageRange(params);
  const hist = h('div', { class: 'panel', id: 'flow-history' });
  const summary = h('dl', { class: 'kv', id: 'flow-summary' });
  const hops = h('tbody', { id: 'flow-hops' });
  const events = h('tbody', { id: 'flow-events' });
  main.append(h('h1', null, 'Flow ', h('span', { class: 'flow-title', id: 'flow-title' }, flowText(f)), ' ', rangePicker(range, (r) => { range = r; background(drawHistory()); })),
    h('div', { class: 'row' }, h('div', { class: 'panel grow' }, summary), h('div', { class: 'grow' }, hist)),
    h('div', { class: 'panel' }, h('h2', null, 'Hops, numbered from the source'),
      h('table', { id: 'flow-hops-table' }, h('thead', null,
        h('tr', null, h('th', { class: 'num' }, 'hop'), h('th', null, 'switch'),
          ...['hop latency', 'queue occupancy', 'tx utilization'].flatMap((m) => [h('th', { class: 'num' }, m + ' latest'), h('th', { class: 'num' }, 'mean')]))), hops),
      h('p', { class: 'muted small' }, 'latest: the newest value this flow\'s reports carried at the hop; mean: over its reports since it entered the flow cache (first seen). Hop 1 is the first switch of the path.')),
    h('div', { class: 'panel' }, h('h2', null, 'Its events, newest first'), h('table', null,
      h('thead', null, h('tr', null, ['time', 'kind', 'measurement', 'key', 'value'].map((c) => h('th', null, c)))), events)));
  ctx.every(2000, async () => {
    let rec = null;
    try { rec = await api('api/v1/flowcache/flow?' + q, ctx.signal); } catch (e) {
      if (e.status !== 404) throw e;
    }
    clear(summary);
    clear(hops);
    if (!rec) {
      summary.append(h('dt', null, 'flow cache'), h('dd', null, 'not in the flow cache (unknown, evicted or aged out)'));
    } else {
      const kv = (k, v) => [h('dt', null, k), h('dd', null, v)];
      summary.append(...kv('packets', fmtNum(rec.packets)), ...kv('first seen', fmtTime(rec.first_seen)),
        ...kv('last seen', fmtTime(rec.last_seen) + ' (' + fmtAge(rec.last_seen) + ')'),
        ...kv('end-to-end latency', h('span', { id: 'flow-latency' }, fmtNs(rec.latency.latest) + ' latest, ' + fmtNs(rec.latency.mean) + ' mean')),
        ...kv('path', pathLinks(rec.path)), ...(rec.truncated ? kv('truncated', 'the path is longer than flowcache.max_hops') : []));
      rec.hops.forEach((hp, i) => {
        const cells = [];
        for (const [k, m] of Object.entries(metrics)) {
          const latest = metricIn(hp.latest, k), mean = metricIn(hp.mean, k);
          cells.push(tdn(latest !== undefined ? m.fmt(latest) : '–', k + '-latest'), tdn(mean !== undefined ? m.fmt(mean) : '–', k + '-mean'));
        }
        hops.append(h('tr', { 'data-switch': hp.node_id, 'data-hop': hp.hop || i + 1 }, tdn(String(hp.hop || i + 1)), td(switchLink(hp.node_id)), ...cells));
      });
    }
    const ev = await tryAPI('api/v1/events?limit=200&' + q, ctx.signal);
    clear(events);
    if (!ev) { events.append(h('tr', null, h('td', { colspan: 5, class: 'empty' }, 'Detection is off (detect.enabled).'))); return; }
    events.append(...ev.events.slice().reverse().map(eventRow));
    if (!ev.events.length) events.append(h('tr', null, h('td', { colspan: 5, class: 'muted' }, 'No event of this flow in the event log (detect.event_log keeps the newest).')));
  });

  // Its history: there after the flow cache let it go.
  async function drawHistory() {
    const hs = await fetchHistory(range, 'flow=' + encodeURIComponent(flowText(f)), ctx.signal);
    clear(hist).append(h('h2', null, 'Last ' + range));
    if (!hs) { hist.append(historyUnavailable()); return; }
    const mine = hs.flows[0];
    if (!mine) { hist.append(h('p', { class: 'muted' }, 'No report of this flow in the last ' + range + '.')); return; }
    const pts = (k) => flowSeries(mine, k);
    const o = { fmt: fmtNs, period: hs.period_ns, width: 420, height: 120 };
    hist.append(h('div', { class: 'charts' },
      chartPanel('End-to-end latency: mean per period and latest at its end', timeChart([{ name: 'mean', points: pts('latency_mean_ns') }, { name: 'latest', points: pts('latency_latest_ns') }], hs.from_ns, hs.to_ns, { ...o, id: 'flow-chart-latency' })),
      chartPanel('Packets per period', timeChart([{ name: 'packets', points: pts('packets') }], hs.from_ns, hs.to_ns, { ...o, fmt: fmtNum, id: 'flow-chart-packets' }))));
  }
  ctx.every(5000, drawHistory);
};

// ---------------------------------------------------------------------------------------
// Per-switch histograms, drawn as bars over their bins.

function histChart(hst, fmt) {
  const bins = hst.counts || [];
  if (!bins.length) return h('p', { class: 'muted' }, 'no samples');
  const W = 640, H = 200, L = 56, B = 46, T = 10;
  const maxC = Math.max(...bins.map((b) => b.count));
  const ticks = niceTicks(0, maxC, 4);
  const top = ticks[ticks.length - 1];
  const bw = (W - L - 10) / bins.length;
  const y = (v) => T + (H - T - B) * (1 - v / top);
  const svg = s('svg', { viewBox: '0 0 ' + W + ' ' + H, width: W, class: 'hist' });
  const grid = s('g', { class: 'grid axis' });
  for (const t of ticks) grid.append(s('line', { x1: L, x2: W - 10, y1: y(t), y2: y(t) }), s('text', { x: L - 6, y: y(t), dy: '0.35em', 'text-anchor': 'end', text: fmtNum(t) }));
  svg.append(grid);
  const every = Math.ceil(bins.length / 8);
  bins.forEach((b, i) => {
    const x = L + i * bw;
    svg.append(s('rect', { x: x + 1, y: y(b.count), width: Math.max(bw - 2, 1), height: y(0) - y(b.count), fill: '#1f4e79' },
      s('title', { text: (b.hi === undefined ? '≥ ' + fmt(b.lo) : fmt(b.lo) + ' – ' + fmt(b.hi)) + ': ' + fmtNum(b.count) })));
    if (i % every === 0) svg.append(s('text', { class: 'axis', x: x + bw / 2, y: H - B + 16, 'text-anchor': 'middle', text: fmt(b.lo) }));
  });
  svg.append(s('text', { x: L, y: H - 6, class: 'axis', text: 'bin lower bound (' + hst.scale + ' bins); bars: samples' }));
  return svg;
}

// quantile from binned counts: "≤ the upper bound" of the bin where the q-th sample falls,
// or "≥ its lower bound" for the last bin, which has no upper one.
function quantile(hst, q, fmt) {
  const need = q * hst.total;
  let seen = 0;
  for (const b of hst.counts || []) {
    seen += b.count;
    if (seen >= need) return b.hi === undefined ? '≥ ' + fmt(b.lo) : '≤ ' + fmt(b.hi);
  }
  return '–';
}

pages.switch = (main, params, ctx) => {
  const sel = h('select', { id: 'switch-select', onchange: () => { location.hash = '#/switch?id=' + sel.value; } });
  const out = h('div', { id: 'switch-hists' });
  const hist = h('div', { class: 'panel', id: 'switch-history' });
  let range = pageRange(params);
  main.append(h('h1', null, 'Switch ' + (params.get('id') === 'e2e' ? 'end to end' : params.get('id') || ''), ' ', rangePicker(range, (r) => { range = r; background(drawHistory()); })), h('div', { class: 'controls' }, h('label', null, 'switch', sel),
    h('a', { href: '#/fabric?switch=' + (params.get('id') || '') }, 'on the fabric'), h('a', { href: '#/flows?switch=' + (params.get('id') || '') }, 'its top flows')), hist,
    h('h2', null, 'Histograms ', h('span', { class: 'muted small' }, 'every hop sample since the collector started (flowcache.histograms)')), out);

  // Its history: the figures of the range, period by period.
  async function drawHistory() {
    const id = params.get('id');
    if (!id || id === 'e2e') { hist.hidden = true; return; }
    const hs = await fetchHistory(range, 'switch=' + encodeURIComponent(id), ctx.signal);
    clear(hist).append(h('h2', null, 'Switch ' + id + ', last ' + range));
    if (!hs) { hist.append(historyUnavailable()); return; }
    const mine = hs.switches.find((x) => String(x.switch_id) === id);
    if (!mine) { hist.append(h('p', { class: 'muted' }, 'No report through this switch in the last ' + range + '.')); return; }
    const o = { period: hs.period_ns, width: 330, height: 120 };
    const one = (name, k) => [{ name, points: switchSeries(mine, k) }];
    hist.append(h('div', { class: 'charts' },
      chartPanel('Hop latency: mean, largest', timeChart([{ name: 'mean', points: switchSeries(mine, 'hop_latency_mean_ns') }, { name: 'largest', points: switchSeries(mine, 'hop_latency_max_ns') }], hs.from_ns, hs.to_ns, { ...o, fmt: fmtNs, id: 'switch-chart-latency' })),
      chartPanel('Queue occupancy, largest', timeChart(one('queue', 'queue_occupancy_max'), hs.from_ns, hs.to_ns, { ...o, fmt: fmtNum, id: 'switch-chart-queue' })),
      chartPanel('Tx utilization, largest', timeChart(one('tx', 'tx_utilization_max'), hs.from_ns, hs.to_ns, { ...o, fmt: fmtNum, id: 'switch-chart-tx' })),
      chartPanel('Reports per period', timeChart(one('reports', 'reports'), hs.from_ns, hs.to_ns, { ...o, fmt: fmtNum, id: 'switch-chart-reports' }))));
  }
  ctx.every(5000, drawHistory);
  let listed = false;
  ctx.every(5000, async () => {
    const list = await tryAPI('api/v1/histograms', ctx.signal);
    if (!list) { clear(out).append(h('p', { class: 'empty' }, 'The flow cache is off (flowcache.enabled).')); return; }
    const id = params.get('id') || (list.switches.length ? String(list.switches[0]) : 'e2e');
    if (!listed) {
      list.switches.forEach((x) => sel.append(h('option', { value: x }, 'switch ' + x)));
      sel.append(h('option', { value: 'e2e' }, 'end to end'));
      sel.value = id;
      listed = true;
    }
    const names = id === 'e2e' ? ['latency'] : list.metrics;
    const hs = await Promise.all(names.map((m) => tryAPI('api/v1/histograms/' + encodeURIComponent(id) + '/' + m, ctx.signal)));
    clear(out);
    names.forEach((m, i) => {
      const hst = hs[i];
      const fmt = (metricInfo(m) || { fmt: fmtNs }).fmt;
      const label = (metricInfo(m) || { label: 'end-to-end latency' }).label;
      out.append(h('div', { class: 'panel', 'data-metric': m }, h('h2', null, label),
        hst ? [h('p', { class: 'muted small' }, fmtNum(hst.total) + ' samples · median ' + quantile(hst, 0.5, fmt) + ' · 99th percentile ' + quantile(hst, 0.99, fmt)), histChart(hst, fmt)]
          : h('p', { class: 'muted' }, 'no samples for this switch')));
    });
  });
};

// ---------------------------------------------------------------------------------------
// Collector health: rates by format, every drop counter, sinks and their last errors.

function flatten(obj, prefix, out) {
  for (const [k, v] of Object.entries(obj || {})) {
    const name = prefix ? prefix + '.' + k : k;
    if (v && typeof v === 'object') flatten(v, name, out);
    else out.push([name, v]);
  }
  return out;
}

// counterTable lists counters; drops marks the nonzero ones as losses.
function counterTable(pairs, id, drops) {
  return table(['counter', '#value'], pairs.map(([k, v]) => h('tr', { class: drops && v ? 'nonzero' : null }, td(k, 'mono'), tdn(fmtNum(v)))), { id });
}

pages.health = (main, params, ctx) => {
  const cards = h('div', { class: 'cards', id: 'health-cards' });
  const formats = h('div', { class: 'panel' });
  const listeners = h('div', { class: 'panel' });
  const drops = h('div', { class: 'panel' });
  const sinks = h('div', { class: 'panel' });
  const detect = h('div', { class: 'panel' });
  main.append(h('h1', null, 'Collector health'), cards, h('div', { class: 'row' }, h('div', { class: 'grow' }, formats, listeners, sinks, detect), h('div', { class: 'side' }, drops)));
  let prev = null;
  ctx.every(1000, async () => {
    const [st, ds, fc] = await Promise.all([api('api/v1/status', ctx.signal), tryAPI('api/v1/detect/status', ctx.signal), tryAPI('api/v1/flowcache/stats', ctx.signal)]);
    const r = st.rates || {};
    const card = (l, v, bad) => h('div', { class: 'card' + (bad ? ' bad' : '') }, h('div', { class: 'v' }, v), h('div', { class: 'l' }, l));
    clear(cards).append(card('reports/s', fmtNum(Math.round(r.reports_per_s || 0))), card('packets/s', fmtNum(Math.round(r.packets_per_s || 0))),
      card('received', fmtNum(st.packets_received)), card('decode errors', fmtNum(st.decode_errors.total), st.decode_errors.total > 0),
      card('drops, every component', fmtNum(st.drops.total), st.drops.total > 0), card('kernel drops', fmtNum(st.kernel_drops), st.kernel_drops > 0),
      card('up', fmtDuration(st.uptime_s)), card('workers', fmtNum(st.workers)));

    // Rates by format: the change of each format's count since the last poll.
    const dt = prev ? st.uptime_s - prev.uptime_s : 0;
    clear(formats).append(h('h2', null, 'Reports by format'), table(['format', '#reports', '#per second'],
      Object.entries(st.reports_by_format || {}).map(([k, v]) => h('tr', { 'data-format': k }, td(k), tdn(fmtNum(v)),
        tdn(prev && dt > 0 ? fmtNum(Math.max(0, (v - (prev.reports_by_format[k] || 0)) / dt), 0) : '…'))), { id: 'health-formats' }));
    prev = st;

    clear(listeners).append(h('h2', null, 'Listeners'), table(['listener', 'address', '#sockets', '#packets', '#reports', '#decode errors', '#drops', '#receive buffer'],
      (st.listeners || []).map((l) => h('tr', null, td(l.name), td(l.address, 'mono'), tdn(l.sockets), tdn(fmtNum(l.packets_received)), tdn(fmtNum(l.reports_decoded)),
        tdn(fmtNum(l.decode_errors.total)), tdn(fmtNum(l.ingest_drops.total)), tdn(fmtBytes(l.rcvbuf_granted))))));

    const all = flatten(st.drops, '', []).filter(([k]) => k !== 'total');
    clear(drops).append(h('h2', null, 'Every drop counter (status: drops)'), counterTable(all, 'health-drops', true),
      h('h2', null, 'Decode errors by reason'), counterTable(flatten(st.decode_errors.by_reason, '', []), 'health-decode', true),
      h('h2', null, 'Inner packets that did not decode'), counterTable(flatten(st.inner_errors.by_reason, '', []), 'health-inner', true));

    clear(sinks).append(h('h2', null, 'Sinks'));
    const sinkRows = [];
    if (ds) for (const x of ds.export.sinks || []) {
      const dropped = Object.values(x.dropped || {}).reduce((a, b) => a + b, 0);
      const stored = x.exported_events === undefined ? '–' : fmtNum(x.exported_events + x.exported_periodic);
      sinkRows.push(h('tr', { 'data-sink': x.name }, td(x.name), tdn(fmtNum(x.sent)), tdn(stored), tdn(fmtNum(x.retried)), tdn(fmtNum(dropped), dropped ? 'bad' : null),
        tdn(fmtNum(x.queued)), td(x.last_error ? [x.last_error, h('div', { class: 'muted small' }, fmtTime(x.last_error_time))] : h('span', { class: 'muted' }, 'none'))));
    }
    if (fc && fc.redis) {
      const rd = fc.redis;
      const dropped = flatten(rd.dropped, '', []).reduce((a, [, v]) => a + v, 0);
      sinkRows.push(h('tr', { 'data-sink': 'redis' }, td('redis'), tdn(fmtNum(flatten(rd.sent, '', []).reduce((a, [, v]) => a + v, 0))), tdn('–'), tdn('–'), tdn(fmtNum(dropped)), tdn('–'),
        td(rd.last_error ? [rd.last_error, h('div', { class: 'muted small' }, fmtTime(rd.last_error_time))] : h('span', { class: 'muted' }, 'none'))));
    }
    sinks.append(sinkRows.length ? table(['sink', '#sent', '#values stored', '#retried', '#dropped', '#queued', 'last error'], sinkRows, { id: 'health-sinks' }) : h('p', { class: 'muted' }, 'no sink configured'));
    if (fc) {
      sinks.append(h('h2', null, 'Event rings (one per consumer of the event bus)'), table(['consumer', '#size', '#pending', '#dropped'],
        fc.event_rings.map((x) => h('tr', { class: x.drops ? 'nonzero' : null }, td(x.consumer), tdn(fmtNum(x.size)), tdn(fmtNum(x.pending)), tdn(fmtNum(x.drops))))));
    }
    clear(detect);
    if (ds) {
      const d = ds.detect;
      detect.append(h('h2', null, 'Event detection'), h('dl', { class: 'kv' },
        h('dt', null, 'values seen'), h('dd', null, fmtNum(d.values)),
        h('dt', null, 'events'), h('dd', null, Object.entries(d.events).map(([k, v]) => k + ' ' + fmtNum(v)).join(', ')),
        h('dt', null, 'reduction factor'), h('dd', null, ds.export.reduction_factor === undefined ? 'none: no value stored by a sink yet'
          : fmtNum(ds.export.reduction_factor) + ' values seen per value stored (by the sink that stored the most)'),
        h('dt', null, 'flows, keys'), h('dd', null, fmtNum(d.flows) + ', ' + fmtNum(d.keys)),
        h('dt', null, 'live streams'), h('dd', null, d.streams.open + ' open of ' + d.streams.max)));
    }
  });
};

// ---------------------------------------------------------------------------------------
// DTA stores: geometry, fill, counters, and queries by key.

// dtaKey turns what a user has into a key the API takes: a dotted IPv4 address becomes its
// 4 bytes in hex (gen's DTA keys are source addresses); the rest goes as typed.
function dtaKey(k) {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(k);
  if (m && m.slice(1).every((x) => Number(x) < 256)) return '0x' + m.slice(1).map((x) => Number(x).toString(16).padStart(2, '0')).join('');
  return k;
}

pages.dta = (main, params, ctx) => {
  const regions = h('div', { class: 'panel' });
  const counters = h('div', { class: 'panel' });
  const store = h('select', { id: 'dta-store' }, ['kw', 'paths', 'ki', 'postcard', 'list'].map((v) => h('option', { value: v }, v)));
  const key = h('input', { type: 'text', id: 'dta-key', size: 36, placeholder: '10.0.0.55, 0x0a000037, 167772215 or src,dst,sport,dport,proto' });
  const result = h('pre', { class: 'json', id: 'dta-result', hidden: true });
  const form = h('form', { class: 'controls', id: 'dta-form' }, h('label', null, 'store', store), h('label', null, 'key (list: id)', key), h('button', { type: 'submit' }, 'Query'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const k = key.value.trim();
    if (!k) return;
    let path;
    if (store.value === 'list') path = 'api/v1/dta/list/' + encodeURIComponent(k) + '?cursor=0';
    else if (store.value === 'paths') path = 'api/v1/dta/kw/' + encodeURIComponent(dtaKey(k)) + '?store=paths';
    else path = 'api/v1/dta/' + store.value + '/' + encodeURIComponent(dtaKey(k));
    result.hidden = false;
    try { result.textContent = JSON.stringify(await api(path, ctx.signal), null, 2); } catch (err) { result.textContent = 'error: ' + err.message; }
  });
  main.append(h('h1', null, 'DTA stores'),
    h('p', { class: 'lede', id: 'dta-lede' }, 'DTA (Direct Telemetry Access) keeps telemetry in stores that answer by key, ',
      'such as a flow\'s path, its report count, or the last value written for an address, and any process can read them without asking the collector. ',
      'intake fills them from INT reports (dta.int) and from switches that send DTA reports. ',
      'This page says whether the stores are filling up or refusing writes, and looks up what a key holds: ',
      'look at it when you want a flow\'s or an address\'s stored values, or when DTA writes go missing.'),
    regions, h('div', { class: 'panel' }, h('h2', null, 'Query by key'), form, result), counters);
  ctx.every(2000, async () => {
    const st = await tryAPI('api/v1/dta/stats', ctx.signal);
    if (!st) { clear(regions).append(h('p', { class: 'empty' }, 'DTA is off (dta.enabled).')); return; }
    clear(regions).append(h('h2', null, 'Stores in ', h('span', { class: 'mono' }, st.data_dir)),
      table(['store', 'primitive', '#slots', '#slot bytes', '#redundancy', '#size', 'fill'], st.regions.map((r) => h('tr', { 'data-store': r.file.split('/').pop() },
        td(r.file.split('/').pop(), 'mono'), td(r.primitive), tdn(fmtNum(r.slots)), tdn(r.slot_bytes), tdn(r.max_redundancy), tdn(fmtBytes(r.bytes)),
        td(h('div', { class: 'row' }, h('div', { class: 'bar', title: fmtPct(r.fill) }, fillSpan(r.fill)), h('span', { class: 'small' }, fmtPct(r.fill))))))));
    const heads = (st.list_heads || []).map((v, i) => [i, v]).filter(([, v]) => v > 0);
    clear(counters).append(h('div', { class: 'row' },
      h('div', null, h('h2', null, 'Written'), counterTable(flatten(st.written, '', []))),
      h('div', null, h('h2', null, 'Not written, by reason'), counterTable(flatten(st.bad, '', []), null, true)),
      h('div', null, h('h2', null, 'Postcard emissions'), counterTable(flatten(st.postcard_emissions, '', [])),
        h('p', { class: 'small muted' }, 'known values ' + fmtNum(st.known_values) + ' · append lists in use: ' + (heads.length ? heads.map(([i, v]) => i + ' (' + fmtNum(v) + ')').join(', ') : 'none')))));
  });
};

function fillSpan(f) {
  const el = h('span');
  el.style.width = Math.min(100, Math.max(0, 100 * (f || 0))).toFixed(1) + '%';
  return el;
}

// ---------------------------------------------------------------------------------------
// INT-label coverage over time: the windows the collector reports, kept here as they pass.

function lineChart(points, opts) {
  const W = 900, H = 260, L = 60, R = 16, T = 12, B = 36;
  if (points.length < 2) return h('p', { class: 'muted' }, 'collecting…');
  const xs = points.map((p) => p.x), ys = points.map((p) => p.y);
  const x0 = Math.min(...xs), x1 = Math.max(...xs);
  // Fit the axis to the data (not 0–1): the differences are what an operator looks for.
  let y0 = Math.min(...ys), y1 = Math.max(...ys);
  const span = Math.max(y1 - y0, 0.02);
  y0 = Math.max(0, y0 - span * 0.15);
  y1 = Math.min(1, y1 + span * 0.15);
  const ticks = niceTicks(y0, y1, 5);
  const lo = ticks[0], hi = ticks[ticks.length - 1];
  const X = (v) => L + (W - L - R) * (x1 > x0 ? (v - x0) / (x1 - x0) : 0.5);
  const Y = (v) => T + (H - T - B) * (1 - (v - lo) / (hi - lo));
  const svg = s('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'fabric-svg', id: opts.id });
  const g = s('g', { class: 'grid axis' });
  for (const t of ticks) g.append(s('line', { x1: L, x2: W - R, y1: Y(t), y2: Y(t) }), s('text', { x: L - 6, y: Y(t), dy: '0.35em', 'text-anchor': 'end', text: opts.yfmt(t) }));
  const xt = niceTicks(0, (x1 - x0) / 1e9, 6).filter((v) => v <= (x1 - x0) / 1e9 + 1e-9);
  for (const t of xt) g.append(s('text', { x: X(x0 + t * 1e9), y: H - B + 16, 'text-anchor': 'middle', text: '−' + fmtNum(+(((x1 - x0) / 1e9) - t).toFixed(1)) + ' s' }));
  svg.append(g, s('polyline', { points: points.map((p) => X(p.x).toFixed(1) + ',' + Y(p.y).toFixed(1)).join(' '), fill: 'none', stroke: '#1f4e79', 'stroke-width': 2 }));
  svg.append(s('text', { x: L, y: H - 4, class: 'axis', text: opts.xlabel }));
  return svg;
}

pages.coverage = (main, params, ctx) => {
  const cards = h('div', { class: 'cards', id: 'coverage-cards' });
  const chart = h('div', { class: 'panel' });
  const ports = h('div', { class: 'panel' });
  main.append(h('h1', null, 'INT-label coverage'),
    h('p', { class: 'lede', id: 'coverage-lede' }, 'With INT-label, switches add their state to a sample of the packets instead of every packet, ',
      'and the collector keeps the newest state of every switch port. Coverage is the share of active ports whose state arrived in each telemetry interval: ',
      'near 100 % the picture of every port is fresh; low or falling, some ports\' state is getting old. ',
      'Look at it when your switches send INT-label exports, or when a port\'s figures seem stale.'),
    cards, chart, ports);
  const windows = new Map();
  let n = 0;
  ctx.every(1000, async () => {
    const c = await tryAPI('api/v1/label/coverage', ctx.signal);
    if (!c) { clear(chart).append(h('p', { class: 'empty' }, 'INT-label is off (label.enabled).')); return; }
    for (const w of c.windows) windows.set(w.index, w);
    const keep = [...windows.keys()].sort((a, b) => a - b);
    while (keep.length > 1200) windows.delete(keep.shift());
    const pts = keep.map((i) => windows.get(i)).map((w) => ({ x: w.start_ns, y: w.coverage }));
    const card = (l, v) => h('div', { class: 'card' }, h('div', { class: 'v' }, v), h('div', { class: 'l' }, l));
    clear(cards).append(card('coverage, mean of the last windows', fmtPct(c.mean)), card('ports known', fmtNum(c.ports_known)),
      card('telemetry interval', fmtNum(c.telemetry_interval_ms) + ' ms'), card('clock', c.clock));
    clear(chart).append(h('h2', null, 'Share of active ports whose state was updated, per telemetry interval'),
      lineChart(pts, { id: 'coverage-chart', yfmt: (v) => (100 * v).toFixed(v * 100 % 1 ? 1 : 0) + ' %', xlabel: 'time before the newest window' }));
    if (n++ % 5) return;
    const lp = await tryAPI('api/v1/label/ports', ctx.signal);
    if (!lp) return;
    const by = new Map();
    for (const p of lp.ports) {
      const a = by.get(p.switch_id) || { ports: 0, active: 0, age: 0, stale: 0, updates: 0 };
      a.ports++; a.active += p.active ? 1 : 0; a.age += p.age_ms; a.stale += p.stale; a.updates += p.updates;
      by.set(p.switch_id, a);
    }
    clear(ports).append(h('h2', null, 'Ports by switch (newest state per port)'), table(['switch', '#ports', '#active', '#mean age', '#updates', '#stale'],
      [...by.entries()].sort((a, b) => a[0] - b[0]).map(([id, a]) => h('tr', null, td(switchLink(id)), tdn(a.ports), tdn(a.active), tdn(fmtNum(a.age / a.ports, 0) + ' ms'), tdn(fmtNum(a.updates)), tdn(fmtNum(a.stale))))));
  });
};

// ---------------------------------------------------------------------------------------

window.addEventListener('hashchange', route);
document.addEventListener('DOMContentLoaded', () => {
  setupToken();
  route();
  headerSummary();
  setInterval(headerSummary, 2000);
});
