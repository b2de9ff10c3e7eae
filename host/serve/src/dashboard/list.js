// weir dashboard: the pipelines list, the start screen (#/), polled every
// 2 s. Adds weir.listView.
'use strict';
(() => {
  const {
    LIST_EVERY, app, $, enc, isAdmin, esc, fmtNum, fmtStamp, fmtKinds, badge,
    Unreachable, api, poll, setView,
  } = window.weir;

  // ---- list ---------------------------------------------------------------

  const pipelineHref = (tenant, name) => `#/p/${enc(tenant)}/${enc(name)}`;

  function listRow(p, admin) {
    const tenant = p.tenant || (app.who && app.who.tenant) || '';
    const m = p.metrics || {};
    const rejected = fmtKinds(m['rejected-rows']);
    const lag = p.lag !== undefined ? p.lag : m.lag;
    const err = p['last-error'];
    const desired = p.desired && p.desired !== p.state ? ` title="desired: ${esc(p.desired)}"` : '';
    // In a cluster: the node running it (a group pipeline's: every member's).
    const where = p.nodes ? p.nodes.join(', ') : p.node;
    const node = where ? ` <span class="node muted" title="node">${esc(where)}</span>` : '';
    return `<tr data-pipeline="${esc(tenant)}/${esc(p.name)}" data-href="${esc(pipelineHref(tenant, p.name))}">`
      + (admin ? `<td class="tenant">${esc(tenant)}</td>` : '')
      + `<td class="name"><a href="${esc(pipelineHref(tenant, p.name))}">${esc(p.name)}</a></td>`
      + `<td class="state"${desired}>${badge(p.state)}${node}</td>`
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

  Object.assign(window.weir, { listView });
})();
