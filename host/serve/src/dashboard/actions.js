// weir dashboard: the detail page's actions (stop/start, deploy = upload +
// PUT of the spec with the new component, the replay panel and its result).
// Adds weir.detailActions, which detail.js calls with its shared state.
'use strict';
(() => {
  const { $, esc, fmtNum, fmtKB, shortId, fmtKinds, Unreachable, api } = window.weir;

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

  // Wires the actions into the page detail.js has just drawn. `d` is what
  // they share with it: base, opts, showView, and the mutable view and
  // replayDirty. Returns what detail.js calls later.
  function detailActions(d) {
    const { base, opts, showView } = d;

    // -- actions --

    async function action(verb) {
      const out = $('#action-result');
      $('#stop').disabled = $('#start').disabled = true;
      out.className = 'result muted';
      out.textContent = `${verb}…`;
      try {
        const v = await api(`${base}/${verb}`, opts({ method: 'POST' }));
        showView(Object.assign({}, d.view, v));
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
        showView(Object.assign({}, d.view, v));
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
        const current = d.view && d.view.component;
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
      $(id).addEventListener('input', () => { d.replayDirty = true; });
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
      d.replayDirty = true;
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

    return { loadComponents };
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
      const rows = outputs.map((o) => `<tr><td>${esc(o.output == null ? 'default' : o.output)}</td>`
        + `<td class="num">${esc(fmtNum(o['candidate-rows']))}</td><td class="num">${esc(fmtNum(o['live-rows']))}</td>`
        + `<td class="num">${esc(o.differing == null ? '–' : o.differing)}</td></tr>`).join('');
      const firsts = outputs.flatMap((o) => (o['first-differences'] || []).map((d) => Object.assign({ output: o.output }, d)));
      // Where each record is in the live and the candidate's output.
      const pos = (i) => (i == null ? '–' : `#${i}`);
      const diffTable = firsts.length ? `<table class="grid diffs"><thead><tr><th class="num" title="position in the live output / in the candidate's">at</th>`
        + `<th>live</th><th>candidate</th></tr></thead><tbody>${firsts.map((d) => `<tr class="diff">`
          + `<td class="idx">${esc(d.output != null ? d.output + ' ' : '')}${esc(pos(d['live-index']))}`
          + ` / ${esc(pos(d['candidate-index']))}</td>`
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

  Object.assign(window.weir, { detailActions });
})();
