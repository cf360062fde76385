#!/usr/bin/env python3
"""The measured tables in the docs, made from committed result files.

  scripts/tables.py                 rewrite every marked table in README.md
                                    and docs/**/*.md from its result file
  scripts/tables.py --check         change nothing; exit 1 naming every
                                    table that differs from what its
                                    result file makes (ctest: docs-tables)
  scripts/tables.py render KIND FILE   print one table
  scripts/tables.py extract-partition LOG [RUN]
  scripts/tables.py extract-torture LOG [RUN]
                                    print a result file made from a ctest
                                    log (BUILD/Testing/Temporary/LastTest.log
                                    or a script's own output); RUN says
                                    which run it was (default: the log's
                                    path and this tree's commit)

A table in a page sits between two markers, KIND saying how it is made:

  <!-- tables.py: KIND from docs/results/FILE -->
  ...made by the script, never edited by hand...
  <!-- end KIND -->

KIND: partition (docs/results/partition.txt, tests/partition/table.sh
--save writes it), torture (docs/results/torture.txt), bench-uncontended,
bench-floors, bench-redis, bench-contended, bench-scaling
(docs/results/bench/: the JSON files of `DLOCK_BENCH_RESULTS=docs/results/bench
make bench`, and run.txt).
Every table ends with the line saying which run made it, and when.

Standard library only.
"""
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = re.compile(r'^<!-- tables\.py: ([a-z0-9-]+) from (\S+) -->$')


def die(msg):
    sys.stderr.write('tables.py: %s\n' % msg)
    sys.exit(2)


# --- result files ---------------------------------------------------------

def read_text(path):
    """(header dict from '# key: value' lines, the other lines)"""
    head, body = {}, []
    with open(path, encoding='utf-8') as f:
        for line in f.read().splitlines():
            m = re.match(r'^# ([a-z]+): (.*)$', line)
            if m and not body:
                head[m.group(1)] = m.group(2)
            elif line.strip():
                body.append(line)
    return head, body


def provenance(src, head):
    run = head.get('run', 'unknown run')
    date = head.get('date', 'unknown date')
    s = '*Made by `scripts/tables.py` from `%s`: %s; %s.*' % (src, run, date)
    if 'note' in head:
        s += ' **%s**' % head['note']
    return s


def field(line, key):
    m = re.search(r'(?:^| )' + re.escape(key) + r'=([^ ]*)', line)
    return m.group(1) if m else '?'


def render_partition(path, src):
    head, body = read_text(path)
    out = ['| store | fault | overlapping windows | fenced updates lost '
           '| stale writes refused | holders told LOST '
           '| new holder after a heal, p50/max ms | every worker back, ms |',
           '|---|---|---|---|---|---|---|---|']

    def row(store, fault, line):
        out.append('| %s | %s | %s | %s | %s | %s | %s | %s |' % (
            store, fault, field(line, 'overlaps'), field(line, 'fenced_lost'),
            field(line, 'stale_refused'), field(line, 'told_lost'),
            field(line, 'new_holder_after_heal_ms'),
            field(line, 'all_workers_back_ms')))
    pending, store, fault = False, '', ''
    for line in body:
        if re.match(r'^--- .*, nemesis ', line):
            hdr = line[4:]
            store = hdr.split(',', 1)[0]
            fault = re.sub(r'^[^,]*, nemesis ', '', hdr)
            pending = True
        elif pending and line.startswith('summary: '):
            row(store, fault, line)
            pending = False
        elif pending and re.match(r'^(PASS|FAIL) control: ', line):
            # A control run prints no summary: its lost updates are the point.
            n = line.split()[2]
            out.append('| %s | %s (control, unfenced) | - | %s lost (must be > 0) '
                       '| - | - | - | - |' % (store, fault, n))
            pending = False
        elif line.startswith('SUMMARY store='):
            row(field(line, 'store'), field(line, 'fault'), line)
    return out + ['', provenance(src, head)]


def render_torture(path, src):
    head, body = read_text(path)
    out = ['```']
    for line in body:
        if line.startswith('=== '):
            out.append(line[4:])
        elif line.startswith('--- '):
            out.append('  ' + line[4:])
        else:
            out.append('      ' + line)
    return out + ['```', '', provenance(src, head)]


def bench_dir(path):
    head = {}
    run = os.path.join(path, 'run.txt')
    if os.path.exists(run):
        head, _ = read_text(run)
    files = {}
    for f in sorted(glob.glob(os.path.join(path, '*.json'))):
        with open(f, encoding='utf-8') as fh:
            files[os.path.basename(f)[:-5]] = json.load(fh)
    if not files:
        die('%s: no *.json' % path)
    return head, files


