"""Child process for the tests: helper.py MODE URL NAME.

Talks over stdin/stdout (line by line) so the tests synchronise with
pipes, never with sleeps.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import dlock  # noqa: E402


def say(*words):
    print(*words, flush=True)


def main():
    mode, url, name = sys.argv[1:4]
    store = dlock.Store(url)
    if mode in ("hold", "wait"):
        # hold: take it at once or fail; wait: wait up to 60 s.
        say("waiting")
        lk = store.lock(name, wait=0 if mode == "hold" else 60)
        lk.acquire()
        say("acquired", lk.fence)
        sys.stdin.readline()          # the test says when to let go
        lk.release()
        say("released")
        return 0
    if mode == "force":
        say("removed", store.force_release(name))
        return 0
    if mode == "exit":
        # Normal interpreter exit with the lock still held: released.
        lk = store.acquire(name, wait=0)
        say("acquired", lk.fence)
        sys.stdin.readline()
        return 0
    if mode == "shutdown":
        # Locks with on_lost callbacks, a daemon thread still using one,
        # a lock whose lease thread may fire during exit: all at the
        # interpreter's exit, which must release them and not crash.
        import threading
        locks = [store.acquire(name + "/%d" % i, on_lost=lambda l: None)
                 for i in range(3)]
        short = store.acquire(name + "/short", ttl=0.2, renew=False,
                              on_lost=lambda l: None)

        def spin():
            while True:
                locks[0].lease_left

        threading.Thread(target=spin, daemon=True).start()
        say("acquired", len(locks), short.fence)
        sys.stdin.readline()
        return 0
    if mode == "exit-race":
        # Daemon threads still taking, checking and dropping locks (some
        # with on_lost, some lapsing) while the interpreter exits.  Once
        # this crashed: the store was closed under a call in flight.
        import random
        import threading
        import time
        locks = [store.acquire("%s/%d" % (name, i), ttl=0.1, renew=False,
                               on_lost=lambda l: None) for i in range(4)]

        def spin():
            while True:
                for lk in locks:
                    lk.lost

        def churn(cb):
            i = 0
            while True:
                i += 1
                try:
                    store.acquire("%s/late-%d" % (name, i % 5), ttl=0.1,
                                  renew=False, on_lost=cb)
                except dlock.DlockError:
                    pass

        threading.Thread(target=spin, daemon=True).start()
        threading.Thread(target=churn, args=(None,), daemon=True).start()
        threading.Thread(target=churn, args=(lambda l: None,),
                         daemon=True).start()
        say("running")
        time.sleep(random.uniform(0.02, 0.15))   # vary the moment of exit
        return 0
    if mode == "fork":
        lk = store.acquire(name, wait=0)
        pid = os.fork()
        if pid == 0:
            # The child: calls on inherited handles say EINVAL; its normal
            # exit (finalizers, atexit) must not release the parent's lock.
            bad = []
            for what, call in (("extend", lambda: lk.extend()),
                               ("assert_ttl", lambda: lk.assert_ttl(0.1)),
                               ("status", lambda: store.status(name))):
                try:
                    call()
                    bad.append(what + " succeeded")
                except dlock.InvalidArgument:
                    pass
                except Exception as e:  # noqa: BLE001
                    bad.append("%s raised %r" % (what, e))
            with dlock.Store(url) as own:
                info = own.status(name)
                if not info.held:
                    bad.append("the child's own store does not see it held")
            if bad:
                print("child:", "; ".join(bad), file=sys.stderr, flush=True)
            sys.exit(1 if bad else 0)  # a normal exit: finalizers run
        _, status = os.waitpid(pid, 0)
        say("child", os.waitstatus_to_exitcode(status))
        info = store.status(name)
        say("held", int(info.held), "fence", info.fence, "mine", lk.fence)
        lk.assert_ttl(0.1)            # still ours in the store
        lk.release()
        say("released")
        return 0
    if mode == "fork-pid1":
        # Run as pid 1 of a pid namespace (unshare --pid --fork): a child
        # forked into a new pid namespace is pid 1 too.  It must still
        # know itself a fork child: close() of the inherited store must
        # not wait for the calls its parent's threads are in.
        import ctypes
        import threading
        import time
        assert os.getpid() == 1, os.getpid()
        lk = store.acquire(name, wait=0)
        waiter = store.lock(name, wait=60)
        t = threading.Thread(target=lambda: (waiter.acquire(),
                                             waiter.release()))
        t.start()
        while store._ss.users == 0:   # until the waiter is inside its call
            time.sleep(0.001)
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x20000000) != 0:   # CLONE_NEWPID
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWPID)")
        pid = os.fork()
        if pid == 0:
            code = 0 if os.getpid() == 1 else 3
            store.close()             # the parent's: inert here
            os._exit(code)
        deadline = time.monotonic() + 20
        status = None
        while time.monotonic() < deadline:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                status = os.waitstatus_to_exitcode(st)
                break
            time.sleep(0.02)
        if status is None:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            say("child hung")
        else:
            say("child", status)
        lk.release()
        t.join()
        say("released")
        return 0
    raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    sys.exit(main())
