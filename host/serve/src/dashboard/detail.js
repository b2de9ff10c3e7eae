// weir dashboard: the detail page (#/p/<tenant>/<name>): header, charts,
// progress table, totals, checkpoint, component, the live log tail and dead
// letters; its actions are in actions.js. Adds weir.detailView.
'use strict';
(() => {
  const {
    DETAIL_EVERY, DEAD_EVERY, RETRY_EVERY, HISTORY_CAP, LOG_CAP,
    $, enc, esc, fmtNum, fmtClock, fmtStamp, fmtKB, shortId, fmtKinds, badge,
    Unreachable, api, poll, sleep, setView, lineChart, legend, detailActions,
  } = window.weir;

  // ---- detail -------------------------------------------------------------

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
    let componentShown = null;
    // What this page shares with its actions (actions.js).
    const d = {
      base, opts, showView,
      view: null,
      // The range follows the newest checkpoint until the user types one or
      // runs a replay, so a shown result always matches the form.
      replayDirty: false,
    };

    // -- header, checkpoint, component --

    function showView(v) {
      d.view = v;
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
      if (cp && !d.replayDirty && cp['last-committed'] != null) {
        const lc = cp['last-committed'];
        $('#replay-from').value = Math.max(0, lc - 4);
        $('#replay-to').value = lc;
      }
      if (v.component !== componentShown) showComponent(v.component);
    }

    async function showComponent(id) {
      componentShown = id;
      const el = $('#component');
      if (id == null) {
        el.innerHTML = '<dt>id</dt><dd class="muted">none: the host runs its [window]</dd>';
        return;
      }
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
      const continuous = (d.view && d.view.mode === 'continuous')
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

    // -- actions: stop/start, deploy, replay (actions.js) --

    const { loadComponents } = detailActions(d);

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

  Object.assign(window.weir, { detailView });
})();