def num(v, fmt='%.2f'):
    if v is None:
        return '-'
    if fmt == 'int':
        return '{:,}'.format(int(round(v)))
    return fmt % v


def rng(d, key):
    if d is None or key + '_median' not in d:
        return '-'
    return '%.2f (%.2f..%.2f)' % (d[key + '_median'], d[key + '_min'],
                                  d[key + '_max'])


ORDER = ['sqlite', 'redis', 'postgres', 'postgres-lease', 'mysql',
         'mysql-lease', 'mysql-itsmieger', 'etcd']


def stems(files):
    s = {k[:-7] if k.endswith('-pinned') else k for k in files
         if not k.endswith('-floors') and 'node-redlock' not in k
         and 'etcd-compare' not in k}
    return sorted(s, key=lambda k: (ORDER.index(k) if k in ORDER else 99, k))


def render_bench_uncontended(path, src):
    head, files = bench_dir(path)
    out = ['| store | server | cycles/s (p50 us) | no-op round trips/s '
           '| cycle / (2 x no-op) (range) | pinned: cycle / (2 x no-op) (range) '
           '| pinned: cycle / contract floor (range) | requests per cycle |',
           '|---|---|---|---|---|---|---|---|']
    for s in stems(files):
        u = files.get(s, {}).get('uncontended')
        p = files.get(s + '-pinned', {}).get('uncontended')
        if s.endswith('-itsmieger'):
            # bench.sh measures its-mieger's table only while pinned.
            u, p = None, u
        any_ = u or p
        server = (files.get(s) or files.get(s + '-pinned') or {}).get('server', '?')
        req = any_.get('requests_per_cycle') if any_ else None
        out.append('| %s | %s | %s | %s | %s | %s | %s | %s |' % (
            s, server,
            '%s (%s)' % (num(u['cycles_per_s'], 'int'), num(u['p50_us'], '%.0f')) if u else '-',
            num(u['noop_per_s'], 'int') if u else '-',
            rng(u, 'ratio'), rng(p, 'ratio'), rng(p, 'floor_ratio'),
            '(no server)' if req is not None and req < 0 else num(req)))
    d = files.get('sqlite', {}).get('uncontended_durable')
    if d:
        out += ['', 'SQLite: a cycle costs %.2f x one of dlock-bench\'s own one-row '
                'durable commits (%s commits/s).' % (d['ratio'], num(d['commit_per_s'], 'int'))]
    out += etcd_compare(files)
    return out + ['', provenance(src, head)]


def etcd_compare(files):
    """etcd against its own clients (bench/etcd-compare.py), pinned first."""
    c = files.get('etcd-compare-pinned') or files.get('etcd-compare')
    if not c:
        return []
    how = 'pinned to one CPU' if 'etcd-compare-pinned' in files else 'unpinned'
    parts = []
    p = c.get('process_per_cycle')
    if p:
        parts.append('`dlock run -n NAME true` %s cycles/s against `etcdctl lock '
                     'NAME true` %s cycles/s (a process per cycle): %.2f x' % (
                         num(p['dlock_cycles_per_s'], '%.1f'),
                         num(p['etcdctl_cycles_per_s'], '%.1f'),
                         p['dlock_over_etcdctl']))
    p = c.get('python')
    if p:
        parts.append('the Python binding\'s try_lock + release %s cycles/s against '
                     'python3-etcd3gw\'s Lock %s cycles/s (one process): %.2f x' % (
                         num(p['dlock_cycles_per_s'], 'int'),
                         num(p['etcd3gw_cycles_per_s'], 'int'),
                         p['dlock_over_etcd3gw']))
    if not parts:
        return []
    return ['', 'etcd, %s: %s.' % (how, '; '.join(parts))]


def render_bench_floors(path, src):
    head, files = bench_dir(path)
    fl = {k[:-7]: v['floors'] for k, v in files.items() if k.endswith('-floors')}
    cols = [s for s in ('postgres', 'mysql') if s in fl]
    keys = []
    for s in cols:
        keys += [k for k in fl[s] if k not in keys]
    out = ['| part (`bench/floors.c`) | ' + ' | '.join(
        '%s: two statements / (2 x no-op) (range)' % s for s in cols) + ' |',
        '|---|' + '---|' * len(cols)]
    for k in keys:
        out.append('| %s | %s |' % (k, ' | '.join(rng(fl[s].get(k), 'ratio') for s in cols)))
    return out + ['', provenance(src, head)]


