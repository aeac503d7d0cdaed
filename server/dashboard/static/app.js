// Baton dashboard. Each page subscribes to one live view of the admin API
// (/admin/api/events/...), a server-sent event stream of JSON snapshots, and
// draws it. Every time shown is computed from the snapshot's "now", the
// server's clock, never the browser's. Nodes that can hold focus (links,
// buttons, form fields) are updated in place, never rebuilt, so that a
// keyboard user does not lose their place when a snapshot arrives.
'use strict';

(function () {
  const SVGNS = 'http://www.w3.org/2000/svg';
  const body = document.body;
  const page = body.dataset.page;
  const queueName = body.dataset.queue || '';
  const messageId = body.dataset.message || '';
  // A dashboard of leases only (baton proxy's) offers no actions on the queue.
  const leasesOnly = body.dataset.leasesOnly === 'true';

  // ---- DOM helpers ----

  function build(node, props, kids) {
    for (const [k, v] of Object.entries(props || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') node.setAttribute('class', v);
      else if (k === 'text') node.textContent = v;
      else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? '' : String(v));
    }
    append(node, kids);
    return node;
  }
  function el(tag, props, ...kids) { return build(document.createElement(tag), props, kids); }
  function sv(tag, props, ...kids) { return build(document.createElementNS(SVGNS, tag), props, kids); }
  function append(node, kids) {
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      node.append(k instanceof Node ? k : document.createTextNode(String(k)));
    }
  }
  const $ = (id) => document.getElementById(id);
  function setText(node, text) {
    text = String(text);
    if (node.textContent !== text) node.textContent = text;
  }
  // rebuild replaces a node's children when their signature changes.
  function rebuild(node, sig, make) {
    if (node._sig === sig) return;
    node._sig = sig;
    node.replaceChildren(...[make()].flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
  }
  // keyed keeps one child per item of a list, in order, reusing the nodes of
  // items it has seen.
  function keyed(container, items, key, create, update) {
    const old = container._keyed || new Map();
    const next = new Map();
    let prev = null;
    for (const item of items) {
      const k = key(item);
      let node = old.get(k);
      if (!node) node = create(item);
      update(node, item);
      next.set(k, node);
      const want = prev ? prev.nextSibling : container.firstChild;
      if (node !== want) container.insertBefore(node, want);
      prev = node;
    }
    for (const [k, node] of old) if (!next.has(k)) node.remove();
    container._keyed = next;
  }

  // ---- Formatting ----

  const pad2 = (n) => String(n).padStart(2, '0');
  function fmtDuration(sec) {
    if (sec === null || sec === undefined || !isFinite(sec)) return '–';
    const neg = sec < 0;
    sec = Math.abs(sec);
    let s;
    if (sec === 0) s = '0s';
    else if (sec < 1) s = Math.max(1, Math.round(sec * 1000)) + 'ms';
    else if (sec < 10) s = (Math.round(sec * 10) / 10) + 's';
    else if (sec < 120) s = Math.round(sec) + 's'; // a lease reads best in seconds
    else if (sec < 3600) {
      // Seconds rounded, as the doctor's own text rounds them (130.6 s is
      // 2m 11s there and here).
      const t = Math.round(sec), m = Math.floor(t / 60), r = t % 60;
      s = m + 'm' + (r ? ' ' + pad2(r) + 's' : '');
    } else if (sec < 86400) {
      const h = Math.floor(sec / 3600), m = Math.floor((sec % 3600) / 60);
      s = h + 'h' + (m ? ' ' + pad2(m) + 'm' : '');
    } else {
      const d = Math.floor(sec / 86400), h = Math.floor((sec % 86400) / 3600);
      s = d + 'd' + (h ? ' ' + h + 'h' : '');
    }
    return (neg ? '−' : '') + s;
  }
  function fmtClock(t) {
    const d = new Date(t);
    return isNaN(d) ? '–' : d.toISOString().slice(11, 19);
  }
  function fmtStamp(t) {
    const d = new Date(t);
    return isNaN(d) ? '–' : d.toISOString().slice(0, 19).replace('T', ' ') + ' UTC';
  }
  const fmtCount = (n) => Number(n || 0).toLocaleString('en-US');
  const plural = (n, one, many) => fmtCount(n) + ' ' + (n === 1 ? one : (many || one + 's'));
  // The page's region (?region=eu-central-1): each region is a namespace of
  // queues of its own, and the admin API acts in the one it is given, else
  // the server's default region. Links and API calls carry it on.
  const REGION = new URLSearchParams(location.search).get('region') || '';
  const inRegion = (path) => (REGION ? path + (path.includes('?') ? '&' : '?') + 'region=' + encodeURIComponent(REGION) : path);
  const queueHref = (name) => inRegion('/ui/queues/' + encodeURIComponent(name));
  const topicHref = (name) => inRegion('/ui/topics/' + encodeURIComponent(name));
  const messageHref = (q, id) => inRegion('/ui/queues/' + encodeURIComponent(q) + '/messages/' + encodeURIComponent(id));
  const shortID = (id) => (id.length > 13 ? id.slice(0, 8) + '…' + id.slice(-4) : id);

  const DIAGNOSES = {
    'healthy': ['Healthy', 'ok'],
    'lease-too-short': ['Leases too short', 'bad'],
    'handler-failing': ['Handlers failing', 'warn'],
    'held-unrenewed': ['Held, not renewed', 'bad'],
    'held-renewed': ['Held and renewed', 'bad'],
    'long-job': ['Long job', 'plain'],
    'ceiling-refused': ['Renewals refused', 'warn'],
    'batch-fails-whole': ['Batches fail whole', 'bad'],
    'holders-stopped': ['Holders stopped', 'warn'],
    'inspection': ['Inspection', 'plain'],
    'client-left': ['Client left before its answer', 'warn'],
    'store-failed': ['Store failed deletes in time', 'warn'],
    'too-few-leases': ['Too few leases', 'plain'],
    'no-leases': ['No leases seen', 'plain'],
    'release-loop': ['Release loop', 'warn'],
    'retry-loop': ['Retry loop', 'warn'],
    'evidence-missed': ['Evidence missed', 'warn'],
  };
  // What a lease named by a finding is marked with in the leases list.
  const HELD = {
    'held-unrenewed': 'held far beyond the p99, not renewed since',
    'held-renewed': 'held far beyond the p99, still renewed',
    'long-job': 'held far beyond the p99, renewed on progress',
    'ceiling-refused': 'renewals refused by the 12 h ceiling',
  };
  function diagnosisBadge(d) {
    const [text, cls] = DIAGNOSES[d] || [d || 'Unknown', 'plain'];
    return el('span', { class: 'badge ' + cls, text });
  }
  // queueBadge is a queue's verdict: for a dead-letter queue holding
  // messages, that it holds failed ones (its own leases may be healthy,
  // the messages are not); else the lease doctor's.
  const heldFailed = (q) => ((q.dead_letter_sources || []).length ? q.visible + q.in_flight + q.delayed : 0);
  function queueBadge(q) {
    const n = heldFailed(q);
    return n ? el('span', { class: 'badge warn', text: 'Holds ' + plural(n, 'failed message') }) : diagnosisBadge(q.diagnosis);
  }
  // A system attribute as a person reads it: SQS's timestamps are epoch
  // milliseconds, shown as a date with the number kept in its title.
  function systemAttr(name, v) {
    if (/Timestamp$/.test(name) && /^[0-9]+$/.test(v)) return el('dd', { text: fmtStamp(Number(v)), title: v });
    return el('dd', { text: v });
  }

  // ---- Talking to the server ----

  async function api(method, path, payload) {
    const opts = { method, headers: { Accept: 'application/json' }, credentials: 'same-origin' };
    if (payload !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(payload);
    }
    let res;
    try {
      res = await fetch(inRegion('/admin/api' + path), opts);
    } catch (e) {
      const err = new Error('The server could not be reached.');
      err.code = 'NetworkError';
      throw err;
    }
    let data = null;
    try { data = await res.json(); } catch (e) { /* not JSON */ }
    if (!res.ok) {
      const err = new Error((data && data.error) || res.statusText || 'Request failed');
      err.code = (data && data.code) || 'HTTP ' + res.status;
      throw err;
    }
    return data;
  }

  // live subscribes to a view's event stream. onData gets each snapshot,
  // onFailure the server's error (a deleted queue, say).
  function live(path, onData, onFailure) {
    const status = $('live');
    function state(s, text) {
      if (status.dataset.state === s) return;
      status.dataset.state = s;
      setText(status.querySelector('.live-text'), text);
    }
    let es = null;
    function connect() {
      es = new EventSource(inRegion('/admin/api/events' + path));
      es.onopen = () => state('live', 'Live');
      es.onmessage = (e) => {
        let d;
        try { d = JSON.parse(e.data); } catch (err) { return; }
        state('live', 'Live');
        if (d.now) setText($('asof'), 'Server time ' + fmtStamp(d.now));
        onData(d);
      };
      es.addEventListener('failure', (e) => {
        let d = {};
        try { d = JSON.parse(e.data); } catch (err) { /* keep {} */ }
        onFailure(d);
      });
      es.onerror = () => {
        if (es.readyState === EventSource.CLOSED) {
          state('off', 'Disconnected, retrying…');
          setTimeout(connect, 5000);
        } else {
          state('off', 'Reconnecting…');
        }
      };
    }
    connect();
    addEventListener('pagehide', () => es && es.close());
  }

  function showFailure(node, err) {
    if (!err) {
      node.hidden = true;
      node.replaceChildren();
      return;
    }
    node.replaceChildren(el('strong', { text: err.code || 'Error' }), err.message || err.error || '');
    node.hidden = false;
  }
  function showResult(node, ok, ...kids) {
    node.className = 'result ' + (ok ? 'ok' : 'bad');
    node.replaceChildren();
    append(node, kids);
  }
  function errorKids(err) {
    return [el('strong', { text: err.code || 'Error' }), ' ', err.message];
  }
  // busy disables button while f runs; then it is enabled again unless
  // the page holds it.
  async function busy(button, f) {
    button.busy = true;
    button.disabled = true;
    try {
      await f();
    } finally {
      button.busy = false;
      button.disabled = !!button.held;
    }
  }
  // hold disables button while on, for a reason the live view gives (a
  // task running, say), whether busy's work ends before or after.
  function hold(button, on) {
    button.held = on;
    button.disabled = on || !!button.busy;
  }

  // ask shows a modal dialog whose form has method="dialog", the focus on
  // its cancel button, and resolves with the value of the button that
  // closed it: '' for Cancel or Escape. The browser fires a dialog's close
  // event at its next rendering, not when it closes, and the event can only
  // read returnValue as it is then. Shown again in between (a quick user, or
  // input ahead of a late frame on a loaded machine), one showing's close
  // event would be read as another's answer: one confirmation acting twice,
  // or a confirmed action dropped. So a dialog is shown again only after
  // the close event of its last showing has come, and each showing takes
  // the next close event, its own.
  const showings = new WeakMap(); // dialog → its last showing's answer
  function ask(dialog, cancel) {
    const answer = (showings.get(dialog) || Promise.resolve()).then(() => new Promise((resolve) => {
      dialog.returnValue = '';
      dialog.addEventListener('close', () => resolve(dialog.returnValue), { once: true });
      dialog.showModal();
      cancel.focus();
    }));
    showings.set(dialog, answer.catch(() => ''));
    return answer;
  }

  // ---- Charts ----

  function width(node, fallback) {
    return Math.max(node.clientWidth || 0, fallback || 0);
  }

  // niceStep picks a tick step (seconds) so that span has at most n ticks.
  function niceStep(span, n) {
    const steps = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600,
      900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
    for (const s of steps) if (span / s <= n) return s;
    return Math.ceil(span / n / 86400) * 86400;
  }
  function fmtTick(sec) {
    if (sec < 1 && sec > 0) return Math.round(sec * 1000) + 'ms';
    if (sec < 120) return Math.round(sec * 1000) / 1000 + 's';
    if (sec < 7200) return Math.round(sec / 60 * 10) / 10 + 'm';
    return Math.round(sec / 3600 * 10) / 10 + 'h';
  }

  function sparkline(minutes) {
    const w = 120, h = 30, n = minutes.length;
    const sent = minutes.map((m) => m.sent), del = minutes.map((m) => m.deleted);
    const max = Math.max(1, ...sent, ...del);
    const pts = (vals) => vals.map((v, i) =>
      (1 + i * (w - 2) / Math.max(1, n - 1)).toFixed(1) + ',' + (h - 2 - v / max * (h - 5)).toFixed(1)).join(' ');
    const totalSent = sent.reduce((a, b) => a + b, 0), totalDel = del.reduce((a, b) => a + b, 0);
    const label = 'Last 15 minutes: ' + plural(totalSent, 'message') + ' sent, ' + fmtCount(totalDel) + ' deleted';
    return sv('svg', { class: 'spark', width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: 'img', 'aria-label': label },
      sv('title', { text: label }),
      sv('line', { class: 'spark-base', x1: 0, x2: w, y1: h - 1.5, y2: h - 1.5 }),
      sv('polyline', { class: 'spark-line spark-deleted', points: pts(del) }),
      sv('polyline', { class: 'spark-line spark-sent', points: pts(sent) }));
  }

  function drawHistogram(box, hist) {
    const buckets = hist.buckets || [];
    const W = width(box, 260), H = 190;
    const L = 34, R = 10, T = 26, B = 30;
    const pw = W - L - R, ph = H - T - B;
    const counts = buckets.map((b) => b.count);
    const max = Math.max(1, ...counts);
    const n = buckets.length, bw = pw / n;
    const vt = hist.visibility_timeout_seconds;
    const total = counts.reduce((a, b) => a + b, 0);
    const over = buckets.reduce((a, b) => a + (vt > 0 && b.gt_seconds >= vt ? b.count : 0), 0);
    // The durations are of the leases whose handler's time is known
    // (leases_timed): a completion whose time is not known is in none.
    const label = total === 0
      ? 'No lease\'s time from receive to delete is known for the last 15 minutes.'
      : `${plural(total, 'lease')} timed from receive to delete in the last 15 minutes; ${fmtCount(over)} lasted longer than the visibility timeout of ${fmtDuration(vt)}.`;
    const svg = sv('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label });
    const yTop = niceCeil(max);
    yGrid(svg, yTop, L, W - R, T, ph);
    buckets.forEach((b, i) => {
      const x = L + i * bw;
      const hgt = b.count / yTop * ph;
      const isOver = vt > 0 && b.gt_seconds >= vt;
      const range = b.le_seconds === null ? `over ${fmtDuration(b.gt_seconds)}` : `${fmtDuration(b.gt_seconds)} to ${fmtDuration(b.le_seconds)}`;
      if (b.count > 0) {
        svg.append(sv('rect', { class: 'hbar' + (isOver ? ' over' : ''), x: x + 1, y: T + ph - hgt, width: Math.max(1, bw - 2), height: hgt },
          sv('title', { text: `${range}: ${plural(b.count, 'lease')}` })));
        if (bw >= 14) svg.append(sv('text', { class: 'hbar-count', x: x + bw / 2, y: T + ph - hgt - 4, 'text-anchor': 'middle', text: fmtCount(b.count) }));
      }
    });
    // Edge labels: the timeout's first, then others where they fit.
    const edges = buckets.map((b, i) => ({ x: L + (i + 1) * bw, v: b.le_seconds, vt: vt > 0 && Math.abs(b.le_seconds - vt) < 1e-9 }))
      .filter((e) => e.v !== null);
    const placed = [];
    for (const e of [...edges.filter((e) => e.vt), ...edges.filter((e) => !e.vt)]) {
      const text = fmtTick(e.v);
      const half = text.length * 3.4 + 6;
      if (placed.some((p) => Math.abs(p.x - e.x) < p.half + half)) continue;
      placed.push({ x: e.x, half });
      svg.append(sv('text', { x: e.x, y: H - B + 16, 'text-anchor': 'middle', text }));
    }
    if (vt > 0) {
      const j = buckets.findIndex((b) => b.le_seconds !== null && Math.abs(b.le_seconds - vt) < 1e-9);
      if (j >= 0) {
        const x = L + (j + 1) * bw;
        const anchor = x > W * 0.6 ? 'end' : 'start';
        svg.append(sv('line', { class: 'vt-line', x1: x, x2: x, y1: T - 8, y2: T + ph }),
          sv('text', { class: 'vt-label', x: anchor === 'end' ? x - 5 : x + 5, y: T - 10, 'text-anchor': anchor, text: `visibility timeout ${fmtDuration(vt)}` }));
      }
    }
    box.replaceChildren(svg);
    return label;
  }
  // yGrid draws horizontal lines, labelled with whole counts, at 0, the
  // middle (when it is whole) and top.
  function yGrid(svg, top, x1, x2, y0, ph) {
    const ticks = top % 2 === 0 ? [0, top / 2, top] : [0, top];
    for (const v of ticks) {
      const y = y0 + ph - v / top * ph;
      svg.append(sv('line', { class: v === 0 ? 'axis-line' : 'grid-line', x1, x2, y1: y, y2: y }),
        sv('text', { x: x1 - 6, y: y + 4, 'text-anchor': 'end', text: fmtCount(v) }));
    }
  }
  function niceCeil(v) {
    if (v <= 5) return Math.max(1, Math.ceil(v));
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  function drawActivity(box, minutes) {
    const W = width(box, 260), H = 130, L = 34, R = 10, T = 10, B = 24;
    const pw = W - L - R, ph = H - T - B, n = minutes.length;
    const series = { sent: minutes.map((m) => m.sent), deleted: minutes.map((m) => m.deleted), expired: minutes.map((m) => m.expired) };
    const top = niceCeil(Math.max(1, ...series.sent, ...series.deleted, ...series.expired));
    const x = (i) => L + i * pw / Math.max(1, n - 1);
    const y = (v) => T + ph - v / top * ph;
    const sum = (a) => a.reduce((p, q) => p + q, 0);
    const label = `Last 15 minutes: ${fmtCount(sum(series.sent))} sent, ${fmtCount(sum(series.deleted))} deleted, ${plural(sum(series.expired), 'lease')} expired.`;
    const svg = sv('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label });
    yGrid(svg, top, L, W - R, T, ph);
    for (const [i, text] of [[0, '−15m'], [Math.round((n - 1) / 3), '−10m'], [Math.round(2 * (n - 1) / 3), '−5m'], [n - 1, 'now']]) {
      if (n > 1) svg.append(sv('text', { x: x(i), y: H - 6, 'text-anchor': i === 0 ? 'start' : i === n - 1 ? 'end' : 'middle', text }));
    }
    for (const name of ['expired', 'deleted', 'sent']) {
      svg.append(sv('polyline', { class: 'act-line act-' + name, points: series[name].map((v, i) => x(i).toFixed(1) + ',' + y(v).toFixed(1)).join(' ') }));
    }
    box.replaceChildren(svg);
  }

  // ---- Queues page ----

  function queuesPage() {
    const table = $('queues'), tbody = table.querySelector('tbody');
    live('/queues', (d) => {
      const qs = d.queues || [];
      table.hidden = qs.length === 0;
      $('empty').hidden = qs.length !== 0;
      const vis = qs.reduce((a, q) => a + q.visible, 0), inf = qs.reduce((a, q) => a + q.in_flight, 0);
      // Too few leases to judge is no problem named.
      const sick = qs.filter((q) => q.diagnosis && q.diagnosis !== 'healthy' && q.diagnosis !== 'too-few-leases').length;
      setText($('summary'), `${plural(qs.length, 'queue')} · ${fmtCount(vis)} visible · ${fmtCount(inf)} in flight` +
        (sick ? ` · ${plural(sick, 'queue needs', 'queues need')} attention` : ''));
      keyed(tbody, qs, (q) => q.name, createQueueRow, updateQueueRow);
    }, () => {});
  }

  function createQueueRow(q) {
    const c = {};
    const tr = el('tr', null,
      c.name = el('td', { class: 'name', 'data-label': 'Queue' },
        el('a', { href: queueHref(q.name), text: q.name }), q.fifo ? el('span', { class: 'badge plain', text: 'FIFO' }) : null),
      c.diag = el('td', { 'data-label': 'Leases' }),
      c.visible = el('td', { class: 'num count', 'data-label': 'Visible' }),
      c.inflight = el('td', { class: 'num count', 'data-label': 'In flight' }),
      c.delayed = el('td', { class: 'num count', 'data-label': 'Delayed' }),
      c.oldest = el('td', { class: 'num count', 'data-label': 'Oldest' }),
      c.spark = el('td', { 'data-label': 'Sent and deleted' }),
      c.dlq = el('td', { class: 'dlq', 'data-label': 'Dead-letter' }));
    tr._c = c;
    return tr;
  }

  function updateQueueRow(tr, q) {
    const c = tr._c;
    rebuild(c.diag, q.diagnosis + '/' + heldFailed(q), () => queueBadge(q));
    for (const [cell, v] of [[c.visible, q.visible], [c.inflight, q.in_flight], [c.delayed, q.delayed]]) {
      setText(cell, fmtCount(v));
      cell.classList.toggle('zero', !v);
    }
    setText(c.oldest, q.visible + q.in_flight + q.delayed ? fmtDuration(q.oldest_age_seconds) : '–');
    c.oldest.classList.toggle('zero', !(q.visible + q.in_flight + q.delayed));
    const act = q.activity || [];
    const sig = act.map((m) => m.sent + '/' + m.deleted).join(',');
    rebuild(c.spark, sig, () => {
      const sent = act.reduce((a, m) => a + m.sent, 0), del = act.reduce((a, m) => a + m.deleted, 0);
      // Deletes in the window may be of messages sent before it: the two
      // counts need not match, and the title says so.
      return el('div', { class: 'spark-cell', title: `${fmtCount(sent)} sent and ${fmtCount(del)} deleted in the last 15 minutes; a delete may be of a message sent before them` },
        sparkline(act), el('span', { class: 'spark-text', 'aria-hidden': 'true', text: `${fmtCount(sent)} sent · ${fmtCount(del)} deleted` }));
    });
    rebuild(c.dlq, JSON.stringify([q.dead_letter_queue, q.max_receive_count, q.dead_letter_sources]), () => el('div', null, dlqCell(q)));
  }

  function dlqCell(q) {
    const parts = [];
    if (q.dead_letter_queue) {
      parts.push(el('div', null, '→ ', el('a', { href: queueHref(q.dead_letter_queue), text: q.dead_letter_queue }),
        q.max_receive_count ? el('span', { class: 'muted', text: ` after ${plural(q.max_receive_count, 'receive')}` }) : null));
    }
    const src = q.dead_letter_sources || [];
    if (src.length) {
      const links = [];
      src.forEach((s, i) => { if (i) links.push(', '); links.push(el('a', { href: queueHref(s), text: s })); });
      parts.push(el('div', null, el('span', { class: 'muted', text: 'DLQ of ' }), links));
    }
    if (!parts.length) parts.push(el('span', { class: 'muted', text: '—' }));
    return parts;
  }

  // ---- Queue page ----

  function queuePage() {
    const path = '/queues/' + encodeURIComponent(queueName);
    let last = null;
    const attrsForm = $('attrs-form');
    const fields = Array.from(attrsForm.querySelectorAll('input[name], select[name], textarea[name]'));

    live(path, (d) => {
      last = d;
      showFailure($('failure'), null);
      renderQueue(d, fields);
    }, (f) => {
      showFailure($('failure'), { code: f.code, message: f.code === 'AWS.SimpleQueueService.NonExistentQueue'
        ? 'The queue ' + queueName + ' does not exist (any more). This page updates if it is created again.' : f.error });
    });

    addEventListener('resize', debounce(() => {
      if (last) {
        drawHistogram($('histogram'), last.histogram);
        drawActivity($('activity'), last.queue.activity || []);
      }
    }, 150));

    // Attributes: fields the operator has changed are kept; the others
    // follow the server. A refused value is marked where it was typed.
    function markField(f, err) {
      let p = document.getElementById('err-' + f.name);
      if (!err) {
        f.removeAttribute('aria-invalid');
        f.removeAttribute('aria-errormessage');
        if (p) p.remove();
        return;
      }
      if (!p) {
        p = el('p', { class: 'field-error', id: 'err-' + f.name });
        f.after(p);
      }
      p.replaceChildren(el('strong', { class: 'mono', text: err.code }), ' ', err.message);
      f.setAttribute('aria-invalid', 'true');
      f.setAttribute('aria-errormessage', p.id);
    }
    for (const f of fields) {
      f.addEventListener('input', () => {
        const dirty = f.value !== (f.dataset.server || '');
        if (dirty) f.dataset.edited = 'true';
        else delete f.dataset.edited;
        f.classList.toggle('dirty', dirty);
        markField(f, null);
      });
    }
    attrsForm.addEventListener('reset', (e) => {
      e.preventDefault();
      for (const f of fields) {
        f.value = f.dataset.server || '';
        delete f.dataset.edited;
        f.classList.remove('dirty');
        markField(f, null);
      }
      showFailure($('attrs-error'), null);
      setText($('attrs-result'), '');
    });
    attrsForm.addEventListener('submit', (e) => {
      e.preventDefault();
      const changed = {};
      for (const f of fields) {
        if (!f.closest('[hidden]') && f.value !== (f.dataset.server || '')) changed[f.name] = f.value;
      }
      const names = Object.keys(changed);
      showFailure($('attrs-error'), null);
      if (!names.length) {
        showResult($('attrs-result'), true, 'Nothing to save: no attribute was changed.');
        return;
      }
      busy($('attrs-save'), async () => {
        try {
          const res = await api('POST', path + '/attributes', { attributes: changed });
          for (const f of fields) {
            const v = res.attributes[f.name] ?? '';
            f.dataset.server = v;
            f.value = v;
            delete f.dataset.edited;
            f.classList.remove('dirty');
            markField(f, null);
          }
          showResult($('attrs-result'), true, 'Saved ' + names.join(', ') + '.');
        } catch (err) {
          setText($('attrs-result'), '');
          showFailure($('attrs-error'), err);
          const bad = fields.find((f) => changed[f.name] !== undefined && err.message.includes(f.name)) ||
            (names.length === 1 ? fields.find((f) => f.name === names[0]) : null);
          if (bad) {
            markField(bad, err);
            bad.focus();
          }
        }
      });
    });

    $('use-recommended').addEventListener('click', () => {
      if (!last) return;
      const f = $('a-VisibilityTimeout');
      f.value = String(last.lease_report.recommended_visibility_timeout_seconds);
      f.dataset.edited = 'true';
      f.classList.toggle('dirty', f.value !== (f.dataset.server || ''));
      f.focus();
      showResult($('attrs-result'), true, 'Recommended timeout filled in; save to apply it.');
    });

    $('send-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const payload = { body: $('send-body').value };
      const delay = $('send-delay').value.trim();
      if (delay !== '') {
        const n = Number(delay);
        if (!Number.isInteger(n)) {
          showResult($('send-result'), false, el('strong', { text: 'InvalidParameterValue' }), ' The delay must be a whole number of seconds.');
          $('send-delay').focus();
          return;
        }
        payload.delay_seconds = n;
      }
      if (last && last.queue.fifo) {
        payload.message_group_id = $('send-group').value;
        if ($('send-dedup').value) payload.message_deduplication_id = $('send-dedup').value;
      }
      busy($('send-button'), async () => {
        try {
          const res = await api('POST', path + '/messages', payload);
          showResult($('send-result'), true, 'Sent message ',
            el('a', { href: messageHref(queueName, res.message_id), class: 'mono', text: res.message_id }), '.');
        } catch (err) {
          showResult($('send-result'), false, errorKids(err));
        }
      });
    });

    $('purge-button').addEventListener('click', async () => {
      const button = $('purge-button');
      const total = last ? last.queue.visible + last.queue.in_flight + last.queue.delayed : null;
      setText($('purge-text'), (total === null ? 'Every message in the queue' : `All ${plural(total, 'message')} in the queue`) +
        ' (visible, in flight and delayed) will be deleted. This cannot be undone.');
      setText($('purge-result'), '');
      if (await ask($('purge-dialog'), $('purge-cancel')) !== 'purge') {
        button.focus();
        return;
      }
      await busy(button, async () => {
        try {
          await api('POST', path + '/purge', {});
          showResult($('purge-result'), true, 'Purged.');
        } catch (err) {
          showResult($('purge-result'), false, errorKids(err));
        }
        button.focus();
      });
    });

    $('redrive-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const payload = {};
      if ($('redrive-dest').value) payload.destination_queue = $('redrive-dest').value;
      const rate = $('redrive-rate').value.trim();
      if (rate !== '') {
        const n = Number(rate);
        if (!Number.isInteger(n)) {
          showResult($('redrive-result'), false, el('strong', { text: 'InvalidParameterValue' }), ' The rate must be a whole number of messages per second.');
          $('redrive-rate').focus();
          return;
        }
        payload.max_per_second = n;
      }
      busy($('redrive-button'), async () => {
        try {
          await api('POST', path + '/move-tasks', payload);
          showResult($('redrive-result'), true, 'Redrive started.');
        } catch (err) {
          showResult($('redrive-result'), false, errorKids(err));
        }
      });
    });
  }

  function renderQueue(d, fields) {
    const q = d.queue, rep = d.lease_report;
    const now = Date.parse(d.now);
    body.classList.toggle('is-fifo', q.fifo);
    for (const n of document.querySelectorAll('.fifo-only')) n.hidden = !q.fifo;

    rebuild($('tags'), JSON.stringify([q.fifo, q.dead_letter_sources.length > 0, q.diagnosis, heldFailed(q)]), () => [
      queueBadge(q),
      q.fifo ? el('span', { class: 'badge plain', text: 'FIFO' }) : null,
      q.dead_letter_sources.length ? el('span', { class: 'badge violet', text: 'Dead-letter queue' }) : null,
    ]);
    rebuild($('redrive-line'), JSON.stringify([q.dead_letter_queue, q.max_receive_count, q.dead_letter_sources]), () => {
      const out = [];
      if (q.dead_letter_queue) {
        out.push('Messages received ', plural(q.max_receive_count, 'time'), ' move to ',
          el('a', { href: queueHref(q.dead_letter_queue), class: 'mono', text: q.dead_letter_queue }), '. ');
      }
      if (q.dead_letter_sources.length) {
        out.push('Dead-letter queue of ');
        q.dead_letter_sources.forEach((s, i) => { if (i) out.push(', '); out.push(el('a', { href: queueHref(s), class: 'mono', text: s })); });
        out.push('.');
      }
      return out;
    });

    const total = q.visible + q.in_flight + q.delayed;
    setText($('st-visible'), fmtCount(q.visible));
    setText($('st-inflight'), fmtCount(q.in_flight));
    setText($('st-delayed'), fmtCount(q.delayed));
    setText($('st-oldest'), total ? fmtDuration(q.oldest_age_seconds) : '–');
    setText($('st-vt'), fmtDuration(q.visibility_timeout_seconds));

    // Lease doctor.
    rebuild($('diagnosis'), rep.diagnosis, () => diagnosisBadge(rep.diagnosis));
    // Each finding on its own, with the leases it rests on; the advice
    // text alone when the doctor names nothing.
    const findings = rep.findings || [];
    // The findings, and the figures beside them, are of one period: the
    // window, or since the server started when the window saw no lease.
    const sinceStart = rep.period === 'since_start';
    $('advice').hidden = findings.length > 0;
    setText($('advice'), rep.advice);
    rebuild($('findings'), JSON.stringify(findings), () => findings.map((f) => el('li', { class: 'finding', 'data-kind': f.kind },
      el('div', { class: 'finding-head' }, diagnosisBadge(f.kind), el('span', { class: 'hint', text: 'on ' + plural(f.leases, 'lease') })),
      el('p', { class: 'evidence', text: f.evidence }),
      // When the latest event the finding rests on happened: it stays
      // while that is in the period judged, after its cause may have stopped.
      f.last_seen ? el('p', { class: 'last-seen hint', text: f.last_seen }) : null,
      (f.held_leases || []).length ? el('ul', { class: 'hung' }, f.held_leases.map((h) => el('li', null,
        el('a', { href: messageHref(q.name, h.message_id), class: 'mono', text: shortID(h.message_id) }),
        [h.running ? ` held ${fmtDuration(h.held_seconds)}` : '',
          // A lease running when the server started: who holds it is not
          // known, and its renewals are counted only since.
          h.leased_before_start ? ', leased before the server started; holder not known' : '',
          `, renewed ${plural(h.renewals, 'time')}${h.leased_before_start ? ' since the server started' : ''}`,
          h.refused_renewals ? `, ${plural(h.refused_renewals, 'renewal')} refused` : '',
          h.running ? `, 12 h ceiling in ${fmtDuration(h.ceiling_in_seconds)}` : ''].join('')))) : null,
      el('p', { class: 'fix', text: f.fix }))));
    setText($('history-note'), rep.history_note || '');
    const rec = rep.recommended_visibility_timeout_seconds;
    // The doctor recommends a timeout only from a p99: longer when leases
    // are too short, shorter when a crash would stall messages for long.
    $('recommend').hidden = leasesOnly || !(rec && rec !== rep.visibility_timeout_seconds);
    setText($('use-recommended'), `Set the visibility timeout to ${fmtDuration(rec)}…`);
    const vt = rep.visibility_timeout_seconds;
    const fig = (label, value, over) => el('div', null, el('dt', { text: label }), el('dd', { class: over ? 'over' : null, text: value }));
    const st = sinceStart ? rep.since_start : rep;
    // The durations are of the leases whose handler's time is known
    // (leases_timed): the deletes that deleted nothing count there, not as
    // completed; a completion whose time is not known counts only as
    // completed.
    const dur = (v) => (st.leases_timed ? fmtDuration(v) : '–');
    const figs = [
      ['Lease p50', dur(st.lease_p50_seconds), vt > 0 && st.lease_p50_seconds > vt],
      ['Lease p99', dur(st.lease_p99_seconds), vt > 0 && st.lease_p99_seconds > vt],
      ['Longest lease', dur(st.lease_max_seconds), vt > 0 && st.lease_max_seconds > vt],
      ['Leases begun', fmtCount(st.leases_started), false],
      ['Leases completed', fmtCount(st.leases_completed), false],
      // Not a failure, nor known to be in time (but on a FIFO queue): said, not marked.
      ['Of those, at a time not known (a delete\'s answer lost, retried after the lease\'s end)', fmtCount(st.leases_completed_time_unknown), false],
      // Shown where known: only a FIFO queue refuses a late delete.
      ...(st.leases_completed_time_unknown_in_time > 0
        ? [['Of those, in time (a FIFO queue refuses a late delete)', fmtCount(st.leases_completed_time_unknown_in_time), false]] : []),
      ['Late deletes refused (their messages run again)', fmtCount(st.late_deletes_refused), st.late_deletes_refused > 0],
      ['Deletes of messages already deleted (they deleted nothing)', fmtCount(st.deletes_already_deleted), st.deletes_already_deleted > 0],
      ['Leases lapsed', fmtCount(st.expired_leases), st.expired_leases > 0],
      ['Late deletes and visibility changes', fmtCount(st.late_completions), st.late_completions > 0],
      ['Leases completed late', fmtCount(st.late_leases), st.late_leases > 0],
      ['Duplicate executions', fmtCount(st.confirmed_duplicates), st.confirmed_duplicates > 0],
      ['Renewals per lease', (Math.round(st.renewals_per_lease * 100) / 100).toString(), false],
    ];
    rebuild($('figures'), JSON.stringify(figs), () => figs.map((f) => fig(...f)));
    setText($('figures-period'), sinceStart
      ? `Since the server started at ${fmtStamp(rep.history_since)}: the last ${rep.window_minutes} minutes saw no lease. A lease begun earlier can end or lapse in the period, so completed and lapsed leases may outnumber those begun.`
      : `In the last ${rep.window_minutes} minutes, the period the findings are judged on. A lease begun earlier can end or lapse in it, so completed and lapsed leases may outnumber those begun; one lapsed lease can see several late deletes and visibility changes.`);

    // Leases in flight, with a countdown each.
    const leases = d.active_leases.leases || [];
    setText($('leases-count'), leases.length ? fmtCount(leases.length) : '');
    $('leases-empty').hidden = leases.length > 0;
    const more = $('leases-more');
    more.hidden = q.in_flight <= leases.length || leases.length < 50;
    setText(more, `Showing the ${leases.length} leases closest to their deadline of ${fmtCount(q.in_flight)} in flight.`);
    const held = new Map(findings.flatMap((f) => (f.held_leases || []).map((h) => [h.message_id + '/' + h.lease, HELD[f.kind]])));
    keyed($('leases'), leases, (l) => l.message_id + '/' + l.lease, createLease, (li, l) => updateLease(li, l, now, held.get(l.message_id + '/' + l.lease)));

    // Histogram and activity.
    setText($('hist-caption'), drawHistogram($('histogram'), d.histogram));
    drawActivity($('activity'), q.activity || []);

    // Late completions.
    const late = d.late_completions || [];
    $('late').hidden = late.length === 0;
    $('late-empty').hidden = late.length > 0;
    keyed($('late').querySelector('tbody'), late, (l) => l.message_id + '/' + l.at + '/' + l.kind, createLate, () => {});

    // Redrive: for a dead-letter queue.
    const isDLQ = q.dead_letter_sources.length > 0;
    const tasks = d.move_tasks || [];
    $('redrive').hidden = leasesOnly || !isDLQ && tasks.length === 0;
    setText($('redrive-sources'), isDLQ
      ? `Move this dead-letter queue's ${plural(q.visible, 'visible message')} back to where they came from (${q.dead_letter_sources.join(', ')}) or to another queue.`
      : 'No queue uses this one as its dead-letter queue any more.');
    const dest = $('redrive-dest');
    const destSig = JSON.stringify(q.dead_letter_sources);
    if (dest._sig !== destSig) {
      dest._sig = destSig;
      const keep = dest.value;
      dest.replaceChildren(el('option', { value: '', text: "Each message's source queue" }),
        ...q.dead_letter_sources.map((s) => el('option', { value: s, text: s })));
      dest.value = q.dead_letter_sources.includes(keep) ? keep : '';
    }
    const running = tasks.some((t) => t.status === 'RUNNING' || t.status === 'CANCELLING');
    hold($('redrive-button'), running);
    $('tasks').hidden = tasks.length === 0;
    keyed($('tasks').querySelector('tbody'), tasks, (t) => t.task_handle, createTask, updateTask);

    // Attributes: a field follows the server until the operator edits it
    // (being focused, by Tab say, is no edit).
    for (const f of fields) {
      const v = d.attributes[f.name] ?? '';
      if (f.dataset.edited !== 'true' && f.value !== v) f.value = v;
      f.dataset.server = v;
      f.classList.toggle('dirty', f.value !== v);
    }
    const ro = [
      ['Queue ARN', d.attributes.QueueArn],
      ['Created', d.attributes.CreatedTimestamp ? fmtStamp(Number(d.attributes.CreatedTimestamp) * 1000) : '–'],
      ['Last modified', d.attributes.LastModifiedTimestamp ? fmtStamp(Number(d.attributes.LastModifiedTimestamp) * 1000) : '–'],
    ];
    rebuild($('readonly'), JSON.stringify(ro), () => ro.map(([k, v]) => [el('dt', { text: k }), el('dd', { text: v || '–' })]));
  }

  function createLease(l) {
    const li = el('li', { class: 'lease' });
    li._c = {
      msg: el('a', { class: 'msg', href: messageHref(queueName, l.message_id), title: l.message_id, text: l.message_id }),
      who: el('div', { class: 'who' }),
      left: el('div', { class: 'left' }),
      fill: el('span'),
    };
    li._c.bar = el('div', { class: 'bar', role: 'progressbar', 'aria-valuemin': 0, 'aria-label': 'Lease time left' }, li._c.fill);
    li.append(el('div', null, li._c.msg, li._c.who), li._c.left, li._c.bar);
    return li;
  }

  // updateLease shows a lease in flight; mark says what a finding names it
  // for, if one does.
  function updateLease(li, l, now, mark) {
    const c = li._c;
    li.classList.toggle('hung', !!mark);
    const begin = Date.parse(l.begin), deadline = Date.parse(l.deadline);
    const span = Math.max(1, deadline - begin), left = Math.max(0, deadline - now);
    const frac = Math.min(1, left / span);
    const low = frac < 0.2;
    li.classList.toggle('low', low);
    c.bar.classList.toggle('low', low);
    c.fill.style.width = (frac * 100).toFixed(2) + '%';
    c.bar.setAttribute('aria-valuemax', Math.round(span / 1000));
    c.bar.setAttribute('aria-valuenow', Math.round(left / 1000));
    c.bar.setAttribute('aria-valuetext', fmtDuration(left / 1000) + ' left of ' + fmtDuration(span / 1000));
    setText(c.left, fmtDuration(Math.ceil(left / 1000)) + ' left');
    // A lease running when the server started: who holds it is not known,
    // nor whether it was renewed before then.
    const before = !!l.leased_before_start;
    setText(c.who, [mark || null, `lease ${l.lease}`, before ? 'leased before the server started; holder not known' : null,
      l.renewals ? plural(l.renewals, 'renewal') + (before ? ' since the server started' : '') : null,
      `held ${fmtDuration(Math.floor((now - begin) / 1000))} of ${fmtDuration(span / 1000)}`, l.receiver].filter(Boolean).join(' · '));
  }

  function createLate(l) {
    return el('tr', { class: 'late-row' },
      el('td', { 'data-label': 'Time (UTC)', text: fmtClock(l.at) }),
      el('td', { 'data-label': 'Message' }, el('a', { class: 'mono', href: messageHref(queueName, l.message_id), title: l.message_id, text: shortID(l.message_id) })),
      el('td', { 'data-label': 'What' }, el('span', null, l.kind === 'late-delete' ? 'Delete ' : 'Visibility change ',
        l.duplicate ? el('span', { class: 'badge bad', text: 'duplicate', title: 'The message had been given to another receiver meanwhile' }) : null,
        deletedNothing(l) ? el('span', { class: 'badge warn', text: l.refused ? 'refused' : 'already deleted', title: deletedNothing(l) }) : null)),
      el('td', { class: 'num', 'data-label': 'Lease', text: l.lease }),
      el('td', { class: 'num', 'data-label': 'Late by', text: fmtDuration(l.late_seconds) }),
      el('td', { 'data-label': 'Receiver', text: l.receiver || '–', title: l.user_agent || null }));
  }

  function createTask(t) {
    const tr = el('tr');
    tr._c = {
      status: el('td', { 'data-label': 'Status' }),
      moved: el('td', { class: 'num', 'data-label': 'Moved' }),
      started: el('td', { 'data-label': 'Started (UTC)', text: fmtClock(t.started_at) }),
      to: el('td', { 'data-label': 'To', text: t.destination_queue || 'source queues' }),
      action: el('td', { 'data-label': 'Action' }),
    };
    tr._c.cancel = el('button', { type: 'button', class: 'btn small danger', text: 'Cancel' });
    tr._c.cancel.addEventListener('click', () => busy(tr._c.cancel, async () => {
      try {
        await api('POST', '/queues/' + encodeURIComponent(queueName) + '/move-tasks/cancel', { task_handle: t.task_handle });
        showResult($('redrive-result'), true, 'Redrive cancelled.');
      } catch (err) {
        showResult($('redrive-result'), false, errorKids(err));
      }
    }));
    tr.append(...Object.values(tr._c).filter((n) => n.tagName === 'TD'));
    return tr;
  }

  function updateTask(tr, t) {
    const c = tr._c;
    const cls = { RUNNING: 'info', COMPLETED: 'ok', CANCELLING: 'warn', CANCELLED: 'plain', FAILED: 'bad' }[t.status] || 'plain';
    rebuild(c.status, t.status + t.failure_reason, () => el('div', null, el('span', { class: 'badge ' + cls, text: t.status.toLowerCase() }),
      t.failure_reason ? el('div', { class: 'hint', text: t.failure_reason }) : null));
    setText(c.moved, `${fmtCount(t.moved)} of ${fmtCount(t.to_move)}`);
    const canCancel = t.status === 'RUNNING';
    if (canCancel && !c.action.contains(c.cancel)) c.action.append(c.cancel);
    if (!canCancel && c.action.contains(c.cancel)) {
      const hadFocus = document.activeElement === c.cancel;
      c.cancel.remove();
      if (hadFocus) $('redrive-button').focus();
    }
  }

  // ---- Message page ----

  function messagePage() {
    const path = '/queues/' + encodeURIComponent(queueName) + '/messages/' + encodeURIComponent(messageId);
    let last = null;
    live(path, (d) => { last = d; renderMessage(d); }, (f) => {
      setText($('story'), (f.code ? f.code + ': ' : '') + (f.error || 'The message could not be loaded.'));
    });
    addEventListener('resize', debounce(() => { if (last) renderMessage(last, true); }, 150));
  }

  // leasesOf folds a message's events into its leases.
  function leasesOf(events) {
    const byEpoch = new Map();
    const get = (n) => {
      let l = byEpoch.get(n);
      if (!l) {
        l = { epoch: n, begin: null, deadline: null, firstDeadline: null, renewals: [], end: null, late: [], receiveCount: 0, receiver: '', deadLetter: null };
        byEpoch.set(n, l);
      }
      return l;
    };
    for (const ev of events) {
      const t = Date.parse(ev.at);
      const l = get(ev.lease);
      switch (ev.kind) {
        case 'receive':
          l.begin = t;
          l.deadline = l.firstDeadline = ev.deadline ? Date.parse(ev.deadline) : t;
          l.receiveCount = ev.receive_count || 0;
          l.receiver = ev.receiver || '';
          break;
        case 'renew':
          l.renewals.push(t);
          if (ev.deadline) l.deadline = Date.parse(ev.deadline);
          break;
        case 'release': case 'expire': case 'delete': case 'removed':
          l.end = { kind: ev.kind, at: t };
          break;
        case 'late-delete': case 'late-change':
          l.late.push({ kind: ev.kind, at: t, lateSeconds: ev.late_seconds, duplicate: ev.duplicate, nothing: deletedNothing(ev) });
          break;
        case 'dead-letter':
          l.deadLetter = t;
          break;
      }
    }
    return Array.from(byEpoch.values()).sort((a, b) => a.epoch - b.epoch);
  }

  // What a delete that deleted nothing met: '' for one that deleted.
  function deletedNothing(e) {
    if (e.refused) return 'refused (FIFO): the message was not deleted and runs again';
    if (e.already_deleted) return 'the message was already deleted: it deleted nothing';
    return '';
  }

  function story(events, leases) {
    const count = (k) => events.filter((e) => e.kind === k).length;
    const receives = count('receive'), expiries = count('expire'), renewals = count('renew'), deletes = count('delete');
    const late = events.filter((e) => e.kind === 'late-delete' || e.kind === 'late-change');
    const parts = [plural(receives, 'receive')];
    if (renewals) parts.push(plural(renewals, 'renewal'));
    if (expiries) parts.push(plural(expiries, 'lease expiry', 'lease expiries'));
    if (deletes) parts.push(plural(deletes, 'delete'));
    if (late.length) parts.push(plural(late.length, 'late completion'));
    if (count('dead-letter')) parts.push('moved to the dead-letter queue');
    let s = parts.join(', ') + '.';
    for (const e of late) {
      const nothing = deletedNothing(e);
      s += ` Lease ${e.lease}'s holder ${e.kind !== 'late-delete' ? 'changed its visibility' : nothing ? 'tried to delete the message' : 'deleted the message'} ` +
        `${fmtDuration(e.late_seconds)} after that lease had expired` +
        (e.duplicate ? ', when the message had already been given to another receiver: a duplicate execution' : '') +
        (nothing ? `; ${nothing}.` : '.');
    }
    if (!late.length && !expiries && deletes && leases.length) s += ' Every lease ended in time.';
    return s;
  }

  function renderMessage(d, resized) {
    const events = d.events || [];
    const box = $('timeline');
    if (!d.found) {
      setText($('story'), 'The server remembers no lease event of this message yet: the history starts at its first receive. ' +
        'It lives in the server\'s memory, so it also starts empty when the server restarts.');
      box.replaceChildren();
      $('events').hidden = true;
      return;
    }
    const leases = leasesOf(events);
    setText($('story'), story(events, leases));
    drawTimeline(box, d, leases, events);
    if (resized) return;
    $('events').hidden = false;
    const tbody = $('events').querySelector('tbody');
    const t0 = Math.min(...events.map((e) => Date.parse(e.at)));
    rebuild(tbody, JSON.stringify(events), () => events.map((e) => eventRow(e, t0)));
  }

  const EVENT_NAMES = {
    'receive': ['Receive', 'info'], 'renew': ['Renewal', 'plain'], 'release': ['Release', 'plain'],
    'expire': ['Lease expired', 'warn'], 'delete': ['Delete', 'ok'], 'late-delete': ['Late delete', 'bad'],
    'late-change': ['Late visibility change', 'bad'], 'dead-letter': ['Dead-lettered', 'violet'],
    'removed': ['Deleted under the lease', 'warn'],
  };

  function eventRow(e, t0) {
    const at = Date.parse(e.at);
    const [name, cls] = EVENT_NAMES[e.kind] || [e.kind, 'plain'];
    const rel = (t) => 't=' + fmtDuration((t - t0) / 1000);
    let detail = [];
    switch (e.kind) {
      case 'receive':
        detail = [`receive #${e.receive_count}, lease until ${rel(Date.parse(e.deadline))}`];
        break;
      case 'renew':
        detail = [`lease extended to ${rel(Date.parse(e.deadline))}`];
        break;
      case 'expire':
        detail = ['no delete before the deadline: the message is visible again'];
        break;
      case 'delete':
        if (e.store_failed_at) {
          // Its first attempt came in time; the store failed it, and the lease lapsed.
          detail = [`first tried ${rel(Date.parse(e.store_failed_at))}, within the lease: the store failed it (503), so the lease lapsed; ` +
            (e.refused ? 'this retry was refused (FIFO): the message runs again' : 'this retry deleted the message')];
          break;
        }
        detail = [e.already_deleted ? 'the message was already deleted: it deleted nothing' : 'deleted with the current lease'];
        break;
      case 'release':
        detail = ['visibility set to 0: the message is visible again'];
        break;
      case 'late-delete': case 'late-change':
        detail = [el('strong', { text: `late by ${fmtDuration(e.late_seconds)}` }), ` with lease ${e.lease}'s receipt`,
          e.duplicate ? ', after the message had been redelivered: a duplicate execution' : '',
          deletedNothing(e) ? `; ${deletedNothing(e)}` : ''];
        break;
      case 'dead-letter':
        detail = [`after ${plural(e.receive_count, 'receive')}`];
        break;
      case 'removed':
        detail = [`an earlier holder's late delete removed the message while lease ${e.lease} held it`];
        break;
    }
    if (e.receiver) detail.push(` · ${e.receiver}`);
    if (e.user_agent) detail.push(el('span', { title: e.user_agent, text: ' · ' + e.user_agent.split(' ')[0] }));
    return el('tr', { class: e.kind.startsWith('late') ? 'late-row' : null, 'data-kind': e.kind },
      el('td', { 'data-label': 't', text: rel(at) }),
      el('td', { 'data-label': 'Time (UTC)', text: fmtClock(at) }),
      el('td', { 'data-label': 'Event' }, el('span', { class: 'badge ' + cls, text: name })),
      el('td', { class: 'num', 'data-label': 'Lease', text: e.lease }),
      el('td', { class: 'detail', 'data-label': 'Details' }, el('span', null, detail)));
  }

  // drawTimeline draws one lane per lease on a shared time axis: the lease
  // the queue granted (receive to deadline), the part held, renewals, and how
  // it ended; a late completion shows as work past the deadline, in red.
  function drawTimeline(box, d, leases, events) {
    const now = Date.parse(d.now);
    const times = events.map((e) => Date.parse(e.at));
    let t0 = Math.min(...times), t1 = Math.max(...times);
    for (const l of leases) {
      if (l.begin === null) l.begin = t0;
      if (l.deadline === null) l.deadline = l.end ? l.end.at : l.begin;
      if (l.firstDeadline === null) l.firstDeadline = l.deadline;
      const running = !l.end && l.deadline > now && !l.deadLetter;
      l.running = running;
      if (!l.end || l.end.kind === 'expire') t1 = Math.max(t1, l.deadline);
      if (running) t1 = Math.max(t1, now);
    }
    const span = Math.max(1000, t1 - t0);
    const W = width(box, 280);
    const L = 14, R = 14, axisH = 30;
    const laneH = 72;
    const H = axisH + leases.length * laneH + 20;
    const x = (t) => L + (t - t0) / span * (W - L - R);
    const svg = sv('svg', { class: 'timeline', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': $('story').textContent });
    svg.append(sv('defs', null,
      sv('pattern', { id: 'tl-hatch', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
        sv('rect', { class: 'tl-hatch-bg', width: 6, height: 6 }),
        sv('line', { class: 'tl-hatch-line', x1: 0, y1: 0, x2: 0, y2: 6 }))));

    // Axis: seconds from the first event.
    const step = niceStep(span / 1000, Math.max(3, Math.floor((W - L - R) / 70)));
    for (let s = 0; s <= span / 1000 + 1e-9; s += step) {
      const X = x(t0 + s * 1000);
      svg.append(sv('line', { class: 'grid-line', x1: X, x2: X, y1: axisH - 6, y2: H - 16 }),
        sv('text', { x: X, y: axisH - 12, 'text-anchor': s === 0 ? 'start' : 'middle', text: 't=' + fmtTick(s).replace(/^0s$/, '0') }));
    }
    svg.append(sv('line', { class: 'axis-line', x1: L, x2: W - R, y1: axisH - 6, y2: axisH - 6 }));

    const notesFor = [];
    leases.forEach((l, i) => {
      const y = axisH + i * laneH;
      const barY = y + 24, barH = 16;
      const bx = x(l.begin), dx = Math.max(x(l.deadline), bx + 2);
      const lane = sv('g', { class: 'tl-lane', 'data-lease': l.epoch });
      const sub = [l.receiveCount ? `receive #${l.receiveCount}` : null, l.receiver || null].filter(Boolean).join(' · ');
      lane.append(sv('text', { x: L, y: y + 15 },
        sv('tspan', { class: 'tl-lane-label', text: `Lease ${l.epoch}` }),
        sub ? sv('tspan', { class: 'tl-lane-sub', text: '  ' + sub }) : null));
      // The lease the queue granted, and the part of it held.
      lane.append(sv('rect', { class: 'tl-window', x: bx, y: barY, width: dx - bx, height: barH, rx: 2 }));
      let heldEnd = l.deadline;
      if (l.end && l.end.kind !== 'expire') heldEnd = Math.min(l.end.at, l.deadline);
      if (l.running) heldEnd = Math.min(now, l.deadline);
      const hx = Math.max(x(heldEnd), bx + 1);
      lane.append(sv('rect', { class: 'tl-held' + (l.end && l.end.kind === 'expire' ? ' expired' : ''), x: bx, y: barY, width: hx - bx, height: barH, rx: 2 }));
      // Work past the deadline, proven by a late completion.
      for (const lc of l.late) {
        const lx = x(lc.at);
        if (lx > dx) lane.append(sv('rect', { class: 'tl-overrun', x: dx, y: barY, width: lx - dx, height: barH }));
      }
      // Renewals.
      if (l.renewals.length) {
        lane.append(sv('line', { class: 'tl-old-deadline', x1: x(l.firstDeadline), x2: x(l.firstDeadline), y1: barY - 4, y2: barY + barH + 4 }));
        for (const t of l.renewals) lane.append(sv('line', { class: 'tl-renew', x1: x(t), x2: x(t), y1: barY - 4, y2: barY + barH + 4 }, sv('title', { text: 'renewed' })));
      }
      // Markers.
      lane.append(sv('circle', { class: 'tl-receive', cx: bx, cy: barY + barH / 2, r: 5 }, sv('title', { text: `receive #${l.receiveCount}` })));
      const notes = [];
      const mid = barY + barH / 2;
      if (l.end) {
        const ex = x(l.end.at);
        if (l.end.kind === 'delete') {
          lane.append(sv('g', { class: 'tl-marker' },
            sv('circle', { class: 'tl-delete', cx: ex, cy: mid, r: 7 }),
            sv('path', { class: 'tl-check', d: `M${ex - 3.2},${mid + 0.2} l2.2,2.4 l4.2,-4.8` }),
            sv('title', { text: 'deleted' })));
          notes.push({ x: ex, text: `deleted after ${fmtDuration((l.end.at - l.begin) / 1000)}`, cls: 'ok' });
        } else if (l.end.kind === 'expire') {
          lane.append(sv('g', { class: 'tl-marker' },
            sv('path', { class: 'tl-expire-halo', d: `M${ex - 5},${mid - 5} L${ex + 5},${mid + 5} M${ex + 5},${mid - 5} L${ex - 5},${mid + 5}` }),
            sv('path', { class: 'tl-expire', d: `M${ex - 5},${mid - 5} L${ex + 5},${mid + 5} M${ex + 5},${mid - 5} L${ex - 5},${mid + 5}` }),
            sv('title', { text: 'lease expired' })));
          notes.push({ x: ex, text: `expired at t=${fmtDuration((l.end.at - t0) / 1000)}`, cls: 'warn' });
        } else if (l.end.kind === 'release') {
          lane.append(sv('rect', { class: 'tl-release', x: ex - 5, y: mid - 5, width: 10, height: 10 }, sv('title', { text: 'released' })));
          notes.push({ x: ex, text: 'released', cls: '' });
        } else if (l.end.kind === 'removed') {
          lane.append(sv('rect', { class: 'tl-release', x: ex - 5, y: mid - 5, width: 10, height: 10 },
            sv('title', { text: 'the message was deleted under this lease by an earlier holder' })));
          notes.push({ x: ex, text: 'deleted under it', cls: 'warn' });
        }
      } else if (l.running) {
        notes.push({ x: x(now), text: `${fmtDuration(Math.ceil((l.deadline - now) / 1000))} left`, cls: '' });
      }
      for (const lc of l.late) {
        const lx = x(lc.at);
        lane.append(sv('path', { class: 'tl-late', d: `M${lx},${mid - 8} L${lx + 8},${mid} L${lx},${mid + 8} L${lx - 8},${mid} Z` },
          sv('title', { text: `${lc.kind === 'late-delete' ? 'late delete' : 'late visibility change'}, ${fmtDuration(lc.lateSeconds)} after the lease expired` +
            (lc.nothing ? `; ${lc.nothing}` : '') })));
        notes.push({ x: lx, text: `${lc.kind === 'late-delete' ? 'late delete' : 'late change'} +${fmtDuration(lc.lateSeconds)}`, cls: 'bad' });
      }
      if (l.deadLetter !== null) {
        const px = x(l.deadLetter);
        lane.append(sv('path', { class: 'tl-deadletter', d: `M${px - 6},${mid + 6} L${px + 6},${mid + 6} L${px},${mid - 7} Z` }, sv('title', { text: 'moved to the dead-letter queue' })));
        notes.push({ x: px, text: 'dead-lettered', cls: '' });
      }
      // Notes under the bar, on two rows when they would collide.
      const rowsEnd = [-Infinity, -Infinity];
      notes.sort((a, b) => a.x - b.x);
      for (const n of notes) {
        const w = n.text.length * 6.3;
        let left = Math.min(Math.max(n.x - w / 2, L), W - R - w);
        let row = rowsEnd[0] + 8 <= left ? 0 : 1;
        if (row === 1 && rowsEnd[1] + 8 > left) left = rowsEnd[1] + 8;
        rowsEnd[row] = left + w;
        lane.append(sv('text', { class: 'tl-note ' + n.cls, x: left, y: barY + barH + 14 + row * 13, text: n.text }));
      }
      svg.append(lane);
      notesFor.push({ l, barY, barH });
    });

    // Redeliveries: from a lapsed lease's end to the next receive.
    for (let i = 0; i + 1 < notesFor.length; i++) {
      const a = notesFor[i], b = notesFor[i + 1];
      if (!a.l.end || a.l.end.kind !== 'expire') continue;
      const ax = x(a.l.deadline), ay = a.barY + a.barH / 2 + 7;
      const bx = x(b.l.begin), by = b.barY - 1;
      svg.insertBefore(sv('path', { class: 'tl-redeliver', d: `M${ax},${ay} C${ax},${by - 10} ${bx},${ay + 10} ${bx},${by - 4}` },
        sv('title', { text: 'redelivered' })), svg.querySelector('.tl-lane'));
    }

    // Now.
    if (now >= t0 && now <= t0 + span * 1.02) {
      const nx = x(now);
      svg.append(sv('line', { class: 'tl-now', x1: nx, x2: nx, y1: axisH - 6, y2: H - 16 }),
        sv('text', { class: 'tl-now-label', x: nx, y: H - 4, 'text-anchor': nx > W - 24 ? 'end' : nx < L + 24 ? 'start' : 'middle', text: 'now' }));
    }
    box.replaceChildren(svg);
    setText($('timeline-hint'), `t=0 is ${fmtStamp(t0)}. The queue's visibility timeout is ${fmtDuration(d.visibility_timeout_seconds)}.`);
  }

  function debounce(f, ms) {
    let t = null;
    return () => { clearTimeout(t); t = setTimeout(f, ms); };
  }


  // ---- Creating and deleting queues ----

  // createQueueForm runs the queues page's form: a .fifo name makes a FIFO
  // queue, as SQS requires it to be asked for.
  function createQueueForm() {
    const form = $('create-form');
    if (!form) return;
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const name = $('create-name').value.trim();
      const payload = { name };
      const attributes = {};
      if (name.endsWith('.fifo')) attributes.FifoQueue = 'true';
      const vt = $('create-vt').value.trim();
      if (vt !== '') attributes.VisibilityTimeout = vt;
      if (Object.keys(attributes).length) payload.attributes = attributes;
      busy($('create-button'), async () => {
        try {
          const res = await api('POST', '/queues', payload);
          showResult($('create-result'), true, 'Created ', el('a', { href: queueHref(res.name), class: 'mono', text: res.name }), '.');
          $('create-name').value = '';
          $('create-vt').value = '';
        } catch (err) {
          showResult($('create-result'), false, errorKids(err));
          $('create-name').focus();
        }
      });
    });
  }

  // deleteQueueControls runs the queue page's delete, after a confirmation.
  function deleteQueueControls() {
    const dialog = $('delete-queue-dialog'), button = $('delete-queue-button');
    if (!dialog) return;
    button.addEventListener('click', async () => {
      setText($('delete-queue-result'), '');
      if (await ask(dialog, $('delete-queue-cancel')) !== 'delete') {
        button.focus();
        return;
      }
      await busy(button, async () => {
        try {
          await api('POST', '/queues/' + encodeURIComponent(queueName) + '/delete', {});
          showResult($('delete-queue-result'), true, 'Deleted. ', el('a', { href: '/', text: 'Back to the queues' }));
        } catch (err) {
          showResult($('delete-queue-result'), false, errorKids(err));
        }
        button.focus();
      });
    });
  }

  // confirmAction asks, in the page's confirmation dialog, whether to go
  // on with something that cannot be undone.
  async function confirmAction(title, text, ok) {
    setText($('confirm-title'), title);
    setText($('confirm-text'), text);
    setText($('confirm-ok'), ok);
    return await ask($('confirm-dialog'), $('confirm-cancel')) === 'ok';
  }

  // ---- Messages page ----

  const STATES = {
    visible: ['Visible', 'ok'],
    inflight: ['In flight', 'info'],
    delayed: ['Delayed', 'plain'],
  };
  // stateText is a message's state with the time left to its deadline.
  function stateText(m, now) {
    const [text] = STATES[m.state] || [m.state];
    const until = m.lease_deadline || m.visible_at;
    return until ? `${text} · ${fmtDuration((Date.parse(until) - Date.parse(now)) / 1000)} left` : text;
  }
  function preview(m) {
    if (m.body_base64) return 'binary body, ' + fmtCount(Math.floor(m.body.length * 3 / 4)) + ' bytes';
    const oneLine = m.body.replace(/\s+/g, ' ').trim();
    return oneLine.length > 80 ? oneLine.slice(0, 80) + '…' : oneLine;
  }

  // messagesPage lists the queue's messages through the admin API's browse,
  // which leases nothing: a snapshot on demand, not a live view.
  function messagesPage() {
    const s = $('live');
    s.dataset.state = 'off';
    setText(s.querySelector('.live-text'), 'Snapshot');
    const path = '/queues/' + encodeURIComponent(queueName);
    const table = $('browse'), tbody = table.querySelector('tbody');
    let query = null, cursor = '', shown = [], now = null, selected = null;

    function params() {
      const q = new URLSearchParams();
      q.set('order', $('browse-order').value);
      if ($('browse-state').value) q.set('state', $('browse-state').value);
      if ($('browse-contains').value) q.set('contains', $('browse-contains').value);
      q.set('limit', '50');
      return q;
    }
    async function load(more) {
      if (!more) query = params();
      const q = new URLSearchParams(query);
      if (more) q.set('cursor', cursor);
      try {
        const d = await api('GET', path + '/messages?' + q.toString());
        showFailure($('failure'), null);
        now = d.now;
        setText($('asof'), 'Server time ' + fmtStamp(d.now));
        shown = more ? shown.concat(d.messages) : d.messages;
        cursor = d.next_cursor || '';
      } catch (err) {
        showFailure($('failure'), err);
        shown = [];
        cursor = '';
      }
      draw();
      if (selected) {
        const m = shown.find((x) => x.message_id === selected.message_id);
        if (m) showDetail(m, false);
      }
    }
    function draw() {
      table.hidden = shown.length === 0;
      $('browse-empty').hidden = shown.length !== 0 || $('failure').hidden === false;
      $('browse-more').hidden = !cursor;
      setText($('browse-count'), shown.length ? plural(shown.length, 'message') + (cursor ? ', more follow' : '') : '');
      keyed(tbody, shown, (m) => m.message_id, createRow, updateRow);
    }
    function createRow(m) {
      const c = {};
      const tr = el('tr', null,
        el('td', { class: 'name', 'data-label': 'Message' },
          c.open = el('button', { type: 'button', class: 'linkish mono', 'aria-controls': 'detail', text: shortID(m.message_id), title: m.message_id })),
        c.state = el('td', { 'data-label': 'State' }),
        c.receives = el('td', { class: 'num', 'data-label': 'Receives' }),
        c.sent = el('td', { 'data-label': 'Sent' }),
        c.body = el('td', { class: 'body-preview', 'data-label': 'Body' }));
      c.open.addEventListener('click', () => showDetail(tr._m, true));
      tr._c = c;
      return tr;
    }
    function updateRow(tr, m) {
      tr._m = m;
      const c = tr._c;
      const [, cls] = STATES[m.state] || ['', 'plain'];
      rebuild(c.state, m.state + stateText(m, now), () => el('span', { class: 'badge ' + cls, text: stateText(m, now) }));
      setText(c.receives, fmtCount(m.receive_count));
      setText(c.sent, fmtStamp(m.sent_at).replace(' UTC', ''));
      setText(c.body, preview(m));
      c.body.classList.toggle('binary', !!m.body_base64);
      tr.classList.toggle('selected', !!selected && selected.message_id === m.message_id);
    }

    function showDetail(m, focus) {
      selected = m;
      const box = $('detail');
      box.hidden = false;
      setText($('detail-id'), m.message_id);
      $('detail-timeline').href = messageHref(queueName, m.message_id);
      const figs = [['State', stateText(m, now)], ['Receives', fmtCount(m.receive_count)], ['Sent', fmtStamp(m.sent_at)]];
      if (m.lease_deadline) figs.push(['Lease', `${m.lease}, until ${fmtStamp(m.lease_deadline)}`]);
      if (m.visible_at) figs.push(['Visible at', fmtStamp(m.visible_at)]);
      rebuild($('detail-figures'), JSON.stringify(figs), () => figs.map(([k, v]) => el('div', null, el('dt', { text: k }), el('dd', { text: v }))));
      setText($('detail-encoding'), m.body_base64 ? '(not UTF-8: shown in base64)' : '');
      setText($('detail-body'), m.body);
      const attrs = Object.entries(m.message_attributes || {}).sort(([a], [b]) => (a < b ? -1 : 1));
      $('detail-attrs').hidden = attrs.length === 0;
      $('detail-attrs-none').hidden = attrs.length !== 0;
      rebuild($('detail-attrs').querySelector('tbody'), JSON.stringify(attrs), () => attrs.map(([name, a]) =>
        el('tr', null, el('td', { class: 'mono', text: name }), el('td', { text: a.data_type }),
          el('td', { class: 'mono', text: a.binary_value !== undefined ? a.binary_value + ' (base64)' : a.string_value }))));
      const sys = Object.entries(m.attributes || {}).sort(([a], [b]) => (a < b ? -1 : 1));
      rebuild($('detail-system'), JSON.stringify(sys), () => sys.map(([k, v]) => [el('dt', { text: k }), systemAttr(k, v)]));
      $('release-button').hidden = m.state !== 'inflight';
      for (const tr of tbody.children) tr.classList.toggle('selected', tr._m && tr._m.message_id === m.message_id);
      if (focus) {
        setText($('detail-result'), '');
        box.focus();
      }
    }
    // act runs an action on the selected message, then shows the list again.
    async function act(button, what, payload, done) {
      const m = selected;
      await busy(button, async () => {
        try {
          await api('POST', path + '/messages/' + encodeURIComponent(m.message_id) + '/' + what, payload);
          showResult($('detail-result'), true, done);
          await load(false);
          if (!shown.some((x) => x.message_id === m.message_id)) {
            selected = null;
            $('detail').hidden = true;
            showResult($('action-result'), true, `Message ${m.message_id}: ${done}`);
            $('browse-button').focus();
          }
        } catch (err) {
          showResult($('detail-result'), false, errorKids(err));
        }
      });
    }

    $('browse-form').addEventListener('submit', (e) => {
      e.preventDefault();
      busy($('browse-button'), () => load(false));
    });
    $('browse-more').addEventListener('click', () => busy($('browse-more'), () => load(true)));
    $('release-button').addEventListener('click', () =>
      act($('release-button'), 'release', { lease: selected.lease }, 'Released: the message is visible again.'));
    $('move-button').addEventListener('click', async () => {
      const dest = $('move-dest').value.trim();
      if (!dest) {
        showResult($('detail-result'), false, el('strong', { text: 'MissingParameter' }), ' Name the queue to move the message to.');
        $('move-dest').focus();
        return;
      }
      if (await confirmAction(`Move the message to ${dest}?`,
        `Message ${selected.message_id} leaves ${queueName}, whatever its lease, and waits in ${dest} as a new message.`, 'Move message')) {
        await act($('move-button'), 'move', { destination_queue: dest }, `Moved to ${dest}.`);
      } else {
        $('move-button').focus();
      }
    });
    $('delete-button').addEventListener('click', async () => {
      if (await confirmAction('Delete the message?',
        `Message ${selected.message_id} is deleted, even if a consumer holds it. This cannot be undone.`, 'Delete message')) {
        await act($('delete-button'), 'delete', {}, 'Deleted.');
      } else {
        $('delete-button').focus();
      }
    });
    api('GET', '/queues').then((d) => {
      const names = (d.queues || []).map((q) => q.name).filter((n) => n !== queueName);
      $('move-queues').replaceChildren(...names.map((n) => el('option', { value: n })));
    }, () => {});
    load(false);
  }

  // ---- Topics page ----

  // The topics, their subscriptions and counts, and where each recent
  // publish went: delivered to a queue, left out by a filter policy, or
  // failed with the reason.
  function topicsPage() {
    const table = $('topics'), tbody = table.querySelector('tbody');
    const pubs = $('publishes'), pubBody = pubs.querySelector('tbody');
    live('/topics', (d) => {
      const ts = d.topics || [], recent = d.recent || [];
      table.hidden = ts.length === 0;
      $('empty').hidden = ts.length !== 0;
      if (!d.served) setText($('empty'), 'This server keeps no SNS topics: its store does not serve SNS.');
      const subs = ts.reduce((a, t) => a + t.subscriptions.length, 0);
      setText($('summary'), `${plural(ts.length, 'topic')} · ${plural(subs, 'subscription')} · ${plural(recent.length, 'recent publish', 'recent publishes')}`);
      keyed(tbody, ts, (t) => t.arn, createTopicRow, updateTopicRow);
      pubs.hidden = recent.length === 0;
      $('recent-empty').hidden = recent.length !== 0;
      keyed(pubBody, recent, (p) => p.message_id, createPublishRow, () => {});
    }, () => {});
  }

  function createTopicRow(t) {
    const c = {};
    const tr = el('tr', { 'data-topic': t.name },
      el('td', { class: 'name', 'data-label': 'Topic' }, el('a', { class: 'topic-name', href: topicHref(t.name), text: t.name })),
      c.subs = el('td', { class: 'subs', 'data-label': 'Subscriptions' }),
      c.publishes = el('td', { class: 'num count', 'data-label': 'Published' }),
      c.delivered = el('td', { class: 'num count', 'data-label': 'Delivered' }),
      c.filtered = el('td', { class: 'num count', 'data-label': 'Filtered' }),
      c.failed = el('td', { class: 'num count', 'data-label': 'Failed' }));
    tr._c = c;
    return tr;
  }

  function updateTopicRow(tr, t) {
    const c = tr._c;
    for (const [cell, v] of [[c.publishes, t.publishes], [c.delivered, t.delivered], [c.filtered, t.filtered], [c.failed, t.failed]]) {
      setText(cell, fmtCount(v));
      cell.classList.toggle('zero', !v);
    }
    c.failed.classList.toggle('bad-count', t.failed > 0);
    rebuild(c.subs, JSON.stringify(t.subscriptions), () => {
      if (!t.subscriptions.length) return el('span', { class: 'muted', text: 'none' });
      return el('ul', { class: 'sub-list' }, t.subscriptions.map(subscriptionItem));
    });
  }

  // The protocols whose copies are the envelope, or the message alone
  // with RawMessageDelivery; the others' have forms of their own. A
  // pending subscription's attributes cannot be read (it has no ARN yet).
  const RAW_PROTOCOLS = ['sqs', 'http', 'https', 'firehose'];

  // subscriptionItem is a subscription as the topic pages list it.
  function subscriptionItem(s) {
    return el('li', { 'data-endpoint': s.endpoint },
      s.queue ? el('a', { href: queueHref(s.queue), text: s.queue }) : el('span', { class: 'mono', text: s.protocol + ' ' + s.endpoint }),
      RAW_PROTOCOLS.includes(s.protocol) && !s.pending ? [' ', el('span', { class: 'badge plain', text: s.raw ? 'raw' : 'envelope' })] : null,
      s.filter_policy ? [' ', el('span', { class: 'badge info', title: s.filter_policy, text: 'filter' })] : null,
      s.pending ? [' ', el('span', { class: 'badge warn', text: 'pending confirmation' })] : null,
      s.queue_policy ? [' ', el('span', { class: 'badge warn queue-policy', title: s.queue_policy, text: 'queue policy' })] : null);
  }

  const OUTCOMES = { delivered: ['delivered', 'ok'], queued: ['queued for the endpoint', 'info'], filtered: ['filtered out', 'plain'], failed: ['failed', 'bad'], recorded: ['recorded, not sent', 'plain'] };

  function createPublishRow(p) {
    const where = p.outcomes.length ? el('ul', { class: 'outcomes' }, p.outcomes.map((o) => {
      const [text, cls] = OUTCOMES[o.outcome] || [o.outcome, 'plain'];
      const target = o.queue ? el('a', { href: queueHref(o.queue), text: o.queue }) : el('span', { class: 'mono', text: o.endpoint });
      return el('li', { 'data-outcome': o.outcome, 'data-queue': o.queue || '' },
        el('span', { class: 'badge ' + cls, text }), ' ', target,
        o.policy ? el('span', { class: 'muted' }, ' by the policy ', el('code', { text: o.policy })) : null,
        o.reason ? el('span', { class: 'muted', text: ': ' + o.reason }) : null,
        o.warning ? el('div', { class: 'policy-note' }, el('span', { class: 'badge warn', text: 'queue policy' }), ' ', el('span', { class: 'muted', text: o.warning })) : null);
    })) : el('span', { class: 'muted', text: 'no subscription took a copy' });
    const more = p.copies - p.outcomes.length;
    return el('tr', { 'data-message': p.message_id },
      el('td', { class: 'when', 'data-label': 'Time', text: fmtStamp(p.at) }),
      el('td', { 'data-label': 'Topic' }, el('a', { href: topicHref(p.topic), text: p.topic })),
      el('td', { class: 'mono', 'data-label': 'Message' }, el('span', { title: p.message_id, text: shortID(p.message_id) }),
        p.subject ? el('div', { class: 'muted', text: p.subject }) : null,
        p.error ? el('div', { class: 'bad-count', text: 'answered ' + p.error }) : null),
      el('td', { class: 'where', 'data-label': 'Where it went' }, where,
        more > 0 ? el('div', { class: 'muted', text: `and ${plural(more, 'other subscription')}` }) : null));
  }

  // ---- A topic's page, the SMS page: what was recorded, not sent ----

  // topicPage shows a topic's subscriptions and what Baton recorded, not
  // sent, to those of the protocols it does not deliver to.
  function topicPage() {
    const name = body.dataset.topic;
    const record = recordPanel('this topic');
    live('/topics/' + encodeURIComponent(name), (d) => {
      showFailure($('failure'), null);
      if (!d.served) {
        setText($('summary'), 'This server keeps no SNS topics: its store does not serve SNS.');
        return;
      }
      const t = d.topic, subs = t.subscriptions;
      setText($('topic-arn'), t.arn);
      setText($('summary'), `${plural(subs.length, 'subscription')} · ${plural(t.publishes, 'publish', 'publishes')} since the server started`);
      $('subs-empty').hidden = subs.length !== 0;
      rebuild($('subs'), JSON.stringify(subs), () => subs.map(subscriptionItem));
      record.update(d.record, 'topic=' + encodeURIComponent(t.arn), subs);
    }, (err) => showFailure($('failure'), err));
  }

  // smsPage shows the SMS published to phone numbers, not to a topic.
  function smsPage() {
    const record = recordPanel('published to phone numbers');
    live('/sns/record?direct=true', (d) => {
      showFailure($('failure'), null);
      if (!d.served) setText($('record-empty'), 'This server serves no SNS: its store keeps no topics and takes no publish.');
      record.update(d.record, 'direct=true', []);
    }, (err) => showFailure($('failure'), err));
  }

  // recordPanel draws the records a selection of GET
  // /admin/api/sns/deliveries takes, newest first. The live view gives a
  // summary of them; they are read again when it changes. Clear deletes
  // them, after asking.
  function recordPanel(whose) {
    const table = $('record-table'), tbody = table.querySelector('tbody');
    let sel = '', seen = '', subs = [], loads = 0, rows = [], latest = null;
    // load reads the records and draws them. It resolves once the newest
    // read is drawn: a read overtaken by a later one draws nothing and
    // waits for that one, so what follows a load sees the rows drawn.
    function load() {
      const n = ++loads;
      latest = (async () => {
        try {
          const d = await api('GET', '/sns/deliveries?' + sel);
          if (n !== loads) return latest;
          rows = d.deliveries.slice().reverse();
          showFailure($('failure'), null);
        } catch (err) {
          if (n !== loads) return latest;
          showFailure($('failure'), err);
        }
        draw();
      })();
      return latest;
    }
    function draw() {
      table.hidden = rows.length === 0;
      $('record-empty').hidden = rows.length !== 0;
      $('record-clear').hidden = rows.length === 0;
      setText($('record-count'), rows.length ? plural(rows.length, 'copy', 'copies') + ' recorded' : '');
      keyed(tbody, rows, (r) => r.seq, createRecordRow, (tr, r) => updateRecordRow(tr, r, subs));
    }
    $('record-clear').addEventListener('click', async () => {
      const button = $('record-clear');
      const ok = await confirmAction(`Clear the ${plural(rows.length, 'recorded copy', 'recorded copies')}?`,
        `Every copy recorded for ${whose} is deleted from this server's record; a copy recorded meanwhile is deleted with them. This cannot be undone.`, 'Clear');
      if (ok) {
        await busy(button, async () => {
          try {
            const d = await api('DELETE', '/sns/deliveries?' + sel);
            showResult($('record-result'), true, `Cleared ${plural(d.cleared, 'copy', 'copies')}.`);
            await load();
          } catch (err) {
            showResult($('record-result'), false, errorKids(err));
          }
        });
      }
      (button.hidden ? $('record-h') : button).focus();
    });
    return {
      update(rec, selection, subscriptions) {
        setText($('record-max'), fmtCount(rec.max));
        setText($('record-max-bytes'), fmtBytes(rec.max_bytes));
        const dropped = $('record-dropped');
        dropped.hidden = !rec.dropped;
        if (rec.dropped) {
          setText(dropped, `${plural(rec.dropped, 'older copy', 'older copies')} of any topic, phone number or account ` +
            `${rec.dropped === 1 ? 'was' : 'were'} dropped for room since the server started; this server holds ${fmtCount(rec.kept)} of at most ${fmtCount(rec.max)}.`);
        }
        subs = subscriptions;
        const sig = selection + ' ' + rec.selected + ' ' + rec.last;
        if (sig !== seen) {
          sel = selection;
          seen = sig;
          load();
        } else {
          draw(); // a subscription's confirmation may have changed
        }
      },
    };
  }

  function fmtBytes(n) {
    if (n >= 1 << 20 && n % (1 << 20) === 0) return fmtCount(n / (1 << 20)) + ' MiB';
    return plural(n, 'byte');
  }

  // prettyPayload is a payload to read: JSON indented, else as it is.
  function prettyPayload(p) {
    const t = p.trim();
    if (t.startsWith('{') || t.startsWith('[')) {
      try { return { text: JSON.stringify(JSON.parse(t), null, 2), json: true }; } catch (e) { /* not JSON */ }
    }
    return { text: p, json: false };
  }

  // subscribeURL is the link a recorded confirmation carries: the
  // email-json document's SubscribeURL, the last line of the email's text.
  function subscribeURL(r) {
    let u = '';
    if (r.protocol === 'email-json') {
      try { u = JSON.parse(r.payload).SubscribeURL || ''; } catch (e) { /* not JSON */ }
    } else {
      const m = /(\S+)\s*$/.exec(r.payload);
      u = m ? m[1] : '';
    }
    try {
      const url = new URL(u);
      return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : '';
    } catch (e) {
      return '';
    }
  }

  function createRecordRow(r) {
    const c = {};
    const oneLine = r.payload.replace(/\s+/g, ' ').trim();
    const details = el('details', { class: 'payload' },
      el('summary', null, el('span', { class: 'body-preview', text: oneLine.length > 80 ? oneLine.slice(0, 80) + '…' : oneLine || '(empty)' })));
    // The payload is drawn when first opened: a page may hold a thousand.
    details.addEventListener('toggle', () => {
      if (!details.open || details._drawn) return;
      details._drawn = true;
      const p = prettyPayload(r.payload);
      const attrs = Object.entries(r.message_attributes || {}).sort(([a], [b]) => (a < b ? -1 : 1));
      details.append(
        el('p', { class: 'hint' }, p.json ? 'JSON, shown indented.' : 'Text, as recorded.',
          r.raw ? ' Raw message delivery: the message alone.' : null),
        el('pre', { class: 'body-full mono', tabindex: 0, 'aria-label': 'Payload', text: p.text }),
        attrs.length ? el('table', { class: 'table attrs' },
          el('thead', null, el('tr', null, el('th', { scope: 'col', text: 'Attribute' }), el('th', { scope: 'col', text: 'Type' }), el('th', { scope: 'col', text: 'Value' }))),
          el('tbody', null, attrs.map(([name, a]) => el('tr', null, el('td', { class: 'mono', text: name }), el('td', { text: a.data_type }),
            el('td', { class: 'mono', text: a.binary_value !== undefined ? a.binary_value + ' (base64)' : a.string_value }))))) : null,
        el('p', { class: 'hint mono', text: 'Message ' + r.message_id + (r.subscription_arn ? ' · ' + r.subscription_arn : '') }));
    });
    const confirmation = r.type === 'SubscriptionConfirmation';
    const tr = el('tr', { 'data-seq': r.seq, 'data-protocol': r.protocol, 'data-type': r.type },
      el('td', { class: 'when', 'data-label': 'Time', text: fmtStamp(r.at) }),
      el('td', { 'data-label': 'Protocol' }, el('span', { class: 'badge plain', text: r.protocol })),
      el('td', { class: 'mono endpoint', 'data-label': 'Endpoint', text: r.endpoint }),
      c.type = el('td', { class: 'type', 'data-label': 'Type' }, confirmation ? 'Subscription confirmation' : 'Notification', c.confirm = el('div', { class: 'confirm' })),
      el('td', { class: 'subject', 'data-label': 'Subject' }, r.subject ? r.subject : el('span', { class: 'muted', text: '–' })),
      el('td', { class: 'payload-cell', 'data-label': 'Payload' }, details));
    tr._c = c;
    tr._url = confirmation ? subscribeURL(r) : '';
    return tr;
  }

  // updateRecordRow marks a confirmation with its subscription's state:
  // pending, with the SubscribeURL to follow, or confirmed.
  function updateRecordRow(tr, r, subs) {
    if (r.type !== 'SubscriptionConfirmation') return;
    const s = subs.find((x) => x.protocol === r.protocol && x.endpoint === r.endpoint);
    const state = !s ? 'gone' : s.pending ? 'pending' : 'confirmed';
    rebuild(tr._c.confirm, state, () => {
      if (state === 'confirmed') return el('span', { class: 'badge ok', text: 'confirmed' });
      if (state === 'gone') return el('span', { class: 'muted', text: 'no such subscription now' });
      return [el('span', { class: 'badge warn', text: 'pending' }), ' ',
        tr._url ? el('a', { class: 'subscribe-url', href: tr._url, target: '_blank', rel: 'noopener noreferrer', title: tr._url, text: 'Confirm subscription' })
          : el('span', { class: 'muted', text: 'no SubscribeURL in the payload' })];
    });
  }

  // ---- Boot ----

  // The page's own links (the header, the breadcrumbs) stay in its region.
  if (REGION) {
    for (const a of document.querySelectorAll('a[href^="/"]')) {
      const href = a.getAttribute('href');
      if (!href.includes('?') && !href.startsWith('/ui/static/')) a.setAttribute('href', inRegion(href));
    }
  }

  if (page === 'queues') {
    queuesPage();
    createQueueForm();
  } else if (page === 'queue') {
    queuePage();
    deleteQueueControls();
  } else if (page === 'messages') messagesPage();
  else if (page === 'message') messagePage();
  else if (page === 'topics') topicsPage();
  else if (page === 'topic') topicPage();
  else if (page === 'sms') smsPage();
  else {
    const s = $('live');
    s.dataset.state = 'off';
    setText(s.querySelector('.live-text'), 'Not live');
  }
})();
