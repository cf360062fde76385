#!/usr/bin/env python3
"""The scaling plots in docs/performance.md, made from committed results.

  scripts/plots.py [DIR [OUT]]   read DIR/*.json (default
                                 docs/results/bench: the JSON of
                                 `DLOCK_BENCH_RESULTS=docs/results/bench
                                 make bench`) and write one small SVG per
                                 scaling part of dlock-bench into OUT
                                 (default DIR):
    held-scaling.svg    the uncontended cycle with 1, 100 and 10,000 other
                        locks held (bench/many.c, "held_scaling")
    waiter-scaling.svg  hand-off p50 and client requests per hand-off with
                        1, 20 and 100 waiters (bench/herd.c,
                        "waiter_scaling")
    name-scaling.svg    status, list PREFIX and an acquire with 10, 10,000
                        and 1,000,000 names in the store (bench/names.c,
                        "name_scaling")
  A line per store, log x axis (and log y where the values span decades).
  A flat line is cost that does not grow with the work; a rising one, a
  scan.

SVG written as text: standard library only (scripts/bench.sh runs it
after scripts/tables.py).
"""
import glob
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORDER = ['sqlite', 'redis', 'postgres', 'mysql', 'etcd']
COLOUR = {'sqlite': '#1b9e77', 'redis': '#d62728', 'postgres': '#1f5fbf',
          'mysql': '#e6a100', 'etcd': '#7a3db8'}
W, H = 300, 210            # one panel
ML, MR, MT, MB = 52, 12, 28, 36


def esc(s):
    return (str(s).replace('&', '&amp;').replace('<', '&lt;')
            .replace('>', '&gt;').replace('"', '&quot;'))


def fmt(v):
    if v >= 1e6 and v % 1e6 == 0:
        return '%dM' % (v // 1e6)
    if v >= 1e3 and v % 1e3 == 0:
        return '%dk' % (v // 1e3)
    if v >= 1:
        return '%g' % v
    return '%g' % v


def load(path):
    """{store: result} for the unpinned files that have a scaling part."""
    out = {}
    for f in sorted(glob.glob(os.path.join(path, '*.json'))):
        stem = os.path.basename(f)[:-5]
        with open(f, encoding='utf-8') as fh:
            try:
                d = json.load(fh)
            except ValueError:
                continue
        if any(k in d for k in ('held_scaling', 'waiter_scaling',
                                'name_scaling')):
            # hb-style scratch runs write one file per part: merge them
            store = stem.split('-')[0]
            out.setdefault(store, {}).update(d)
    return {k: out[k] for k in sorted(out, key=lambda s: (
        ORDER.index(s) if s in ORDER else 99, s))}


def ticks_log(lo, hi):
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if a == b:
        b = a + 1
    return [10 ** e for e in range(a, b + 1)]


def ticks_lin(lo, hi):
    hi = hi if hi > lo else lo + 1
    step = 10 ** math.floor(math.log10(hi - lo or 1))
    while (hi - lo) / step > 6:
        step *= 2
    while (hi - lo) / step < 3:
        step /= 2
    t, v, top = [], math.floor(lo / step) * step, math.ceil(hi / step) * step
    while v <= top + step * 0.01:
        t.append(v)
        v += step
    return t


def panel(ox, oy, title, series, ylabel, xlabel, logy):
    """SVG of one panel at (ox, oy); series: [(store, [(x, y)], note)]."""
    pts = [(x, y) for _, p, _ in series for x, y in p
           if x > 0 and y is not None and y >= 0 and (y > 0 or not logy)]
    out = ['<g transform="translate(%d,%d)">' % (ox, oy),
           '<text x="%d" y="16" font-size="12" font-weight="bold">%s</text>'
           % (ML, esc(title))]
    pw, ph = W - ML - MR, H - MT - MB
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" '
               'stroke="#999" stroke-width="0.5"/>' % (ML, MT, pw, ph))
    if not pts:
        out.append('<text x="%d" y="%d" font-size="11" fill="#666">no data'
                   '</text></g>' % (ML + 10, MT + 20))
        return out
    xs = ticks_log(min(x for x, _ in pts), max(x for x, _ in pts))
    x0, x1 = math.log10(xs[0]), math.log10(xs[-1])
    ys_ = [y for _, y in pts]
    if logy:
        yt = ticks_log(min(ys_), max(ys_))
        y0, y1 = math.log10(yt[0]), math.log10(yt[-1])
        fy = math.log10
    else:
        yt = ticks_lin(0, max(ys_) * 1.1)
        y0, y1 = yt[0], yt[-1]

        def fy(v):
            return v

    def px(x):
        return ML + (math.log10(x) - x0) / (x1 - x0) * pw

    def py(y):
        return MT + ph - (fy(y) - y0) / ((y1 - y0) or 1) * ph
    for t in xs:
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd" '
                   'stroke-width="0.5"/>' % (px(t), MT, px(t), MT + ph))
        out.append('<text x="%.1f" y="%d" font-size="10" text-anchor="middle">'
                   '%s</text>' % (px(t), MT + ph + 12, fmt(t)))
    for t in yt:
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd" '
                   'stroke-width="0.5"/>' % (ML, py(t), ML + pw, py(t)))
        out.append('<text x="%d" y="%.1f" font-size="10" text-anchor="end">'
                   '%s</text>' % (ML - 4, py(t) + 3, fmt(t)))
    out.append('<text x="%d" y="%d" font-size="10" text-anchor="middle">%s'
               '</text>' % (ML + pw // 2, MT + ph + 26, esc(xlabel)))
    out.append('<text x="12" y="%d" font-size="10" text-anchor="middle" '
               'transform="rotate(-90 12 %d)">%s</text>' % (
                   MT + ph // 2, MT + ph // 2, esc(ylabel)))
    for store, p, _ in series:
        p = [(x, y) for x, y in p if x > 0 and y is not None and y >= 0
             and (y > 0 or not logy)]
        if not p:
            continue
        c = COLOUR.get(store, '#333')
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" '
                   'points="%s"/>' % (c, ' '.join(
                       '%.1f,%.1f' % (px(x), py(y)) for x, y in p)))
        for x, y in p:
            out.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s">'
                       '<title>%s: %s, %.4g</title></circle>' % (
                           px(x), py(y), c, esc(store), fmt(x), y))
    out.append('</g>')
    return out


def legend(ox, oy, series):
    out = ['<g transform="translate(%d,%d)" font-size="10">' % (ox, oy)]
    for i, (store, _, note) in enumerate(series):
        c = COLOUR.get(store, '#333')
        out.append('<line x1="0" y1="%d" x2="16" y2="%d" stroke="%s" '
                   'stroke-width="2"/>' % (i * 14, i * 14, c))
        out.append('<text x="20" y="%d">%s</text>' % (
            i * 14 + 3, esc(store + (' (' + note + ')' if note else ''))))
    out.append('</g>')
    return out


def svg(title, panels, series0, foot):
    """panels: [(title, series, ylabel, xlabel, logy)]"""
    n = len(panels)
    leg_h = 14 * len(series0) + 10
    width, height = W * n, H + leg_h + 30
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="sans-serif">' % (
               width, height, width, height),
           '<title>%s</title>' % esc(title),
           '<rect width="100%" height="100%" fill="white"/>']
    for i, p in enumerate(panels):
        out += panel(i * W, 0, *p)
    out += legend(ML, H + 6, series0)
    out.append('<text x="%d" y="%d" font-size="9" fill="#666">%s</text>' % (
        ML, height - 8, esc(foot)))
    out.append('</svg>')
    return '\n'.join(out) + '\n'