def render_bench_redis(path, src):
    head, files = bench_dir(path)
    out = ['| Redis, uncontended | pinned to one CPU | unpinned |', '|---|---|---|']

    def cpu(k):
        c = files.get(k, {}).get('redis_server_cpu')
        if not c:
            return '-'
        return '%.2f (%.1f us / %.1f us)' % (c['ratio'], c['dlock_us_per_cycle'],
                                             c['seed_us_per_cycle'])

    def nr(k):
        c = files.get(k)
        if not c:
            return '-'
        return '%.2f (%s / %s cycles/s)' % (
            c['dlock_over_node_redlock'], num(c['dlock_cycles_per_s_median'], 'int'),
            num(c['node_redlock_cycles_per_s_median'], 'int'))
    out.append('| server CPU per cycle / the seed cycle\'s (`SET NX PX` + '
               'compare-and-delete) | %s | %s |' % (cpu('redis-pinned'), cpu('redis')))
    out.append('| dlock\'s cycles/s / node-redlock\'s (`scripts/bench-redlock.sh`, '
               'medians) | %s | %s |' % (nr('redis-node-redlock-pinned'),
                                         nr('redis-node-redlock')))
    return out + ['', provenance(src, head)]


def render_bench_contended(path, src):
    """dlock's contended hand-off against the store's hand-off floor
    (bench/handoff.h), both measured in the same run."""
    head, files = bench_dir(path)
    out = ['| store | hand-off p50 / p99 (us) | **p50 / floor\'s p50** | p99 / p50 '
           '| requests per cycle (server-counted) | floor: hand-off p50 / p99 (us), '
           'requests per cycle | floor: the exchange | cycles/s, Jain |',
           '|---|---|---|---|---|---|---|---|']
    for s in stems(files):
        c = files.get(s, {}).get('contended')
        if not c:
            continue
        f = c.get('floor')
        req = c.get('requests_per_cycle')
        out.append('| %s | %s / %s | %s | %s | %s | %s | %s | %s, %s |' % (
            s, num(c['handoff_p50_us'], '%.0f'), num(c['handoff_p99_us'], '%.0f'),
            num(c.get('p50_to_floor'), '%.2f') if f else '-',
            num(c.get('p99_over_p50'), '%.2f'),
            '(no count)' if req is None or req < 0 else num(req, '%.2f'),
            '%s / %s, %s' % (num(f['handoff_p50_us'], '%.0f'), num(f['handoff_p99_us'], '%.0f'),
                             '(no count)' if f['requests_per_cycle'] < 0
                             else num(f['requests_per_cycle'], '%.2f')) if f else '-',
            f['what'] if f else '-',
            num(c['cycles_per_s'], 'int'), num(c['jain_fairness'], '%.3f')))
    return out + ['', provenance(src, head)]


def render_bench_scaling(path, src):
    """Cost as the work grows (bench/many.c, herd.c, names.c): the figures
    scripts/plots.py draws, per store and count."""
    head, files = bench_dir(path)
    st = [k for k in stems(files) if k in files and any(
        p in files[k] for p in ('held_scaling', 'waiter_scaling', 'name_scaling'))]
    if not st:
        return ['*No scaling parts in this run (dlock-bench\'s many, herd and '
                'names parts: a full `make bench` runs them).*', '',
                provenance(src, head)]
    out = ['| store | others held | uncontended cycle p50 (us) |', '|---|---|---|']
    for k in st:
        d = files[k]
        for p in d.get('held_scaling', []):
            out.append('| %s | %s | %s |' % (k, num(p['held'], 'int'),
                                              num(p['cycle_us'], '%.1f')))
        if 'held_scaling_capped' in d:
            out.append('| %s | (capped at %s: a session per held lock) | |' % (
                k, num(d['held_scaling_capped'], 'int')))
    out += ['', '| store | waiters | hand-off p50 / p99 (us) | client requests per '
            'hand-off (server count) |', '|---|---|---|---|']
    for k in st:
        for p in files[k].get('waiter_scaling', []):
            r = p.get('requests_per_handoff')
            out.append('| %s | %s | %s / %s | %s |' % (
                k, num(p['waiters'], 'int'), num(p['handoff_p50_us'], '%.0f'),
                num(p['handoff_p99_us'], '%.0f'),
                '(not counted)' if r is None or r < 0 else num(r)))
    out += ['', '| store | names held | status NAME p50 (us) | list PREFIX, 10 names, '
            'p50 (us) | acquire p50 (us) |', '|---|---|---|---|---|']
    for k in st:
        d = files[k]
        for p in d.get('name_scaling', []):
            li = p.get('list_us')
            out.append('| %s | %s | %s | %s | %s |' % (
                k, num(p['names'], 'int'), num(p['status_us'], '%.1f'),
                '(failed)' if li is None or li < 0 else num(li, '%.1f'),
                num(p['acquire_us'], '%.1f')))
        if 'name_scaling_capped' in d:
            out.append('| %s | (capped: %s) | | | |' % (k, d['name_scaling_capped']))
    return out + ['', provenance(src, head)]


