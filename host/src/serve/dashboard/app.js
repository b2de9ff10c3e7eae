// weir dashboard: a framework-free single page over the /v1 JSON API of
// `weir serve`. Served as a static file; no build step, no external URLs.
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
      if (res.status === 401 && !opts.login) loggedOut(err.detail);
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
    if (app.token && !app.who) boot();
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

  // ---- login --------------------------------------------------------------

  function showLogin(message) {
    stopView();
    app.who = null;
    $('#main').hidden = true;
    $('#main').innerHTML = '';
    $('#who-box').hidden = true;
    $('#login-screen').hidden = false;
    $('#login-error').textContent = message || '';
    $('#token').focus();
  }

  function loggedOut(detail) {
    sessionStorage.removeItem(TOKEN_KEY);
    app.token = '';
    showLogin(detail ? `Logged out: ${detail}` : '');
  }

  let booting = false;
  // `known` is a whoami answer the login form already has.
  async function boot(known) {
    if (!app.token) return showLogin();
    if (booting) return;
    booting = true;
    try {
      app.who = known || await api('/v1/whoami', { login: true });
    } catch (e) {
      if (e instanceof Unreachable) {
        // Keep the token: reachable() boots again when the service answers.
        $('#login-screen').hidden = true;
        return;
      }
      sessionStorage.removeItem(TOKEN_KEY);
      app.token = '';
      return showLogin(e.detail || e.message);
    } finally {
      booting = false;
    }
    $('#who').textContent = app.who.role === 'admin' ? 'admin' : app.who.tenant;
    $('#who-box').hidden = false;
    $('#login-screen').hidden = true;
    $('#main').hidden = false;
    route();
  }

  $('#login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const token = $('#token').value.trim();
    if (!token) return;
    $('#login').disabled = true;
    $('#login-error').textContent = '';
    app.token = token;
    booting = true; // the banner's recovery must not boot while we do
    try {
      const who = await api('/v1/whoami', { login: true });
      sessionStorage.setItem(TOKEN_KEY, token);
      $('#token').value = '';
      booting = false;
      await boot(who);
    } catch (e) {
      booting = false;
      app.token = '';
      $('#login-error').textContent = e instanceof Unreachable
        ? `weir serve is unreachable: ${e.message}` : (e.detail || e.message);
    } finally {
      $('#login').disabled = false;
    }
  });

  $('#logout').addEventListener('click', () => loggedOut());

  // ---- routing ------------------------------------------------------------

  function stopView() {
    if (app.view) app.view.stop();
    app.view = null;
  }

  function route() {
    if (!app.who) return;
    stopView();
    const m = (location.hash || '#/').match(/^#\/p\/([^/]+)\/([^/]+)\/?$/);
    window.scrollTo(0, 0);
    if (m) detailView(decodeURIComponent(m[1]), decodeURIComponent(m[2]));
    else listView();
  }
  window.addEventListener('hashchange', route);

  // ---- list ---------------------------------------------------------------

  const pipelineHref = (tenant, name) => `#/p/${enc(tenant)}/${enc(name)}`;

  function listRow(p, admin) {
    const tenant = p.tenant || (app.who && app.who.tenant) || '';
    const m = p.metrics || {};
    const rejected = fmtKinds(m['rejected-rows']);
    const lag = p.lag !== undefined ? p.lag : m.lag;
    const err = p['last-error'];
    const desired = p.desired && p.desired !== p.state ? ` title="desired: ${esc(p.desired)}"` : '';
    return `<tr data-pipeline="${esc(tenant)}/${esc(p.name)}" data-href="${esc(pipelineHref(tenant, p.name))}">`
      + (admin ? `<td class="tenant">${esc(tenant)}</td>` : '')
      + `<td class="name"><a href="${esc(pipelineHref(tenant, p.name))}">${esc(p.name)}</a></td>`
      + `<td class="state"${desired}>${badge(p.state)}</td>`
      + `<td class="mode">${esc(p.mode || '–')}</td>`
      + `<td class="num input-rate">${fmtNum(p['input-rows-per-second'])}</td>`
      + `<td class="num processed-rate">${fmtNum(p['processed-rows-per-second'])}</td>`
      + `<td class="num lag">${fmtNum(lag)}</td>`
      + `<td class="watermark" title="${esc(p.watermark || '')}">${esc(fmtStamp(p.watermark))}</td>`
      + `<td class="rejected${rejected === '0' ? '' : ' some'}">${esc(rejected)}</td>`
      + `<td class="last-error" title="${esc(err || '')}">${esc(err || '')}</td>`
      + `<td class="num restarts">${esc(p.restarts != null ? p.restarts : (m.restarts != null ? m.restarts : 0))}</td>`
      + '</tr>';
  }

  function listView() {
    const admin = isAdmin();
    const main = $('#main');
    main.innerHTML = `<div class="toolbar"><h2>Pipelines</h2><span id="summary" class="muted"></span>
      <span id="list-error" class="error"></span></div>
      <table id="pipelines" class="grid"><thead><tr>${admin ? '<th>tenant</th>' : ''}
      <th>name</th><th>state</th><th>mode</th><th class="num">input rows/s</th>
      <th class="num">processed rows/s</th><th class="num">lag</th><th>watermark</th>
      <th>rejected</th><th>last error</th><th class="num">restarts</th></tr></thead>
      <tbody></tbody></table>`;
    const tbody = $('#pipelines tbody');
    const cols = admin ? 11 : 10;
    let last = null;
    // A whole row is the link, not just the name.
    tbody.addEventListener('click', (ev) => {
      const tr = ev.target.closest('tr[data-href]');
      if (tr && !ev.target.closest('a')) location.hash = tr.dataset.href;
    });

    async function refresh() {
      let list;
      try {
        list = await api('/v1/pipelines');
        $('#list-error').textContent = '';
      } catch (e) {
        if (!(e instanceof Unreachable)) $('#list-error').textContent = e.message;
        return;
      }
      list.sort((a, b) => String(a.tenant || '').localeCompare(String(b.tenant || ''))
        || String(a.name).localeCompare(String(b.name)));
      const html = list.length ? list.map((p) => listRow(p, admin)).join('')
        : `<tr><td colspan="${cols}" class="absent">no pipelines yet: PUT /v1/pipelines/&lt;name&gt; creates one</td></tr>`;
      // One innerHTML per refresh, and none when nothing changed, so hovering
      // and selecting text are not disturbed every 2 s.
      if (html !== last) {
        tbody.innerHTML = html;
        last = html;
      }
      const by = {};
      for (const p of list) by[p.state] = (by[p.state] || 0) + 1;
      $('#summary').textContent = `${list.length} pipeline${list.length === 1 ? '' : 's'}`
        + Object.keys(by).sort().map((s) => ` · ${by[s]} ${s}`).join('');
      if (!window.weirDashboard) window.weirDashboard = { rendered: performance.now() };
    }

    setView(refresh, [poll(refresh, LIST_EVERY)]);
  }

  function setView(refresh, stoppers) {
    app.view = { refresh, stop: () => stoppers.forEach((s) => s()) };
  }

  // ---- charts -------------------------------------------------------------

  const COLORS = ['#0969da', '#d1580b'];

  // A small line chart: `series` is [{name, points: [[x, y|null], ...]}],
  // x in ms. Nulls break a line. data-points on the <svg> is the number of
  // points with a value in the longest series, for tests to read.
  function lineChart(svg, series, empty) {
    const W = Math.max(200, Math.round(svg.getBoundingClientRect().width) || 480);
    const H = 150;
    const L = 52, R = 10, T = 10, B = 18;
    const xs = [];
    const ys = [];
    let count = 0;
    for (const s of series) {
      let c = 0;
      for (const [x, y] of s.points) {
        if (y == null || !Number.isFinite(y)) continue;
        xs.push(x); ys.push(y); c++;
      }
      count = Math.max(count, c);
    }
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    svg.setAttribute('data-points', String(count));
    if (!count) {
      svg.innerHTML = `<text x="${W / 2}" y="${H / 2}" text-anchor="middle">${esc(empty || 'no data yet')}</text>`;
      return;
    }
    const x0 = Math.min(...xs);
    const x1 = Math.max(...xs);
    const y0 = Math.min(0, ...ys);
    let y1 = Math.max(...ys);
    if (y1 <= y0) y1 = y0 + 1;
    const sx = (x) => (x1 === x0 ? (L + W - R) / 2 : L + ((x - x0) / (x1 - x0)) * (W - L - R));
    const sy = (y) => H - B - ((y - y0) / (y1 - y0)) * (H - T - B);
    const f = (v) => v.toFixed(1);
    let out = `<line class="grid" x1="${L}" x2="${W - R}" y1="${T}" y2="${T}"/>`
      + `<line class="grid" x1="${L}" x2="${W - R}" y1="${f((T + H - B) / 2)}" y2="${f((T + H - B) / 2)}"/>`
      + `<line class="axis" x1="${L}" x2="${L}" y1="${T}" y2="${H - B}"/>`
      + `<line class="axis" x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}"/>`
      + `<text x="${L - 4}" y="${T + 4}" text-anchor="end">${esc(fmtNum(y1))}</text>`
      + `<text x="${L - 4}" y="${H - B}" text-anchor="end">${esc(fmtNum(y0))}</text>`
      + `<text x="${L}" y="${H - 4}">${esc(fmtClock(x0))}</text>`
      + `<text x="${W - R}" y="${H - 4}" text-anchor="end">${esc(fmtClock(x1))}</text>`;
    series.forEach((s, i) => {
      const color = COLORS[i % COLORS.length];
      let seg = [];
      let lastPt = null;
      // A lone point (a run between nulls) gets a dot, else it is invisible.
      const flush = () => {
        if (seg.length > 1) out += `<polyline stroke="${color}" points="${seg.join(' ')}"/>`;
        else if (seg.length === 1) { const [cx, cy] = seg[0].split(','); out += `<circle cx="${cx}" cy="${cy}" r="2" fill="${color}"/>`; }
        seg = [];
      };
      for (const [x, y] of s.points) {
        if (y == null || !Number.isFinite(y)) { flush(); continue; }
        seg.push(`${f(sx(x))},${f(sy(y))}`);
        lastPt = [sx(x), sy(y)];
      }
      flush();
      if (lastPt) out += `<circle cx="${f(lastPt[0])}" cy="${f(lastPt[1])}" r="2.5" fill="${color}"><title>${esc(s.name)}</title></circle>`;
    });
    svg.innerHTML = out;
  }

  const legend = (names) => names.map((n, i) => `<span class="muted"><i class="key c${i}"></i>${esc(n)}</span>`).join(' ');

  // ---- detail -------------------------------------------------------------

  // TOML text with [transform] component replaced by `id`. A line-based edit
  // keeps the rest of the spec (and its comments) exactly as stored.
  function withComponent(spec, id) {
    const lines = String(spec).split('\n');
    let section = '';
    let done = false;
    for (let i = 0; i < lines.length && !done; i++) {
      const line = lines[i];
      const head = line.match(/^\s*\[\s*([^\][]+?)\s*\]\s*(#.*)?$/);
      if (head) { section = head[1].replace(/\s+/g, ''); continue; }
      if (/^\s*\[\[/.test(line)) { section = '[['; continue; }
      const key = line.match(/^(\s*)(component|"component")(\s*=\s*)/);
      if (section === 'transform' && key) {
        lines[i] = `${key[1]}${key[2]}${key[3]}"${id}"`;
        done = true;
      } else if (section === '' && /^\s*transform\s*\.\s*component\s*=/.test(line)) {
        lines[i] = line.replace(/=.*$/, `= "${id}"`);
        done = true;
      } else if (section === '' && /^\s*transform\s*=\s*\{/.test(line) && /component\s*=/.test(line)) {
        lines[i] = line.replace(/(component\s*=\s*)("[^"]*"|'[^']*')/, `$1"${id}"`);
        done = true;
      }
    }
    if (!done) throw new Error('the stored spec has no [transform] component = "..." to replace');
    return lines.join('\n');
  }

  function detailView(tenant, name) {
    const base = `/v1/pipelines/${enc(name)}`;
    const ctl = new AbortController();
    const main = $('#main');
    main.innerHTML = `<div class="crumbs"><a href="#/">← pipelines</a></div>
      <section class="card head">
        <div class="title"><h2><span class="muted">${esc(tenant)}/</span>${esc(name)}</h2>
          <span id="state">${badge('…')}</span><span id="mode" class="muted"></span>
          <span id="desired" class="muted"></span><span id="restarts" class="muted"></span>
          <span id="watermark" class="muted"></span></div>
        <div class="actions">
          <button id="stop" type="button">Stop</button>
          <button id="start" type="button">Start</button>
          <span class="sep"></span>
          <label class="muted" for="deploy-file">new component</label>
          <input id="deploy-file" type="file" accept=".wasm,application/wasm">
          <button id="deploy" type="button">Deploy</button>
          <span class="sep"></span>
          <button id="goto-replay" type="button">Replay…</button>
        </div>
        <div id="action-result" class="result"></div>
        <div id="deploy-result" class="result"></div>
        <div id="last-error" class="error-box" hidden></div>
        <div id="detail-error" class="error"></div>
      </section>
      <section class="charts">
        <figure class="card"><figcaption>Rows/s ${legend(['input', 'processed'])}</figcaption>
          <svg id="chart-rate" class="chart" data-points="0"></svg></figure>
        <figure class="card"><figcaption><span id="duration-title">Batch duration (ms)</span>
          <span id="duration-legend"></span></figcaption>
          <svg id="chart-duration" class="chart" data-points="0"></svg></figure>
        <figure class="card"><figcaption>Lag (records)</figcaption>
          <svg id="chart-lag" class="chart" data-points="0"></svg></figure>
        <figure class="card"><figcaption>State rows</figcaption>
          <svg id="chart-state" class="chart" data-points="0"></svg></figure>
      </section>
      <div class="cols">
        <section class="card"><h3>Recent progress</h3>
          <table id="progress-table" class="grid"><thead><tr><th class="num">batch</th><th>time</th>
          <th class="num">input rows</th><th class="num">rows/s</th><th class="num">duration ms</th>
          <th>rejected</th></tr></thead><tbody></tbody></table></section>
        <section class="card"><h3>Totals <span class="muted">(as /metrics)</span></h3>
          <dl id="totals" class="facts"></dl>
          <h3>Checkpoint</h3><dl id="checkpoint" class="facts"></dl>
          <h3>Component</h3><dl id="component" class="facts"></dl></section>
      </div>
      <section class="card"><h3>Guest logs <span id="logs-status" class="muted"></span></h3>
        <pre id="logs" class="logs"></pre></section>
      <section class="card"><h3>Dead letters <span class="muted">(newest 50)</span></h3>
        <div id="dead-letters"></div></section>
      <section class="card" id="replay"><h3>Replay</h3>
        <form id="replay-form">
          <label for="replay-component">component</label><select id="replay-component"></select>
          <label class="muted" for="replay-file">or upload</label>
          <input id="replay-file" type="file" accept=".wasm,application/wasm">
          <label for="replay-from"><span class="unit">batch</span> from</label><input id="replay-from" type="number" min="0" step="1">
          <label for="replay-to">to</label><input id="replay-to" type="number" min="0" step="1">
          <button id="replay-run" type="submit">Run replay</button>
          <span id="replay-upload" class="result"></span>
        </form>
        <p>total differences: <b id="replay-total">–</b></p>
        <div id="replay-result"></div>
      </section>`;

    const opts = (more) => Object.assign({ tenant, signal: ctl.signal }, more);
    const history = []; // progress reports, oldest first
    let lastBatch = null;
    let view = null;
    let componentShown = null;
    // The range follows the newest checkpoint until the user types one or
    // runs a replay, so a shown result always matches the form.
    let replayDirty = false;

    // -- header, checkpoint, component --

    function showView(v) {
      view = v;
      $('#state').innerHTML = badge(v.state);
      $('#mode').textContent = v.mode || '';
      $('#desired').textContent = v.desired ? `desired ${v.desired}` : '';
      $('#restarts').textContent = `restarts ${v.restarts != null ? v.restarts : 0}`;
      $('#watermark').textContent = v.watermark ? `watermark ${fmtStamp(v.watermark)}` : '';
      const le = $('#last-error');
      le.hidden = !v['last-error'];
      le.textContent = v['last-error'] || '';
      // The service's counters, the same series GET /metrics exposes.
      const m = v.metrics || {};
      const total = (k, label) => `<dt>${label}</dt><dd data-metric="${k}">${esc(m[k] != null ? m[k] : 0)}</dd>`;
      $('#totals').innerHTML = total('input-rows', 'input rows') + total('output-rows', 'output rows')
        + total('batches', 'batches') + total('late-rows', 'late rows')
        + `<dt>rejected</dt><dd data-metric="rejected-rows">${esc(fmtKinds(m['rejected-rows']))}</dd>`;
      const cp = v.checkpoint;
      $('#checkpoint').innerHTML = cp
        ? `<dt>unit</dt><dd>${esc(cp.unit)}</dd><dt>last committed</dt><dd>${esc(cp['last-committed'] != null ? cp['last-committed'] : 'none')}</dd>`
          + `<dt>pending</dt><dd>${esc(cp.pending != null ? cp.pending : 'none')}</dd>`
        : '<dd class="absent">no checkpoint</dd>';
      if (cp) for (const u of main.querySelectorAll('.unit')) u.textContent = cp.unit;
      if (cp && !replayDirty && cp['last-committed'] != null) {
        const lc = cp['last-committed'];
        $('#replay-from').value = Math.max(0, lc - 4);
        $('#replay-to').value = lc;
      }
      if (v.component !== componentShown) showComponent(v.component);
    }

    async function showComponent(id) {
      componentShown = id;
      const el = $('#component');
      try {
        const c = await api(`/v1/components/${enc(id)}`, opts());
        el.innerHTML = `<dt>id</dt><dd class="mono" title="${esc(c.id)}">${esc(shortId(c.id))}…</dd>`
          + `<dt>world</dt><dd>${esc(c.world)}</dd><dt>size</dt><dd>${esc(fmtKB(c.size))}</dd>`
          + `<dt>imports</dt><dd class="mono">${esc((c.imports || []).join(', ') || '–')}</dd>`
          + `<dt>exports</dt><dd class="mono">${esc((c.exports || []).join(', ') || '–')}</dd>`;
      } catch (e) {
        if (e.name === 'AbortError') return;
        componentShown = null; // try again on the next refresh
        el.innerHTML = `<dt>id</dt><dd class="mono" title="${esc(id)}">${esc(shortId(id))}…</dd>`
          + `<dd class="error">${esc(e.message)}</dd>`;
      }
    }

    // -- progress: charts and table --

    function renderProgress() {
      const t = (r) => r.timestamp;
      const pts = (fn) => history.map((r) => [t(r), fn(r)]);
      lineChart($('#chart-rate'), [
        { name: 'input', points: pts((r) => r.inputRowsPerSecond) },
        { name: 'processed', points: pts((r) => r.processedRowsPerSecond) },
      ]);
      const continuous = (view && view.mode === 'continuous')
        || history.some((r) => r.latencyMs);
      if (continuous) {
        $('#duration-title').textContent = 'Epoch latency (ms)';
        $('#duration-legend').innerHTML = legend(['p50', 'p99']);
        lineChart($('#chart-duration'), [
          { name: 'p50', points: pts((r) => r.latencyMs && r.latencyMs.p50) },
          { name: 'p99', points: pts((r) => r.latencyMs && r.latencyMs.p99) },
        ]);
      } else {
        $('#duration-title').textContent = 'Batch duration (ms)';
        $('#duration-legend').innerHTML = '';
        lineChart($('#chart-duration'), [
          { name: 'triggerExecution', points: pts((r) => r.durationMs && r.durationMs.triggerExecution) },
        ]);
      }
      lineChart($('#chart-lag'), [{ name: 'lag', points: pts((r) => r.lag) }]);
      lineChart($('#chart-state'), [{
        name: 'state rows',
        points: pts((r) => (r.stateOperators && r.stateOperators.length
          ? r.stateOperators.reduce((s, o) => s + (o.numRowsTotal || 0), 0) : null)),
      }], 'no state operators reported');

      const rows = history.slice(-10).reverse().map((r) => {
        const d = r.durationMs ? r.durationMs.triggerExecution : null;
        const kinds = r.rejectedRowsByKind ? fmtKinds(r.rejectedRowsByKind) : '';
        return `<tr><td class="num">${esc(r.batchId)}</td><td>${esc(fmtClock(r.timestamp))}</td>`
          + `<td class="num">${esc(fmtNum(r.numInputRows))}</td><td class="num">${esc(fmtNum(r.processedRowsPerSecond))}</td>`
          + `<td class="num">${esc(fmtNum(d))}</td><td title="${esc(kinds)}">${esc(fmtNum(r.numRejectedRows || 0))}`
          + `${kinds && kinds !== '0' ? ` <span class="muted">(${esc(kinds)})</span>` : ''}</td></tr>`;
      }).join('');
      $('#progress-table tbody').innerHTML = rows || '<tr><td colspan="6" class="absent">no progress reported yet</td></tr>';
    }

    async function refresh() {
      let v;
      try {
        v = await api(base, opts());
        $('#detail-error').textContent = '';
      } catch (e) {
        if (e.name === 'AbortError' || e instanceof Unreachable) return;
        $('#detail-error').textContent = e.message;
        return;
      }
      showView(v);
      // Batch ids only grow within one checkpoint; a smaller newest id means
      // the pipeline started over (a new checkpoint), so start the history over.
      if (v.progress && lastBatch != null && v.progress.batchId < lastBatch) {
        history.length = 0;
        lastBatch = null;
      }
      const since = lastBatch == null ? '' : `?since=${enc(lastBatch)}`;
      let reports;
      try {
        reports = await api(`${base}/progress${since}`, opts());
      } catch (e) {
        if (e.name === 'AbortError' || e instanceof Unreachable) return;
        $('#detail-error').textContent = e.message;
        return;
      }
      // `since` should already exclude what we have; the check keeps a
      // repeated report from being drawn twice all the same.
      const fresh = (reports || []).filter((r) => lastBatch == null || r.batchId > lastBatch);
      if (fresh.length || !history.length) {
        history.push(...fresh);
        if (history.length > HISTORY_CAP) history.splice(0, history.length - HISTORY_CAP);
        if (fresh.length) lastBatch = fresh[fresh.length - 1].batchId;
        renderProgress();
      }
    }

    // -- actions --

    async function action(verb) {
      const out = $('#action-result');
      $('#stop').disabled = $('#start').disabled = true;
      out.className = 'result muted';
      out.textContent = `${verb}…`;
      try {
        const v = await api(`${base}/${verb}`, opts({ method: 'POST' }));
        showView(Object.assign({}, view, v));
        out.className = 'result ok';
        out.textContent = `${verb}: desired ${v.desired}, state ${v.state}`;
      } catch (e) {
        if (e.name === 'AbortError') return;
        out.className = 'result error';
        out.textContent = `${verb} failed: ${e.message}`;
      } finally {
        $('#stop').disabled = $('#start').disabled = false;
      }
    }
    $('#stop').addEventListener('click', () => action('stop'));
    $('#start').addEventListener('click', () => action('start'));
    $('#goto-replay').addEventListener('click', () => $('#replay').scrollIntoView({ behavior: 'smooth' }));

    async function upload(file) {
      const bytes = await file.arrayBuffer();
      return api('/v1/components', opts({ method: 'POST', body: bytes, type: 'application/wasm' }));
    }

    $('#deploy').addEventListener('click', async () => {
      const out = $('#deploy-result');
      const file = $('#deploy-file').files[0];
      if (!file) {
        out.className = 'result error';
        out.textContent = 'choose a .wasm file first';
        return;
      }
      $('#deploy').disabled = true;
      out.className = 'result muted';
      out.textContent = `uploading ${file.name}…`;
      try {
        const c = await upload(file);
        out.textContent = `uploaded ${shortId(c.id)}…; replacing the pipeline…`;
        // The freshest spec, so a change made elsewhere is not undone.
        const now = await api(base, opts());
        const spec = withComponent(now.spec, c.id);
        const v = await api(base, opts({ method: 'PUT', body: spec, type: 'application/toml' }));
        showView(Object.assign({}, view, v));
        out.className = 'result ok';
        out.textContent = `deployed component ${shortId(c.id)}…: state ${v.state}`;
        out.title = c.id;
        addComponentOption(c);
      } catch (e) {
        if (e.name === 'AbortError') return;
        out.className = 'result error';
        out.textContent = `deploy failed: ${e.message}`;
      } finally {
        $('#deploy').disabled = false;
      }
    });

    // -- replay --

    const select = $('#replay-component');
    function addComponentOption(c, current) {
      if ([...select.options].some((o) => o.value === c.id)) return;
      const o = document.createElement('option');
      o.value = c.id;
      o.title = `${c.id} ${c.world || ''}`;
      o.textContent = `${shortId(c.id)}…${c.size != null ? ' · ' + fmtKB(c.size) : ''}${current ? ' (current)' : ''}`;
      select.appendChild(o);
    }
    async function loadComponents() {
      try {
        const list = await api('/v1/components', opts());
        const current = view && view.component;
        select.textContent = '';
        for (const c of list || []) addComponentOption(c, c.id === current);
        if (current) select.value = current;
      } catch (e) {
        if (e.name === 'AbortError' || e instanceof Unreachable) return;
        $('#replay-upload').className = 'result error';
        $('#replay-upload').textContent = `components: ${e.message}`;
      }
    }

    $('#replay-file').addEventListener('change', async () => {
      const file = $('#replay-file').files[0];
      const out = $('#replay-upload');
      if (!file) return;
      out.className = 'result muted';
      out.textContent = `uploading ${file.name}…`;
      $('#replay-run').disabled = true;
      try {
        const c = await upload(file);
        addComponentOption(c);
        select.value = c.id;
        out.className = 'result ok';
        out.textContent = `uploaded ${shortId(c.id)}…`;
      } catch (e) {
        if (e.name === 'AbortError') return;
        out.className = 'result error';
        out.textContent = `upload failed: ${e.message}`;
      } finally {
        $('#replay-run').disabled = false;
      }
    });
    for (const id of ['#replay-from', '#replay-to']) {
      $(id).addEventListener('input', () => { replayDirty = true; });
    }

    $('#replay-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const out = $('#replay-result');
      const from = Number($('#replay-from').value);
      const to = Number($('#replay-to').value);
      if (!select.value) { out.innerHTML = '<p class="error">choose or upload a component</p>'; return; }
      if ($('#replay-from').value === '' || $('#replay-to').value === ''
        || !Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to < from) {
        out.innerHTML = '<p class="error">give a range of ids with 0 ≤ from ≤ to</p>';
        return;
      }
      replayDirty = true;
      $('#replay-run').disabled = true;
      $('#replay-total').textContent = '…';
      out.innerHTML = '<p class="muted">running…</p>';
      try {
        const r = await api(`${base}/replay`, opts({
          method: 'POST', type: 'application/json',
          body: JSON.stringify({ component: select.value, from, to }),
        }));
        $('#replay-total').textContent = r['total-differences'] != null ? String(r['total-differences']) : 'n/a';
        out.innerHTML = replayHtml(r);
      } catch (e) {
        if (e.name === 'AbortError') return;
        $('#replay-total').textContent = '–';
        out.innerHTML = `<p class="error">replay failed: ${esc(e.message)}</p>`;
      } finally {
        $('#replay-run').disabled = false;
      }
    });

    // -- logs: live tail over fetch, since EventSource cannot send a token --

    const logsEl = $('#logs');
    function appendLog(text, cls) {
      const atBottom = logsEl.scrollTop + logsEl.clientHeight >= logsEl.scrollHeight - 8;
      const span = document.createElement('span');
      span.className = cls;
      span.textContent = text + '\n';
      logsEl.appendChild(span);
      while (logsEl.childElementCount > LOG_CAP) logsEl.firstElementChild.remove();
      if (atBottom) logsEl.scrollTop = logsEl.scrollHeight;
    }
    function logLine(l) {
      const task = String(l.guest || '').split('/').pop();
      const stream = l.stream && l.stream !== 'log' ? ` ${l.stream}` : '';
      const time = String(l.time || '').slice(11, 23);
      appendLog(`${time} ${String(l.level || '').toUpperCase().padEnd(5)} ${task}${stream}: ${l.message}`,
        `l-${String(l.level || 'info').toLowerCase()}`);
    }

    // Server-sent events: blocks split by a blank line, `field: value` lines.
    function sseEvent(block) {
      let event = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (!line || line[0] === ':') continue;
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        let value = i < 0 ? '' : line.slice(i + 1);
        if (value[0] === ' ') value = value.slice(1);
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (!data.length) return;
      const text = data.join('\n');
      if (event === 'skipped') return appendLog(`[${text}]`, 'l-note');
      try { logLine(JSON.parse(text)); } catch (_) { appendLog(text, 'l-note'); }
    }

    let connected = false;
    async function followLogs() {
      const res = await api(`${base}/logs?tail=100&follow=true`, opts({ raw: true }));
      // A new connection sends its tail again: start the view afresh.
      const again = connected;
      connected = true;
      if (again) {
        logsEl.textContent = '';
        appendLog('[reconnected]', 'l-note');
      }
      if (!(res.headers.get('content-type') || '').includes('text/event-stream')) {
        for (const l of (await res.json()) || []) logLine(l);
        return;
      }
      $('#logs-status').textContent = 'live';
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        // CRLF and CR end lines too; a trailing CR may be half of a CRLF.
        const cr = buf.endsWith('\r');
        buf = (cr ? buf.slice(0, -1) : buf).replace(/\r\n?/g, '\n') + (cr ? '\r' : '');
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          sseEvent(buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
      }
    }

    async function logLoop() {
      let lastProblem = null;
      while (!ctl.signal.aborted) {
        try {
          await followLogs();
        } catch (e) {
          if (ctl.signal.aborted) return;
          // Said once, not at every retry.
          if (!(e instanceof Unreachable) && e.message !== lastProblem) appendLog(`[logs: ${e.message}]`, 'l-note');
          lastProblem = e.message;
        }
        if (ctl.signal.aborted) return;
        $('#logs-status').textContent = 'reconnecting…';
        await sleep(RETRY_EVERY, ctl.signal);
      }
    }

    // -- dead letters --

    async function deadLetters() {
      const el = $('#dead-letters');
      try {
        const list = await api(`${base}/dead-letters?limit=50`, opts());
        el.innerHTML = list && list.length
          ? `<div class="dead mono">${list.map((d) => `<div>${esc(JSON.stringify(d))}</div>`).join('')}</div>`
          : '<p class="absent">none</p>';
      } catch (e) {
        if (e.name === 'AbortError' || e instanceof Unreachable) return;
        el.innerHTML = e.status === 404 && e.code === 'not-found'
          ? '<p class="absent">no dead-letter sink</p>'
          : `<p class="error">${esc(e.message)}</p>`;
      }
    }

    // Redraw charts at the new width; coalesced to one redraw per frame.
    let resizeQueued = false;
    const onResize = () => {
      if (resizeQueued) return;
      resizeQueued = true;
      requestAnimationFrame(() => { resizeQueued = false; renderProgress(); });
    };
    window.addEventListener('resize', onResize);

    // The component list wants view.component for its "(current)" mark,
    // so it waits for the first refresh.
    let started = false;
    const stopDetail = poll(async () => {
      await refresh();
      if (!started) { started = true; loadComponents(); }
    }, DETAIL_EVERY);
    const stopDead = poll(deadLetters, DEAD_EVERY);
    logLoop();
    setView(() => { refresh(); deadLetters(); }, [stopDetail, stopDead, () => ctl.abort(),
      () => window.removeEventListener('resize', onResize)]);
  }

  // ---- replay result --------------------------------------------------------

  // Wraps the part of `a` that differs from `b` in <mark>, after the common
  // prefix and before the common suffix, so a one-field change stands out.
  function marked(a, b) {
    if (a == null) return '<span class="absent">(none)</span>';
    if (b == null) return `<mark>${esc(a)}</mark>`;
    let p = 0;
    while (p < a.length && p < b.length && a[p] === b[p]) p++;
    let s = 0;
    while (s < a.length - p && s < b.length - p && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
    const mid = a.slice(p, a.length - s);
    return esc(a.slice(0, p)) + (mid ? `<mark>${esc(mid)}</mark>` : '') + esc(a.slice(a.length - s));
  }

  function replayHtml(r) {
    const unit = r.unit || 'batch';
    const batches = r.batches || [];
    if (!batches.length) return `<p class="absent">no ${unit === 'epoch' ? 'epochs' : 'batches'} in that range</p>`;
    return batches.map((b) => {
      const diffs = b.differences;
      const pill = diffs == null ? '<span class="pill">no live output to compare</span>'
        : `<span class="pill${diffs ? ' bad' : ''}">${esc(diffs)} difference${diffs === 1 ? '' : 's'}</span>`;
      const outputs = b.outputs && b.outputs.length ? b.outputs : [{
        output: null, 'candidate-rows': b['output-rows'], 'live-rows': b['live-output-rows'],
        differing: diffs, 'first-differences': [],
      }];
      const rows = outputs.map((o) => `<tr><td>${esc(o.output == null ? '(main)' : o.output)}</td>`
        + `<td class="num">${esc(fmtNum(o['candidate-rows']))}</td><td class="num">${esc(fmtNum(o['live-rows']))}</td>`
        + `<td class="num">${esc(o.differing == null ? '–' : o.differing)}</td></tr>`).join('');
      const firsts = outputs.flatMap((o) => (o['first-differences'] || []).map((d) => Object.assign({ output: o.output }, d)));
      const diffTable = firsts.length ? `<table class="grid diffs"><thead><tr><th class="num">#</th>`
        + `<th>live</th><th>candidate</th></tr></thead><tbody>${firsts.map((d) => `<tr class="diff">`
          + `<td class="idx">${esc(d.output != null ? d.output + ' ' : '')}${esc(d.index)}</td>`
          + `<td class="live">${marked(d.live, d.candidate)}</td>`
          + `<td class="cand">${marked(d.candidate, d.live)}</td></tr>`).join('')}</tbody></table>` : '';
      return `<section class="replay-batch"><h4>${esc(unit)} ${esc(b.id)} ${pill}
        <span class="muted">input ${esc(fmtNum(b['input-rows']))} · output ${esc(fmtNum(b['output-rows']))}`
        + ` (live ${esc(fmtNum(b['live-output-rows']))}) · rejected ${esc(fmtKinds(b['rejected-rows']))}`
        + ` · ${esc(fmtNum(b['rows-per-second']))} rows/s</span></h4>
        <table class="grid replay"><thead><tr><th>output</th><th class="num">candidate rows</th>
        <th class="num">live rows</th><th class="num">differing</th></tr></thead><tbody>${rows}</tbody></table>
        ${diffTable}${b.note ? `<p class="muted">${esc(b.note)}</p>` : ''}</section>`;
    }).join('');
  }

  boot();
})();
