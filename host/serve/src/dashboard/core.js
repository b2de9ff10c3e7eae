// weir dashboard: a framework-free single page over the /v1 JSON API of
// `weir serve`. Served as static files; no build step, no external URLs.
// Loaded first: state, helpers, API client, banner; defines window.weir.
'use strict';
(() => {
  const TOKEN_KEY = 'weir.token';
  const LIST_EVERY = 2000;
  const DETAIL_EVERY = 2000;
  const DEAD_EVERY = 10000;
  const RETRY_EVERY = 3000;
  const HISTORY_CAP = 300;
  const LOG_CAP = 500;

  const app = {
    token: sessionStorage.getItem(TOKEN_KEY) || '',
    who: null, // the whoami answer once logged in
    view: null, // {stop, refresh} of the screen on show
  };

  const $ = (sel, root = document) => root.querySelector(sel);
  const enc = encodeURIComponent;
  const isAdmin = () => app.who && app.who.role === 'admin';

  // ---- formatting ---------------------------------------------------------

  const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  // Everything the API says is escaped: names, errors and logs are user data.
  const esc = (v) => String(v == null ? '' : v).replace(/[&<>"']/g, (c) => ESC[c]);

  function fmtNum(n) {
    if (n == null || !Number.isFinite(n)) return '–';
    const a = Math.abs(n);
    if (a >= 1e9) return (n / 1e9).toFixed(1) + 'G';
    if (a >= 1e6) return (n / 1e6).toFixed(1) + 'M';
    if (a >= 1e4) return (n / 1e3).toFixed(1) + 'k';
    return Number.isInteger(n) ? String(n) : n.toFixed(a >= 100 ? 0 : 1);
  }
  const pad2 = (n) => String(n).padStart(2, '0');
  function fmtClock(ms) {
    if (ms == null) return '–';
    const d = new Date(ms);
    return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
  }
  // RFC 3339 without the fraction: the full value goes in a title.
  const fmtStamp = (s) => (s ? String(s).replace('T', ' ').replace(/\.\d+/, '') : '–');
  const fmtKB = (n) => (n == null ? '–' : (n / 1024).toFixed(1) + ' KB');
  const shortId = (id) => (id ? String(id).slice(0, 12) : '–');

  // {kind: n} -> "bad-record 3, trap 1", or "0" when nothing was rejected.
  function fmtKinds(kinds) {
    const parts = Object.entries(kinds || {})
      .filter(([, n]) => n)
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .map(([k, n]) => `${k} ${n}`);
    return parts.length ? parts.join(', ') : '0';
  }
  const badge = (state) => `<span class="badge s-${esc(state)}">${esc(state || 'unknown')}</span>`;

  // ---- API ----------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      const detail = (body && (body.detail || body.error)) || `HTTP ${status}`;
      super(detail);
      this.status = status;
      this.code = body && body.error;
      this.detail = detail;
    }
  }
  class Unreachable extends Error {}

  // One request. `tenant` adds Weir-Tenant for the admin token only, since
  // a tenant's own token already says who it is. Network failures raise the
  // banner; any HTTP answer lowers it.
  async function api(path, opts = {}) {
    const headers = { Authorization: 'Bearer ' + app.token };
    if (opts.tenant && isAdmin()) headers['Weir-Tenant'] = opts.tenant;
    if (opts.type) headers['Content-Type'] = opts.type;
    let res;
    try {
      res = await fetch(path, { method: opts.method || 'GET', headers, body: opts.body, signal: opts.signal });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      unreachable(e.message || String(e));
      throw new Unreachable(e.message || String(e));
    }
    reachable();
    if (!res.ok) {
      let body = null;
      try { body = await res.json(); } catch (_) { /* not JSON: keep the status */ }
      const err = new ApiError(res.status, body);
      if (res.status === 401 && !opts.login) weir.loggedOut(err.detail);
      throw err;
    }
    if (opts.raw) return res;
    const text = await res.text();
    return text ? JSON.parse(text) : null;
  }

  // A repeating task that never overlaps itself (unlike setInterval, a slow
  // answer delays the next call instead of piling requests up).
  function poll(fn, every) {
    let timer = null;
    let stopped = false;
    const tick = async () => {
      try { await fn(); } catch (e) { if (!(e instanceof Unreachable)) console.error(e); }
      if (!stopped) timer = setTimeout(tick, every);
    };
    tick();
    return () => { stopped = true; clearTimeout(timer); };
  }

  const sleep = (ms, signal) => new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    if (signal) signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });

  // ---- unreachable banner -------------------------------------------------

  let retryTimer = null;
  function unreachable(reason) {
    const b = $('#banner');
    b.textContent = `weir serve is unreachable at ${location.origin}: ${reason}; retrying`;
    b.hidden = false;
    if (!retryTimer) retryTimer = setInterval(ping, RETRY_EVERY);
  }
  function reachable() {
    const b = $('#banner');
    if (b.hidden) return;
    b.hidden = true;
    clearInterval(retryTimer);
    retryTimer = null;
    // Pick up where we were: a boot that never got its whoami, or the screen.
    if (app.token && !app.who) weir.boot();
    else if (app.view && app.view.refresh) app.view.refresh();
  }
  // Screens poll anyway, but the login screen does not, so the banner has
  // its own heartbeat. Any HTTP answer (even 401) means the service is up.
  async function ping() {
    try {
      await fetch('/v1/whoami', { headers: { Authorization: 'Bearer ' + app.token } });
      reachable();
    } catch (e) {
      unreachable(e.message || String(e));
    }
  }

  // ---- views --------------------------------------------------------------

  function setView(refresh, stoppers) {
    app.view = { refresh, stop: () => stoppers.forEach((s) => s()) };
  }

  // loggedOut and boot come from main.js, which loads last; they are only
  // called once it has (hence weir.loggedOut, weir.boot above).
  const weir = window.weir = {
    TOKEN_KEY, LIST_EVERY, DETAIL_EVERY, DEAD_EVERY, RETRY_EVERY, HISTORY_CAP, LOG_CAP,
    app, $, enc, isAdmin, esc, fmtNum, fmtClock, fmtStamp, fmtKB, shortId, fmtKinds, badge,
    ApiError, Unreachable, api, poll, sleep, setView,
  };
})();