KINDS = {
    'partition': render_partition,
    'torture': render_torture,
    'bench-uncontended': render_bench_uncontended,
    'bench-floors': render_bench_floors,
    'bench-redis': render_bench_redis,
    'bench-contended': render_bench_contended,
    'bench-scaling': render_bench_scaling,
}


def render(kind, src):
    if kind not in KINDS:
        die('unknown table kind %r (known: %s)' % (kind, ', '.join(sorted(KINDS))))
    path = os.path.join(ROOT, src)
    if not os.path.exists(path):
        die('%s: no such result file' % src)
    return KINDS[kind](path, src)


# --- pages ----------------------------------------------------------------

def pages():
    return [os.path.join(ROOT, 'README.md')] + sorted(
        glob.glob(os.path.join(ROOT, 'docs', '**', '*.md'), recursive=True))


def remake(path):
    """(new text, [(kind, src, differs)])"""
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    out, tables, i = [], [], 0
    rel = os.path.relpath(path, ROOT)
    while i < len(lines):
        m = MARK.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        kind, src = m.group(1), m.group(2)
        end = '<!-- end %s -->' % kind
        j = i
        while j < len(lines) and lines[j] != end:
            if MARK.match(lines[j]):
                die('%s:%d: table %r has no %s' % (rel, i, kind, end))
            j += 1
        if j == len(lines):
            die('%s:%d: table %r has no %s' % (rel, i, kind, end))
        new = render(kind, src)
        tables.append((kind, src, lines[i:j] != new))
        out += new
        out.append(end)
        i = j + 1
    return '\n'.join(out), tables


def main(argv):
    if argv[:1] == ['render'] and len(argv) == 3:
        print('\n'.join(render(argv[1], argv[2])))
        return 0
    if argv[:1] in (['extract-partition'], ['extract-torture']) and len(argv) in (2, 3):
        return extract(argv[0][8:], argv[1], argv[2] if len(argv) == 3 else None)
    check = argv == ['--check']
    if argv and not check:
        sys.stderr.write(__doc__)
        return 64
    bad, n = 0, 0
    for p in pages():
        text, tables = remake(p)
        rel = os.path.relpath(p, ROOT)
        for kind, src, differs in tables:
            n += 1
            if differs:
                bad += 1
                print('%s: table %s differs from what %s makes%s' % (
                    rel, kind, src, '' if check else ' (rewritten)'))
        if tables and not check:
            with open(p, encoding='utf-8') as f:
                old = f.read()
            if old != text:
                with open(p, 'w', encoding='utf-8') as f:
                    f.write(text)
    # A result file no table reads: its table was dropped from the pages.
    used = {src.rstrip('/') for p in pages() for _, src, _ in remake(p)[1]}
    for r in sorted(glob.glob(os.path.join(ROOT, 'docs', 'results', '*'))):
        rel = os.path.relpath(r, ROOT)
        if rel not in used:
            bad += 1
            print('%s: no table in README.md or docs/ is made from it' % rel)
    if check:
        print('tables.py --check: %d table(s), %d problem(s)%s' % (
            n, bad, ': run scripts/tables.py (or commit the result files that made the tables)' if bad else ''))
        return 1 if bad else 0
    return 0


# --- result files from a ctest log -------------------------------------------

def git_rev():
    try:
        return subprocess.run(['git', '-C', ROOT, 'describe', '--always', '--dirty'],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown commit'


def extract(kind, log, run):
    with open(log, encoding='utf-8', errors='replace') as f:
        lines = f.read().splitlines()
    date = 'date not in the log'
    for line in lines:
        m = re.match(r'^Start testing: (.*)$', line)
        if m:
            date = m.group(1)
            break
    out = []
    if kind == 'partition':
        pending = False
        for line in lines:
            if re.match(r'^--- .*, nemesis ', line):
                out.append(line)
                pending = True
            elif pending and (line.startswith('summary: ') or
                              re.match(r'^(PASS|FAIL) control: ', line)):
                out.append(line)
                pending = False
            elif line.startswith('SUMMARY store='):
                out.append(line)
    else:
        entry, take = None, False
        for line in lines:
            m = re.match(r'^\d+/\d+ Testing: (\S+)$', line)
            if m:
                entry = m.group(1)
                take = entry.startswith('torture-')
                if take:
                    out.append('=== ' + entry)
            elif take and (line.startswith('--- ') or re.match(r'^(PASS|FAIL) ', line)):
                out.append(line)
    print('# run: %s' % (run or 'ctest log %s, tree %s' % (os.path.basename(log), git_rev())))
    import time
    print('# date: %s (the log written %s)' % (
        date, time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(os.path.getmtime(log)))))
    print('\n'.join(out))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
