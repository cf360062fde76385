#!/usr/bin/python3
"""dlock's uncontended cycle on etcd against etcd's own clients, in the same
run on the same member:

    bench/etcd-compare.py BUILD_DIR ETCD_URL [--json FILE] [--quick]

1. A process per cycle: `etcdctl lock NAME true` (Debian's etcd-client:
   a session lease, the Mutex's txn, the command, the delete, the revoke)
   against `dlock -s URL run -n NAME true` (BUILD_DIR's dlock), in
   alternating blocks; cycles/s of each and dlock / etcdctl.
2. In one Python process: etcd3gw's Lock (Debian's python3-etcd3gw:
   acquire = a lease grant + a txn, release = a txn; try-only, no wait, no
   queue, no fence) against the Python binding's try_lock + release
   (bindings/python over BUILD_DIR's libdlock.so, renew=False), one client
   each, in alternating blocks.
A client that is not installed is reported as skipped (and missing in the
JSON), never guessed.  Every subprocess is bounded (timeout).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def usage():
    sys.stderr.write("usage: bench/etcd-compare.py BUILD_DIR ETCD_URL "
                     "[--json FILE] [--quick]\n")
    sys.exit(2)


def endpoints(url):
    rest = url.split("://", 1)[1]
    rest = rest.split("?", 1)[0].split("/", 1)[0]
    if "@" in rest:
        sys.stderr.write("etcd-compare: a URL with credentials is not "
                         "supported\n")
        sys.exit(2)
    return ["http://" + h for h in rest.split(",")]


def blocks_of(fns, blocks, per):
    """Alternate blocks of each fn (the order swaps every round); each
    block's cycles/s."""
    rates = {k: [] for k in fns}
    keys = list(fns)
    for b in range(blocks):
        for k in (keys if b % 2 == 0 else keys[::-1]):
            t0 = time.monotonic()
            for _ in range(per):
                fns[k]()
            rates[k].append(per / (time.monotonic() - t0))
    return rates


def run_cmd(argv):
    r = subprocess.run(argv, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=30)
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), r.returncode,
                                               r.stderr.decode()[-300:]))


def main(argv):
    if len(argv) < 3:
        usage()
    build, url = os.path.abspath(argv[1]), argv[2]
    out, quick, i = None, False, 3
    while i < len(argv):
        if argv[i] == "--json" and i + 1 < len(argv):
            out, i = argv[i + 1], i + 2
        elif argv[i] == "--quick":
            quick, i = True, i + 1
        else:
            usage()
    eps = endpoints(url)
    name = "bench-compare-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
    res = {"store": url}

    # 1. a process per cycle
    blocks, per = (3, 20) if quick else (5, 50)
    etcdctl = shutil.which("etcdctl")
    cli = os.path.join(build, "dlock")
    if etcdctl is None:
        print("etcdctl lock: skipped (no etcdctl: Debian's etcd-client)")
    elif not os.access(cli, os.X_OK):
        print("etcdctl lock: skipped (no %s)" % cli)
    else:
        env_ep = ",".join(e[len("http://"):] for e in eps)
        fns = {
            "etcdctl": lambda: run_cmd(
                [etcdctl, "--endpoints=" + env_ep, "--dial-timeout=5s",
                 "--command-timeout=10s", "lock", name + "-ctl", "true"]),
            "dlock": lambda: run_cmd(
                [cli, "-s", url, "run", "-n", name + "-cli", "--", "true"]),
        }
        for f in fns.values():  # warm: page cache, first connection
            f()
        r = blocks_of(fns, blocks, per)
        e, d = statistics.median(r["etcdctl"]), statistics.median(r["dlock"])
        print("etcdctl lock NAME true  %7.1f cycles/s   dlock run -n NAME "
              "true  %7.1f cycles/s   dlock/etcdctl %.2f (a process per "
              "cycle, medians of %d blocks of %d)" % (e, d, d / e, blocks,
                                                       per))
        res["process_per_cycle"] = {
            "etcdctl_cycles_per_s": e, "dlock_cycles_per_s": d,
            "dlock_over_etcdctl": d / e, "blocks": blocks, "per_block": per}

    # 2. in one Python process
    blocks, per = (3, 200) if quick else (5, 1000)
    try:
        import etcd3gw  # noqa: F401
        from etcd3gw.client import Etcd3Client
        from etcd3gw.lock import Lock as GwLock
    except ImportError:
        etcd3gw = None
        print("etcd3gw: skipped (no python3-etcd3gw)")
    if etcd3gw is not None:
        os.environ["DLOCK_LIBRARY"] = os.path.join(build, "libdlock.so")
        sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
        import dlock
        host, port = eps[0][len("http://"):].rsplit(":", 1)
        # etcd 3.4 serves /v3/ (and /v3beta/), not etcd3gw's default /v3alpha/.
        gw = Etcd3Client(host=host, port=int(port), api_path="/v3/")
        store = dlock.Store(url)

        def gw_cycle():
            lk = GwLock(name + "-gw", ttl=30, client=gw)
            if not lk.acquire():
                raise RuntimeError("etcd3gw: not acquired")
            if not lk.release():
                raise RuntimeError("etcd3gw: not released")

        def dl_cycle():
            lk = store.try_lock(name + "-py", ttl=30, renew=False)
            if lk is None:
                raise RuntimeError("dlock: busy")
            lk.release()

        fns = {"etcd3gw": gw_cycle, "dlock": dl_cycle}
        for _ in range(20):
            for f in fns.values():
                f()
        r = blocks_of(fns, blocks, per)
        store.close()
        e, d = statistics.median(r["etcd3gw"]), statistics.median(r["dlock"])
        print("etcd3gw Lock %7.0f cycles/s   dlock (Python binding) %7.0f "
              "cycles/s   dlock/etcd3gw %.2f (one process, medians of %d "
              "blocks of %d)" % (e, d, d / e, blocks, per))
        res["python"] = {
            "etcd3gw_cycles_per_s": e, "dlock_cycles_per_s": d,
            "dlock_over_etcd3gw": d / e, "blocks": blocks, "per_block": per}
    if out is not None:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
