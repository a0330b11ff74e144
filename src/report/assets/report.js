// milo report: draws the page's widgets from the data embedded in #milo-data (no network, no
// libraries), makes every table.sortable sortable by clicking a header, and writes any error it
// meets into #errors, where a reader (and the browser test) sees it.
(function () {
  'use strict';

  var SVGNS = 'http://www.w3.org/2000/svg';
  var errorBox = document.getElementById('errors');

  function showError(text) {
    if (!errorBox) return;
    errorBox.hidden = false;
    errorBox.textContent += text + '\n';
  }
  window.addEventListener('error', function (e) {
    showError('error: ' + e.message + (e.lineno ? ' (line ' + e.lineno + ')' : ''));
  });
  window.addEventListener('unhandledrejection', function (e) {
    showError('unhandled rejection: ' + e.reason);
  });

  // Runs one part of the page; an exception is reported and the other parts still run.
  function guarded(name, f) {
    try {
      f();
    } catch (e) {
      showError(name + ': ' + (e && e.stack ? e.stack : e));
    }
  }

  // ----- DOM helpers -----

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function sv(tag, attrs, children) {
    var node = document.createElementNS(SVGNS, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function setAttrs(node, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === 'text') node.textContent = v;
      else if (k === 'onclick') node.addEventListener('click', v);
      else node.setAttribute(k, v);
    });
  }

  function append(node, children) {
    if (children === null || children === undefined) return;
    (Array.isArray(children) ? children : [children]).forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
  }

  // A native tooltip for an SVG element.
  function tip(node, text) {
    node.appendChild(sv('title', { text: text }));
    return node;
  }

  // ----- numbers -----

  // Significant digits for axis ticks and tooltips (the tables come rounded from milo).
  function sig(x, digits) {
    if (!isFinite(x)) return '—';
    if (x === 0) return '0';
    var rounded = Number(x.toPrecision(digits));
    // Small magnitudes in exponent form (-9.37e-5, not -0.0000937), so a column stays narrow.
    return String(Math.abs(rounded) < 1e-3 ? rounded.toExponential() : rounded);
  }

  // A rounded number whose full value is its title and a click away (see revealOnClick).
  function num(text, full) {
    return el('span', { class: 'num', title: full !== text ? full : null, text: text });
  }

  // Significant digits a number in running text keeps.
  var TEXT_DIGITS = 4;
  // Decimals with a point or an exponent, not part of a name (n0007, s1, r3k0).
  var DECIMAL = /(^|[^\w.])(-?(?:\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+))(?![\w.])/g;

  // Text with every decimal of more than TEXT_DIGITS significant digits (trailing zeros aside)
  // rounded to them (the full value in a num()): an array of strings and spans for append().
  function roundedText(text) {
    var out = [], last = 0, m;
    DECIMAL.lastIndex = 0;
    while ((m = DECIMAL.exec(text)) !== null) {
      var full = m[2], at = m.index + m[1].length;
      var mantissa = full.replace(/^-/, '').replace(/[eE].*$/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
      if (mantissa.length <= TEXT_DIGITS) continue;
      out.push(text.slice(last, at));
      out.push(num(sig(parseFloat(full), TEXT_DIGITS), full));
      last = at + full.length;
    }
    out.push(text.slice(last));
    return out.filter(function (part) { return part !== ''; });
  }

  // A click on a rounded number (class num with its full value as title) shows the full value,
  // a second click the rounded one again.
  function revealOnClick() {
    document.addEventListener('click', function (e) {
      var target = e.target && e.target.closest ? e.target.closest('.num[title]') : null;
      if (!target) return;
      var rounded = target.getAttribute('data-rounded');
      if (rounded === null) {
        target.setAttribute('data-rounded', target.textContent);
        target.textContent = target.getAttribute('title');
        target.classList.add('full');
      } else {
        target.textContent = rounded;
        target.removeAttribute('data-rounded');
        target.classList.remove('full');
      }
    });
  }

  function sci(x) {
    if (!isFinite(x)) return '—';
    if (x === 0) return '0';
    return x.toExponential(2).replace('e+', 'e');
  }

  function duration(seconds) {
    if (!isFinite(seconds)) return '—';
    if (seconds < 90) return sig(seconds, 3) + ' s';
    if (seconds < 5400) return sig(seconds / 60, 3) + ' min';
    return sig(seconds / 3600, 3) + ' h';
  }

  // ----- sortable tables -----

  function sortValue(td) {
    var text = td.getAttribute('data-sort');
    if (text === null) text = td.textContent;
    text = text.trim();
    if (!/^[-+]?(\d|\.\d)/.test(text)) return null;
    var x = parseFloat(text);
    return isFinite(x) ? x : null;
  }

  function makeSortable(table) {
    var headers = table.querySelectorAll('thead th');
    headers.forEach(function (th, column) {
      th.title = 'sort by ' + th.textContent;
      th.addEventListener('click', function () {
        var body = table.tBodies[0];
        if (!body) return;
        var rows = Array.prototype.slice.call(body.rows);
        var cells = rows.map(function (r) { return r.cells[column]; });
        var numeric = cells.every(function (td) {
          if (!td) return true;
          var t = td.textContent.trim();
          return t === '' || t === '—' || sortValue(td) !== null;
        });
        var ascending = !th.classList.contains('sorted-asc');
        headers.forEach(function (h) { h.classList.remove('sorted-asc', 'sorted-desc'); });
        th.classList.add(ascending ? 'sorted-asc' : 'sorted-desc');
        var keyed = rows.map(function (row, i) {
          var td = row.cells[column];
          var key = !td ? null : numeric ? sortValue(td) : td.textContent.trim();
          return { row: row, key: key, i: i };
        });
        keyed.sort(function (a, b) {
          // Missing values last either way; ties keep their order.
          if (a.key === null || a.key === '' || a.key === '—') return b.key === null ? a.i - b.i : 1;
          if (b.key === null || b.key === '' || b.key === '—') return -1;
          var c = numeric ? a.key - b.key : String(a.key).localeCompare(String(b.key), undefined, { numeric: true });
          if (c === 0) return a.i - b.i;
          return ascending ? c : -c;
        });
        keyed.forEach(function (k) { body.appendChild(k.row); });
      });
    });
  }

  // ----- charts -----

  var PALETTE = ['#1f5ac8', '#e67800', '#28963c', '#8c3caa', '#14a0aa', '#8c5a28', '#dc3c96', '#646464'];

  function colour(k) {
    return PALETTE[k % PALETTE.length];
  }

  // Round tick steps of 1, 2 or 5 times a power of ten.
  function niceTicks(lo, hi, count) {
    var span = hi - lo;
    if (!(span > 0)) return [lo];
    var raw = span / count;
    var power = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * power; }).find(function (s) { return s >= raw; });
    var ticks = [];
    for (var t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(Math.abs(t) < step * 1e-9 ? 0 : t);
    return ticks;
  }

  // A line chart on a linear x axis and a log (gaps) or linear (values) y axis.
  // opts: {xLabel, yLabel, log, series: [{key, label, colour, dashed, dots, radius, points: [{x,
  // y, tip, node}]}], hlines: [{y, label, colour}], vlines: [{x, label}], onPoint(node)}.
  // Points with y <= 0 on a log axis (a best that ties or beats the reference) go into a band
  // below the axis. Returns {node, setCursor(x), setHidden(key, hidden)}.
  function lineChart(opts) {
    var W = 640, H = 330, L = 70, R = 16, T = 14, B = 46;
    var all = [];
    opts.series.forEach(function (s) { s.points.forEach(function (p) { all.push(p); }); });
    var xs = all.map(function (p) { return p.x; }).concat((opts.vlines || []).map(function (v) { return v.x; }));
    var x0 = Math.min.apply(null, xs.concat([0])), x1 = Math.max.apply(null, xs.concat([0]));
    if (!(x1 > x0)) x1 = x0 + 1;
    var ys = all.map(function (p) { return p.y; }).concat((opts.hlines || []).map(function (h) { return h.y; }));
    ys = ys.filter(function (y) { return y !== null && isFinite(y); });
    var below = opts.log && all.some(function (p) { return p.y !== null && p.y <= 0; });
    var band = below ? 26 : 0;
    var plotBottom = H - B - band;
    var y0, y1, yOf;
    if (opts.log) {
      var positive = ys.filter(function (y) { return y > 0; });
      var lo = positive.length ? Math.floor(Math.log10(Math.min.apply(null, positive))) : -6;
      var hi = positive.length ? Math.ceil(Math.log10(Math.max.apply(null, positive))) : 0;
      if (hi <= lo) hi = lo + 1;
      y0 = lo; y1 = hi;
      yOf = function (y) {
        if (y <= 0) return plotBottom + band / 2 + 4;
        return T + (plotBottom - T) * (1 - (Math.log10(y) - y0) / (y1 - y0));
      };
    } else {
      var ylo = Math.min.apply(null, ys.length ? ys : [0]), yhi = Math.max.apply(null, ys.length ? ys : [1]);
      var pad = yhi > ylo ? 0.05 * (yhi - ylo) : Math.max(Math.abs(ylo) * 0.05, 1e-9);
      y0 = ylo - pad; y1 = yhi + pad;
      yOf = function (y) { return T + (plotBottom - T) * (1 - (y - y0) / (y1 - y0)); };
    }
    var xOf = function (x) { return L + (W - L - R) * (x - x0) / (x1 - x0); };
    var root = sv('svg', { viewBox: '0 0 ' + W + ' ' + H, width: '100%', class: 'chart', role: 'img' });
    // Axes and ticks.
    root.appendChild(sv('line', { x1: L, y1: plotBottom, x2: W - R, y2: plotBottom, stroke: '#333' }));
    root.appendChild(sv('line', { x1: L, y1: T, x2: L, y2: plotBottom, stroke: '#333' }));
    niceTicks(x0, x1, 7).forEach(function (t) {
      var x = xOf(t);
      root.appendChild(sv('line', { x1: x, y1: T, x2: x, y2: plotBottom, stroke: '#eee' }));
      root.appendChild(sv('text', { x: x, y: H - B + 16, 'text-anchor': 'middle', 'font-size': 11, text: sig(t, 4) }));
    });
    if (opts.log) {
      for (var k = y0; k <= y1; k++) {
        var y = yOf(Math.pow(10, k));
        root.appendChild(sv('line', { x1: L, y1: y, x2: W - R, y2: y, stroke: '#e4e4e4' }));
        root.appendChild(sv('text', { x: L - 6, y: y + 4, 'text-anchor': 'end', 'font-size': 11, text: '1e' + k }));
        if (y1 - y0 <= 3 && k < y1) {
          [2, 5].forEach(function (m) {
            var ym = yOf(m * Math.pow(10, k));
            root.appendChild(sv('line', { x1: L, y1: ym, x2: W - R, y2: ym, stroke: '#f3f3f3' }));
            root.appendChild(sv('text', { x: L - 6, y: ym + 4, 'text-anchor': 'end', 'font-size': 9, fill: '#777', text: m + 'e' + k }));
          });
        }
      }
      if (below) {
        root.appendChild(sv('rect', { x: L, y: plotBottom + 2, width: W - L - R, height: band - 4, fill: '#e6f6e9' }));
        root.appendChild(sv('text', { x: L - 6, y: plotBottom + band / 2 + 8, 'text-anchor': 'end', 'font-size': 10, fill: '#116329', text: 'beats #1' }));
      }
    } else {
      niceTicks(y0, y1, 6).forEach(function (t) {
        var y = yOf(t);
        root.appendChild(sv('line', { x1: L, y1: y, x2: W - R, y2: y, stroke: '#eee' }));
        root.appendChild(sv('text', { x: L - 6, y: y + 4, 'text-anchor': 'end', 'font-size': 11, text: sig(t, 6) }));
      });
    }
    root.appendChild(sv('text', { x: (L + W - R) / 2, y: H - 8, 'text-anchor': 'middle', 'font-size': 12, text: opts.xLabel }));
    root.appendChild(sv('text', {
      x: 14, y: (T + plotBottom) / 2, 'text-anchor': 'middle', 'font-size': 12,
      transform: 'rotate(-90 14 ' + (T + plotBottom) / 2 + ')', text: opts.yLabel
    }));
    (opts.hlines || []).forEach(function (h) {
      if (h.y === null || !isFinite(h.y) || (opts.log && h.y <= 0)) return;
      var y = yOf(h.y);
      root.appendChild(tip(sv('line', { x1: L, y1: y, x2: W - R, y2: y, stroke: h.colour, 'stroke-dasharray': '6 4', 'stroke-width': 1.5 }), h.label));
      root.appendChild(sv('text', { x: W - R - 4, y: y - 4, 'text-anchor': 'end', 'font-size': 10, fill: h.colour, text: h.label }));
    });
    (opts.vlines || []).forEach(function (v) {
      var x = xOf(v.x);
      root.appendChild(sv('line', { x1: x, y1: T, x2: x, y2: plotBottom, stroke: '#555', 'stroke-dasharray': '3 3' }));
      root.appendChild(sv('text', { x: x - 4, y: T + 10, 'text-anchor': 'end', 'font-size': 10, fill: '#555', text: v.label }));
    });
    var groups = {};
    opts.series.forEach(function (s) {
      var g = sv('g', { 'data-key': s.key });
      var pts = s.points.filter(function (p) { return p.y !== null && isFinite(p.y); });
      if (!s.dots && pts.length) {
        var d = 'M' + xOf(pts[0].x) + ' ' + yOf(pts[0].y);
        for (var i = 1; i < pts.length; i++) d += ' H' + xOf(pts[i].x) + ' V' + yOf(pts[i].y);
        g.appendChild(tip(sv('path', {
          d: d, fill: 'none', stroke: s.colour, 'stroke-width': s.dashed ? 1.5 : 2,
          'stroke-dasharray': s.dashed ? '6 4' : null, opacity: s.dashed ? 0.75 : 1
        }), s.label));
      }
      pts.forEach(function (p) {
        var c = sv('circle', {
          cx: xOf(p.x), cy: yOf(p.y), r: s.radius || (s.dots ? 3 : 3.5), fill: s.dots ? 'none' : s.colour,
          stroke: s.colour, opacity: s.dots ? 0.55 : 1, style: p.node && opts.onPoint ? 'cursor:pointer' : null
        });
        if (p.tip) tip(c, p.tip);
        if (p.node && opts.onPoint) c.addEventListener('click', function () { opts.onPoint(p.node); });
        g.appendChild(c);
      });
      groups[s.key] = g;
      root.appendChild(g);
    });
    var cursor = sv('line', { x1: 0, y1: T, x2: 0, y2: plotBottom, stroke: '#c82828', 'stroke-width': 1, class: 'hidden' });
    root.appendChild(cursor);
    return {
      node: root,
      setCursor: function (x) {
        if (x === null || !isFinite(x)) { cursor.setAttribute('class', 'hidden'); return; }
        cursor.setAttribute('x1', xOf(x));
        cursor.setAttribute('x2', xOf(x));
        cursor.setAttribute('class', '');
      },
      setHidden: function (key, hidden) {
        if (groups[key]) groups[key].setAttribute('class', hidden ? 'hidden' : '');
      }
    };
  }

  // ----- the run page -----

  function runPage(data) {
    var byId = {};
    data.nodes.forEach(function (n) { byId[n.id] = n; });
    var children = {};
    data.nodes.forEach(function (n) {
      n.parents.forEach(function (p) { (children[p.id] = children[p.id] || []).push(n.id); });
    });
    var gapMode = !!data.arena_first;
    var state = { round: data.rounds, selected: null };
    var lineage = document.getElementById('lineage');
    var charts = [];
    var panel = el('div', { class: 'panel', id: 'panel' });
    var progress = el('div', { id: 'progress' });
    var status = el('span', { class: 'status', id: 'scrub-status' });
    var scrubber = el('input', { type: 'range', id: 'round-scrubber', min: 0, max: data.rounds, value: data.rounds, step: 1 });
    var scrubLabel = el('label', { for: 'round-scrubber', text: 'rounds 0 to ' + data.rounds });

    function gapText(score) {
      if (!score || score.gap === null || score.gap === undefined) return '';
      return score.gap > 0 ? sci(score.gap) + ' behind the arena #1' : 'beats the arena #1 by ' + sci(-score.gap);
    }

    function nodeLink(id) {
      return el('a', { href: '#node=' + id, text: id, onclick: function (e) { e.preventDefault(); select(id, true); } });
    }

    // --- the lineage drawing ---
    var svgNodes = {}, svgEdges = [], svgMoves = [];
    var drawing = null;
    if (lineage) {
      lineage.textContent = '';
      var toolbar = el('div', { class: 'toolbar' }, [scrubLabel, scrubber, status]);
      var legend = el('div', { class: 'legend' }, [
        el('span', null, [legendDot('#1f5ac8', true), ' admitted']),
        el('span', null, [legendDot('#c82828', false), ' rejected']),
        el('span', null, [legendLine('#999', false), ' parent → child']),
        el('span', null, [legendLine('#e67800', true), ' graft']),
        el('span', null, [legendMark('#289640', '◆'), ' orchestrator move']),
        el('span', null, [legendMark('#e67800', 'P'), ' promoted starts'])
      ]);
      drawing = drawLineage();
      var scroll = el('div', { class: 'scroll' }, drawing);
      var left = el('div', null, [toolbar, scroll, legend, progress]);
      lineage.appendChild(el('div', { class: 'lineage-layout' }, [left, panel]));
      showHelp();
    }

    function legendDot(c, filled) {
      var s = sv('svg', { width: 14, height: 14 });
      s.appendChild(sv('circle', { cx: 7, cy: 7, r: 5, fill: filled ? c : '#fff', stroke: c, 'stroke-width': 2 }));
      return s;
    }
    function legendLine(c, dashed) {
      var s = sv('svg', { width: 22, height: 10 });
      s.appendChild(sv('line', { x1: 1, y1: 5, x2: 21, y2: 5, stroke: c, 'stroke-width': 2, 'stroke-dasharray': dashed ? '4 3' : null }));
      return s;
    }
    function legendMark(c, letter) {
      var s = sv('svg', { width: 14, height: 14 });
      s.appendChild(sv('text', { x: 7, y: 11, 'text-anchor': 'middle', 'font-size': 11, fill: c, 'font-weight': 'bold', text: letter }));
      return s;
    }

    function drawLineage() {
      var left = 112, top = 40, stackH = 36, laneMin = 64;
      // Columns fill the box the drawing scrolls in, within reason.
      var room = (lineage.clientWidth || 900) - (lineage.clientWidth > 1000 ? 550 : 20) - left - 30;
      var colW = Math.max(74, Math.min(150, room / (data.rounds + 1)));
      var lanes = data.islands.length || 1;
      var stacks = {}, slot = {};
      data.nodes.forEach(function (n) {
        var key = n.island + ':' + n.round;
        slot[n.id] = stacks[key] || 0;
        stacks[key] = slot[n.id] + 1;
      });
      // Edges along a lane that skip rounds arc above it, higher the more they skip (each
      // span its own height, so arcs from one parent nest instead of overlapping).
      var arcOf = function (span) { return span > 1 ? 11 * (span - 1) : 0; };
      var headroom = {};
      data.nodes.forEach(function (n) {
        n.parents.forEach(function (p) {
          var parent = byId[p.id];
          if (!parent || parent.island !== n.island || slot[p.id] !== slot[n.id]) return;
          headroom[n.island] = Math.max(headroom[n.island] || 0, Math.min(80, 0.75 * arcOf(n.round - parent.round)));
        });
      });
      var laneTop = [], nodeTop = [], y = top;
      for (var i = 0; i < lanes; i++) {
        var most = 1;
        Object.keys(stacks).forEach(function (key) {
          if (+key.split(':')[0] === i) most = Math.max(most, stacks[key]);
        });
        laneTop.push(y);
        nodeTop.push(y + 26 + Math.max(0, (headroom[i] || 0) - 14));
        y = nodeTop[i] + (most - 1) * stackH + 38;
        y = Math.max(y, laneTop[i] + laneMin);
      }
      var height = y + 10;
      var width = left + (data.rounds + 1) * colW + 30;
      var xOf = function (round) { return left + round * colW + colW / 2; };
      var pos = {};
      data.nodes.forEach(function (n) {
        var lane = Math.min(n.island, lanes - 1);
        pos[n.id] = { x: xOf(n.round), y: nodeTop[lane] + slot[n.id] * stackH };
      });
      var root = sv('svg', { width: width, height: height, viewBox: '0 0 ' + width + ' ' + height, id: 'lineage-svg' });
      var defs = sv('defs');
      var marker = sv('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
      marker.appendChild(sv('path', { d: 'M0 0 L10 5 L0 10 z', fill: '#e67800' }));
      defs.appendChild(marker);
      root.appendChild(defs);
      // Lanes and round columns.
      for (var lane = 0; lane < lanes; lane++) {
        var laneH = (lane + 1 < lanes ? laneTop[lane + 1] : height - 10) - laneTop[lane];
        root.appendChild(sv('rect', { x: 0, y: laneTop[lane], width: width, height: laneH, fill: lane % 2 ? '#f6f7fa' : '#ffffff' }));
        var island = data.islands[lane] || { id: lane, mutator: '' };
        root.appendChild(sv('text', { x: 8, y: laneTop[lane] + 22, 'font-size': 13, 'font-weight': 600, text: 'island ' + island.id }));
        if (island.mutator) root.appendChild(sv('text', { x: 8, y: laneTop[lane] + 38, 'font-size': 11, fill: '#555', text: island.mutator + ' now' }));
      }
      var every = Math.max(1, Math.ceil(36 / colW));
      for (var r = 0; r <= data.rounds; r++) {
        if (r % every) continue;
        root.appendChild(sv('text', { x: xOf(r), y: 14, 'text-anchor': 'middle', 'font-size': 11, fill: '#444', text: r === 0 ? 'seeds' : 'round ' + r }));
        root.appendChild(sv('line', { x1: xOf(r), y1: top - 8, x2: xOf(r), y2: height - 10, stroke: '#ececec' }));
      }
      // Edges under the nodes.
      var edgeLayer = sv('g');
      root.appendChild(edgeLayer);
      data.nodes.forEach(function (n) {
        n.parents.forEach(function (p) {
          var a = pos[p.id], b = pos[n.id];
          if (!a || !b) return;
          var dx = Math.max(18, (b.x - a.x) / 2);
          var bow = Math.abs(a.y - b.y) < 1 ? -Math.min(80 / 0.75, arcOf(Math.round((b.x - a.x) / colW))) : 0;
          var d = 'M' + a.x + ' ' + a.y + ' C' + (a.x + dx) + ' ' + (a.y + bow) + ' ' + (b.x - dx) + ' ' + (b.y + bow) + ' ' + b.x + ' ' + b.y;
          var path = sv('path', {
            d: d, fill: 'none', stroke: p.graft ? '#e67800' : '#9a9a9a', 'stroke-width': p.graft ? 2 : 1.4,
            'stroke-dasharray': p.graft ? '5 3' : null, 'marker-end': p.graft ? 'url(#arrow)' : null
          });
          tip(path, (p.graft ? 'graft: ' : '') + p.id + ' → ' + n.id);
          edgeLayer.appendChild(path);
          svgEdges.push({ node: path, from: p.id, to: n.id, round: n.round });
        });
      });
      // Moves: diamonds in their islands' lanes after their round; promotions as P on top.
      var stacked = {};
      var promotions = {};
      data.moves.forEach(function (m, k) {
        if (m.kind === 'promote') {
          (promotions[m.round] = promotions[m.round] || []).push(k);
          return;
        }
        var lanesOf = m.islands.length ? m.islands : [null];
        lanesOf.forEach(function (island) {
          var x = xOf(m.round) + colW / 2;
          var key = island + ':' + m.round;
          var k2 = stacked[key] || 0;
          stacked[key] = k2 + 1;
          var yy = island === null ? top - 6 : laneTop[Math.min(island, lanes - 1)] + 14 + k2 * 16;
          var g = sv('g', { class: 'move', 'data-round': m.round });
          g.appendChild(sv('path', { d: 'M' + x + ' ' + (yy - 7) + ' L' + (x + 7) + ' ' + yy + ' L' + x + ' ' + (yy + 7) + ' L' + (x - 7) + ' ' + yy + ' z', fill: '#289640' }));
          g.appendChild(sv('text', { x: x, y: yy + 3.5, 'text-anchor': 'middle', 'font-size': 9, fill: '#fff', 'font-weight': 'bold', text: m.kind.charAt(0).toUpperCase() }));
          tip(g, m.kind + ' after round ' + m.round + ': ' + m.diagnosis);
          g.addEventListener('click', function () { showMoves([k]); });
          root.appendChild(g);
          svgMoves.push({ node: g, round: m.round });
        });
      });
      Object.keys(promotions).forEach(function (round) {
        var ks = promotions[round];
        var x = xOf(+round) + colW / 2;
        var g = sv('g', { class: 'move', 'data-round': round });
        g.appendChild(sv('circle', { cx: x, cy: top - 14, r: 8, fill: '#fff', stroke: '#e67800', 'stroke-width': 1.5 }));
        g.appendChild(sv('text', { x: x, y: top - 10.5, 'text-anchor': 'middle', 'font-size': 10, fill: '#e67800', 'font-weight': 'bold', text: 'P' }));
        if (ks.length > 1) g.appendChild(sv('text', { x: x + 10, y: top - 16, 'font-size': 9, fill: '#e67800', text: String(ks.length) }));
        tip(g, ks.length + ' promoted start' + (ks.length > 1 ? 's' : '') + ' after round ' + round);
        g.addEventListener('click', function () { showMoves(ks); });
        root.appendChild(g);
        svgMoves.push({ node: g, round: +round });
      });
      // LLM orchestrator consultations: an L left of the round's promotions (red when a
      // proposal was refused).
      (data.consultations || []).forEach(function (c) {
        var x = xOf(c.round) + colW / 2 - 20;
        var colour = c.rejected.length ? '#c82828' : '#6a3fb5';
        var g = sv('g', { class: 'move consultation', 'data-round': c.round });
        g.appendChild(sv('circle', { cx: x, cy: top - 14, r: 8, fill: '#fff', stroke: colour, 'stroke-width': 1.5 }));
        g.appendChild(sv('text', { x: x, y: top - 10.5, 'text-anchor': 'middle', 'font-size': 10, fill: colour, 'font-weight': 'bold', text: 'L' }));
        tip(g, 'orchestrator ' + c.orchestrator + ' after round ' + c.round + ': ' + c.usage +
          (c.rejected.length ? '\n' + c.rejected.length + ' refused proposal(s)' : ''));
        g.addEventListener('click', function () { showConsultation(c); });
        root.appendChild(g);
        svgMoves.push({ node: g, round: c.round });
      });
      // Nodes.
      data.nodes.forEach(function (n) {
        var p = pos[n.id];
        var g = sv('g', { class: 'node', 'data-id': n.id, 'data-round': n.round, tabindex: 0 });
        g.appendChild(sv('circle', {
          cx: p.x, cy: p.y, r: 9, fill: n.admitted ? '#1f5ac8' : '#fff',
          stroke: n.admitted ? '#1f5ac8' : '#c82828', 'stroke-width': 2
        }));
        g.appendChild(sv('text', { x: p.x, y: p.y + 21, 'text-anchor': 'middle', 'font-size': 10, fill: '#333', text: n.id }));
        var lines = [n.id + ' — island ' + n.island + ', round ' + n.round + ', ' + n.mutator,
          (n.admitted ? 'admitted' : 'rejected') + ' · quality ' + n.fitness_text[0]];
        if (n.best) lines.push('best ' + n.best.text + (n.best.gap !== null ? ' (' + gapText(n.best) + ')' : ''));
        tip(g, lines.join('\n'));
        g.addEventListener('click', function () { select(n.id, false); });
        g.addEventListener('keydown', function (e) { if (e.key === 'Enter') select(n.id, false); });
        root.appendChild(g);
        svgNodes[n.id] = g;
      });
      return root;
    }

    // --- the side panel ---
    function showHelp() {
      panel.textContent = '';
      append(panel, [
        el('h3', { text: 'Click a node' }),
        el('p', { text: 'Its score, verdict and reason, its harness diff and its program diff against its parent, the evidence its mutator read, its per-task gains and the programs it ran show here. Numbers are rounded; click one for its full value.' })
      ]);
    }

    function showMoves(indices) {
      panel.textContent = '';
      var rounds = {};
      indices.forEach(function (k) {
        var m = data.moves[k];
        rounds[m.round] = true;
        append(panel, [
          el('h3', { text: m.kind + ' after round ' + m.round }),
          el('p', { text: m.islands.length ? 'islands ' + m.islands.join(', ') : 'all islands' }),
          el('p', { class: 'move-diagnosis', text: m.diagnosis }),
          m.node ? el('p', null, ['node ', nodeLink(m.node)]) : null
        ]);
      });
      (data.consultations || []).forEach(function (c) {
        if (rounds[c.round] && indices.every(function (k) { return data.moves[k].kind !== 'promote'; })) consultationBlock(c);
      });
    }

    function consultationBlock(c) {
      append(panel, [
        el('h4', { text: 'Orchestrator ' + c.orchestrator + ' after round ' + c.round }),
        el('p', { class: 'consultation-usage', text: c.usage }),
        c.rejected.length ? el('h4', { text: 'Refused proposals' }) : null,
        c.rejected.length ? el('ul', { class: 'rejected-proposals' }, c.rejected.map(function (r) { return el('li', { text: r }); })) : null
      ]);
    }

    function showConsultation(c) {
      panel.textContent = '';
      consultationBlock(c);
      data.moves.forEach(function (m) {
        if (m.round !== c.round || m.kind === 'promote') return;
        append(panel, [
          el('h4', { text: m.kind + ' (' + (m.islands.length ? 'islands ' + m.islands.join(', ') : 'all islands') + ')' }),
          el('p', { class: 'move-diagnosis', text: m.diagnosis })
        ]);
      });
    }

    function factsTable(rows) {
      var t = el('table', { class: 'facts' });
      var body = el('tbody');
      rows.forEach(function (r) {
        if (!r) return;
        var td = el('td', r[2] ? { title: r[2], class: 'num' } : null, r[1]);
        body.appendChild(el('tr', null, [el('td', { text: r[0] }), td]));
      });
      t.appendChild(body);
      return el('div', { class: 'table-wrap' }, t);
    }

    // A unified diff, its added and removed lines coloured.
    function diffBlock(edit, attrs) {
      var pre = el('pre', attrs);
      var lines = edit.split('\n');
      if (lines.length && lines[lines.length - 1] === '') lines.pop();
      lines.forEach(function (line) {
        var cls = /^(\+\+\+|---) /.test(line) || line.indexOf('@@') === 0 ? 'hunk'
          : line.charAt(0) === '+' ? 'add' : line.charAt(0) === '-' ? 'del' : null;
        pre.appendChild(el('span', { class: cls, text: line + '\n' }));
      });
      return pre;
    }

    function showNode(n) {
      panel.textContent = '';
      var kids = children[n.id] || [];
      var parents = n.parents.length ? [] : ['— (a seed)'];
      n.parents.forEach(function (p, i) {
        if (i) parents.push(', ');
        parents.push(nodeLink(p.id));
        if (p.graft) parents.push(' (graft)');
      });
      var kidLinks = kids.length ? [] : ['—'];
      kids.forEach(function (id, i) { if (i) kidLinks.push(', '); kidLinks.push(nodeLink(id)); });
      append(panel, [
        el('h3', null, [n.id + ' ', el('span', { class: 'badge ' + (n.admitted ? 'admitted' : 'rejected'), text: n.admitted ? 'admitted' : 'rejected' })]),
        el('div', { class: 'status', text: n.name }),
        factsTable([
          ['island, round', 'island ' + n.island + ', round ' + n.round],
          ['mutator', n.mutator],
          n.usage ? ['language-model tokens', n.usage] : null,
          ['parents', parents],
          ['children', kidLinks],
          ['best search score', n.best ? n.best.text : '—', n.best ? n.best.exact : null],
          n.best && n.best.gap !== null ? ['against the arena #1', gapText(n.best), String(n.best.gap)] : null,
          ['best task', n.best_task || '—'],
          ['quality', n.fitness_text[0], String(n.quality)],
          ['cost (' + data.cost_unit + ')', n.fitness_text[1], String(n.cost)],
          ['latency (' + data.cost_unit + ')', n.fitness_text[2], String(n.latency)],
          ['validation quality', n.validation || '— (not validated)'],
          n.seconds !== null ? ['recorded', duration(n.seconds) + ' after the first node'] : null,
          ['harness', n.harness],
          n.reused ? ['evaluation', 'reused from an earlier node'] : null
        ]),
        el('h4', { text: 'Verdict' }),
        el('p', { id: 'verdict', text: n.reason }),
        el('h4', { text: 'Harness diff against its parent' }),
        n.edit ? diffBlock(n.edit, { class: 'diff', id: 'diff' }) : el('p', { class: 'status', text: 'No diff: a seed harness has no parent.' }),
        el('h4', { text: 'Program diff against its parent\'s' }),
        programDiff(n),
        el('h4', { text: 'Evidence its mutator read' }),
        n.evidence.length ? el('ul', { id: 'evidence' }, n.evidence.map(function (e) { return el('li', { text: e }); })) : el('p', { text: '—' }),
        el('h4', { text: 'Per-task gains (units of min_improvement)' }),
        taskTable(n),
        el('h4', { text: 'Programs it ran' }),
        programs(n)
      ]);
    }

    function taskTable(n) {
      var head = el('tr', null, ['task', 'parent gain', 'gain', 'gain − parent', 'start', 'end'].map(function (h) { return el('th', { text: h }); }));
      var body = el('tbody');
      n.tasks.forEach(function (t) {
        var delta = t.parent_gain === null ? null : t.gain - t.parent_gain;
        body.appendChild(el('tr', null, [
          el('td', null, [t.task, t.split === 'search' ? null : el('span', { class: 'split', text: ' (' + t.split + ')' })]),
          el('td', t.parent_gain === null ? { text: '—' } : { text: sig(t.parent_gain, 3), 'data-sort': String(t.parent_gain), title: String(t.parent_gain), class: 'num' }),
          el('td', { text: t.gain_text, 'data-sort': String(t.gain), title: String(t.gain), class: 'num' }),
          el('td', delta === null ? { text: '—' } : {
            text: (delta > 0 ? '+' : '') + sig(delta, 3), 'data-sort': String(delta), title: String(delta),
            class: 'num ' + (delta > 0 ? 'gain-up' : delta < 0 ? 'gain-down' : '')
          }),
          el('td', { text: t.start }),
          el('td', { text: t.end, title: t.end_exact, 'data-sort': t.end_exact, class: 'num' })
        ]));
      });
      var table = el('table', { class: 'sortable', id: 'task-gains' }, [el('thead', null, head), body]);
      makeSortable(table);
      return el('div', { class: 'table-wrap' }, table);
    }

    // The node's program diff on one task: a task where its program differs from its
    // parent's, a search task, the most gain, in that order of preference.
    function programDiff(n) {
      var best = null, key = function (t) { return [t.program_diff ? 1 : 0, t.split === 'search' ? 1 : 0, t.gain]; };
      n.tasks.forEach(function (t) {
        if (t.program_diff === null) return;
        var k = key(t);
        if (!best || k[0] > best.k[0] || (k[0] === best.k[0] && (k[1] > best.k[1] || (k[1] === best.k[1] && k[2] > best.k[2])))) best = { t: t, k: k };
      });
      if (!best) return el('p', { class: 'status', id: 'program-diff', text: 'No improving program: its best constructions are its starts.' });
      var t = best.t;
      var note = el('div', { class: 'status', id: 'program-diff-task', 'data-task': t.task, text: 'on ' + t.task + ' (' + t.split + ', gain ' + t.gain_text + '); every task\'s under "Programs it ran"' });
      if (!t.program_diff) return el('div', null, [note, el('p', { id: 'program-diff', text: 'On every task, the same program as its parent\'s.' })]);
      return el('div', null, [note, diffBlock(t.program_diff, { class: 'diff', id: 'program-diff' })]);
    }

    function programs(n) {
      var box = el('div', { id: 'programs' });
      n.tasks.forEach(function (t) {
        if (!t.edits.length && t.program === null) return;
        var items = t.edits.map(function (e) { return el('li', null, roundedText(e)); });
        var program = t.program === null ? el('p', { class: 'status', text: 'no improving program' }) : el('div', null, [
          el('div', { class: 'status', text: 'the program behind its best construction, against its parent\'s:' }),
          t.program_diff ? diffBlock(t.program_diff, { class: 'diff' }) : el('p', { class: 'status', text: 'the same as its parent\'s' }),
          el('details', null, [el('summary', { text: 'the whole program' }), el('pre', { class: 'program', text: data.programs[t.program] || '' })])
        ]);
        box.appendChild(el('details', null, [
          el('summary', { text: t.task + ' (' + t.split + '): ' + t.edits.length + ' program' + (t.edits.length === 1 ? '' : 's') + ', gain ' + t.gain_text }),
          items.length ? el('ul', null, items) : null,
          program
        ]));
      });
      if (!box.childNodes.length) box.appendChild(el('p', { text: '—' }));
      return box;
    }

    // --- selection, scrubbing, the URL hash ---
    function select(id, scroll) {
      var n = byId[id];
      if (!n) return;
      if (state.selected && svgNodes[state.selected]) svgNodes[state.selected].classList.remove('selected');
      state.selected = id;
      if (svgNodes[id]) svgNodes[id].classList.add('selected');
      svgEdges.forEach(function (e) {
        var touches = e.from === id || e.to === id;
        e.node.setAttribute('stroke-width', touches ? 3 : (e.node.getAttribute('stroke') === '#e67800' ? 2 : 1.4));
        e.node.setAttribute('stroke-opacity', touches ? 1 : 0.8);
      });
      if (n.round > state.round) setRound(n.round);
      showNode(n);
      writeHash();
      if (scroll && lineage) lineage.scrollIntoView({ block: 'start' });
    }

    function setRound(round) {
      state.round = Math.max(0, Math.min(data.rounds, round));
      scrubber.value = state.round;
      Object.keys(svgNodes).forEach(function (id) {
        svgNodes[id].classList.toggle('hidden', byId[id].round > state.round);
      });
      svgEdges.forEach(function (e) { e.node.classList.toggle('hidden', e.round > state.round); });
      svgMoves.forEach(function (m) { m.node.classList.toggle('hidden', m.round > state.round); });
      var shown = data.nodes.filter(function (n) { return n.round <= state.round; });
      var admitted = shown.filter(function (n) { return n.admitted; }).length;
      var last = null;
      data.progress.forEach(function (p) { if (p.round <= state.round) last = p; });
      scrubLabel.textContent = 'rounds 0 to ' + state.round;
      status.textContent = shown.length + ' nodes (' + admitted + ' admitted, ' + (shown.length - admitted) + ' rejected)' +
        (last ? '; best so far ' + last.best.text + (gapMode ? ', ' + gapText(last.best) : '') : '');
      charts.forEach(function (c) { c.setCursor(c.cursorFor(state.round)); });
    }

    function writeHash() {
      var parts = [];
      if (state.selected) parts.push('node=' + state.selected);
      if (state.round !== data.rounds) parts.push('round=' + state.round);
      var hash = parts.length ? '#' + parts.join('&') : '';
      if (location.hash !== hash) history.replaceState(null, '', hash || location.pathname + location.search);
    }

    function readHash() {
      var params = {};
      location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
        var i = kv.indexOf('=');
        if (i > 0) params[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
      });
      if (params.round !== undefined && isFinite(+params.round)) setRound(+params.round);
      if (params.node && byId[params.node]) select(params.node, false);
    }

    scrubber.addEventListener('input', function () { setRound(+scrubber.value); writeHash(); });

    // Node ids in the tables open their node.
    document.querySelectorAll('table.sortable td').forEach(function (td) {
      var id = td.textContent.trim();
      if (!byId[id] || td.children.length) return;
      td.textContent = '';
      td.appendChild(nodeLink(id));
    });

    // --- best so far ---
    if (lineage) {
      var yLabel = gapMode ? 'gap to the arena #1 (log)' : 'best score';
      var value = function (p) { return gapMode ? p.best.gap : parseFloat(p.best.exact); };
      var hlines = [];
      if (gapMode) hlines.push({ y: data.record_gap, label: 'suite record ' + data.record.text, colour: '#777' });
      else hlines.push({ y: data.record.value, label: 'suite record ' + data.record.text, colour: '#777' });
      var pointTip = function (p, where) {
        return where + ' · after ' + p.node + ': best ' + p.best.text + ' (' + p.best_node + ')' + (gapMode ? '\n' + gapText(p.best) : '');
      };
      var nodeDots = data.nodes.filter(function (n) { return n.best; }).map(function (n) {
        return {
          x: n.round, y: gapMode ? n.best.gap : parseFloat(n.best.exact), node: n.id,
          tip: n.id + ' (' + (n.admitted ? 'admitted' : 'rejected') + '): best ' + n.best.text
        };
      });
      var byRound = lineChart({
        xLabel: 'round', yLabel: yLabel, log: gapMode, hlines: hlines, onPoint: function (id) { select(id, true); },
        series: [
          { key: 'nodes', label: "each node's best", colour: '#8c3caa', dots: true, points: nodeDots },
          {
            key: 'best', label: 'best so far', colour: '#1f5ac8',
            points: data.progress.map(function (p) { return { x: p.round, y: value(p), node: p.best_node, tip: pointTip(p, 'round ' + p.round) }; })
          }
        ]
      });
      byRound.cursorFor = function (round) { return round; };
      var overTime = lineChart({
        xLabel: data.time_axis + ' (s)', yLabel: yLabel, log: gapMode, hlines: hlines, onPoint: function (id) { select(id, true); },
        series: [{
          key: 'best', label: 'best so far', colour: '#1f5ac8',
          points: data.progress.map(function (p) { return { x: p.time, y: value(p), node: p.best_node, tip: pointTip(p, duration(p.time)) }; })
        }]
      });
      overTime.cursorFor = function (round) {
        var t = null;
        data.progress.forEach(function (p) { if (p.round <= round) t = p.time; });
        return t;
      };
      charts.push(byRound, overTime);
      var last = data.progress.length ? data.progress[data.progress.length - 1] : null;
      var headline = el('p', { class: 'status', id: 'progress-headline' });
      if (!last) headline.textContent = 'No node has a search-task score yet.';
      else if (gapMode) {
        headline.textContent = 'Best ' + last.best.text + ' (node ' + last.best_node + '): ' + gapText(last.best) +
          ' — ' + data.arena_first.label + ': ' + data.arena_first.text + '.';
        if (last.best.gap <= 0) headline.style.color = '#116329';
      } else headline.textContent = 'Best ' + last.best.text + ' (node ' + last.best_node + ').';
      append(progress, [
        el('h3', { text: 'Best so far' }),
        headline,
        el('div', { class: 'chart-row' }, [
          el('div', null, [el('div', { class: 'chart-title', text: 'by round (dots: each node\'s own best; click one to open it)' }), byRound.node]),
          el('div', null, [el('div', { class: 'chart-title', text: 'over time' }), overTime.node])
        ])
      ]);
    }

    setRound(data.rounds);
    readHash();
    window.addEventListener('hashchange', readHash);
  }

  // ----- the benchmark page -----

  function benchPage(data) {
    var box = document.getElementById('bench-curves');
    if (!box) return;
    box.textContent = '';
    var gapMode = !!data.arena_first;
    var series = data.runs.map(function (run) {
      var k = data.methods.indexOf(run.method);
      var label = run.method + ', seed ' + run.seed + ' (' + run.batch + '): best ' + run.best;
      return {
        key: run.method, label: label, colour: colour(k < 0 ? data.methods.length : k), dashed: run.batch === 'rerun', radius: 2,
        points: run.curve.map(function (p) {
          return { x: p.x, y: gapMode ? p.gap : p.value, tip: label + '\n' + sig(p.x, 3) + ' CPU s: ' + sig(p.value, 10) + (gapMode && p.gap !== null ? ' (gap ' + sci(p.gap) + ')' : '') };
        })
      };
    });
    var chart = lineChart({
      xLabel: 'CPU seconds of search tasks', yLabel: gapMode ? 'gap to the arena #1 (log)' : 'best score', log: gapMode,
      series: series, vlines: [{ x: data.budget, label: 'budget ' + sig(data.budget, 4) + ' s' }]
    });
    // One group per run shares its method's key: hide them together.
    var groups = chart.node.querySelectorAll('g[data-key]');
    var legend = el('div', { class: 'legend' });
    data.methods.forEach(function (m, k) {
      var item = el('span', { class: 'toggle', 'data-method': m, title: 'hide or show ' + m }, [legendSwatch(colour(k)), ' ' + m]);
      item.addEventListener('click', function () {
        var off = item.classList.toggle('off');
        groups.forEach(function (g) { if (g.getAttribute('data-key') === m) g.classList.toggle('hidden', off); });
      });
      legend.appendChild(item);
    });
    legend.appendChild(el('span', { text: 'dashed: re-run batch' }));
    append(box, [el('div', { style: 'max-width:980px' }, chart.node), legend]);
  }

  function legendSwatch(c) {
    var s = sv('svg', { width: 22, height: 10 });
    s.appendChild(sv('line', { x1: 1, y1: 5, x2: 21, y2: 5, stroke: c, 'stroke-width': 3 }));
    return s;
  }

  // ----- start -----

  guarded('tables', function () {
    document.querySelectorAll('table.sortable').forEach(makeSortable);
    revealOnClick();
  });
  guarded('data', function () {
    var source = document.getElementById('milo-data');
    var data = source ? JSON.parse(source.textContent) : null;
    if (data && data.kind === 'run') runPage(data);
    else if (data && data.kind === 'bench') benchPage(data);
  });
  var refresh = +document.body.getAttribute('data-refresh');
  if (refresh > 0) setTimeout(function () { location.reload(); }, refresh * 1000);
})();
