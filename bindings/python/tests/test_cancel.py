"""Cancelling a wait: Ctrl-C (SIGINT) stops a waiting acquire() on the main
thread with KeyboardInterrupt, and dlock.Cancel stops one from another
thread; either way nothing is held afterwards (issue 34, item 10)."""
import os
import signal
import subprocess
import sys
import threading
import time

import dlock

HERE = os.path.dirname(os.path.abspath(__file__))

# The waiter: acquire(wait=5) on a held lock; on KeyboardInterrupt it
# says so and stays alive (holding nothing, if the binding is right)
# until told to exit, so that the holder's next try proves it.
CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[3])
import dlock
store = dlock.Store(sys.argv[1])
lk = store.lock(sys.argv[2], wait=5)
print("waiting", flush=True)
try:
    lk.acquire()
    print("acquired", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
except dlock.Timeout:
    print("timeout", flush=True)
sys.stdin.readline()
"""


def test_ctrl_c_interrupts_wait(store, url, name):
    holder = store.lock(name, wait=0)
    holder.acquire()
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, name, os.path.dirname(HERE)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "waiting"
        # The scenario: Ctrl-C 1.5 s into the 5 s wait.
        time.sleep(1.5)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().strip()
        took = time.monotonic() - t0
        assert line == "interrupted"
        # Well under the 5 s wait: the interrupt ended it, not the
        # deadline (not a performance bound).
        assert took < 1.0, took
        # The waiter is still alive and holds nothing: the holder's next
        # try gets it at once.
        holder.release()
        assert holder.acquire(wait=0, raise_busy=False)
        holder.release()
    finally:
        p.stdin.close()
        p.wait(10)


def test_cancel_from_thread(store, name):
    other = dlock.Store(store.url) if "***" not in store.url else store
    holder = other.lock(name, wait=0)
    holder.acquire()
    c = dlock.Cancel()
    waiter = store.lock(name, wait=None, cancel=c)
    out = {}

    def run():
        try:
            waiter.acquire()
            out["r"] = "acquired"
        except dlock.Cancelled as e:
            out["r"] = e
    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)             # give it time to wait (not needed to pass)
    c.fire()
    t.join(10)
    assert not t.is_alive()
    assert isinstance(out["r"], dlock.Cancelled)
    assert out["r"].code == dlock.ECANCELED
    assert c.fired
    assert not waiter.held
    holder.release()
    assert holder.acquire(wait=0, raise_busy=False)
    holder.release()
    c.reset()
    assert not c.fired
    if other is not store:
        other.close()