def provenance(path):
    run = os.path.join(path, 'run.txt')
    head = {}
    if os.path.exists(run):
        with open(run, encoding='utf-8') as f:
            for line in f:
                if line.startswith('# ') and ': ' in line:
                    k, v = line[2:].rstrip('\n').split(': ', 1)
                    head[k] = v
    return 'scripts/plots.py from %s: %s; %s' % (
        os.path.relpath(path, ROOT) if path.startswith(ROOT) else path,
        head.get('date', 'no run.txt'), head.get('run', '')[:90])


def plots(path, out):
    res = load(path)
    foot = provenance(path)
    made = []

    def series(key, xk, yk, note=None):
        s = []
        for store, d in res.items():
            if key in d:
                s.append((store, [(p[xk], p.get(yk)) for p in d[key]],
                          note(d) if note else ''))
        return s

    def held_note(d):
        return ('to %s held: a session per lock' % '{:,}'.format(
            d['held_scaling_capped']) if 'held_scaling_capped' in d else '')

    def name_note(d):
        if 'name_scaling_capped' not in d:
            return ''
        top = max(p['names'] for p in d['name_scaling'])
        return 'to %s names: %s' % ('{:,}'.format(top),
                                    d['name_scaling_capped'].split(':')[0]
                                    if d['name_scaling_capped'].startswith('etcd')
                                    else 'table full')
    jobs = [
        ('held-scaling.svg', 'Uncontended cycle against locks held',
         [('cycle p50 (us), others renewed',
           series('held_scaling', 'held', 'cycle_us', held_note),
           'us', 'other locks held by the process', True)],
         series('held_scaling', 'held', 'cycle_us', held_note)),
        ('waiter-scaling.svg', 'Hand-off against waiters',
         [('hand-off p50 (us)',
           series('waiter_scaling', 'waiters', 'handoff_p50_us'),
           'us', 'waiters', True),
          ('client requests per hand-off',
           series('waiter_scaling', 'waiters', 'requests_per_handoff'),
           'requests (server count)', 'waiters', False)],
         series('waiter_scaling', 'waiters', 'handoff_p50_us')),
        ('name-scaling.svg', 'status, list and acquire against names held',
         [('status NAME p50 (us)',
           series('name_scaling', 'names', 'status_us', name_note),
           'us', 'names held in the store', True),
          ('list PREFIX (10 names) p50 (us)',
           series('name_scaling', 'names', 'list_us', name_note),
           'us', 'names held in the store', True),
          ('acquire p50 (us)',
           series('name_scaling', 'names', 'acquire_us', name_note),
           'us', 'names held in the store', True)],
         series('name_scaling', 'names', 'status_us', name_note)),
    ]
    for fname, title, panels, leg in jobs:
        # A run without the part still gets its file (the page embeds
        # it): panels saying "no data".
        dst = os.path.join(out, fname)
        text = svg(title, panels, leg, foot if leg else
                   foot + ' (no such part in this run)')
        with open(dst, 'w', encoding='utf-8') as f:
            f.write(text)
        made.append(dst)
    return made


def main(argv):
    if argv[:1] in (['-h'], ['--help']) or len(argv) > 2:
        sys.stderr.write(__doc__)
        return 64
    path = os.path.abspath(argv[0]) if argv else os.path.join(
        ROOT, 'docs', 'results', 'bench')
    out = os.path.abspath(argv[1]) if len(argv) > 1 else path
    made = plots(path, out)
    for m in made:
        print('plots.py: wrote %s' % os.path.relpath(m))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
