#!/bin/bash
# A script whose "#!" interpreter path is too long for the kernel's
# 256-byte buffer: execve() fails with ENOEXEC and execvp() (a shell,
# flock(1), dlock's own child) runs it with /bin/sh.  dlock run's look
# before the lock must not take the cut name for a missing interpreter
# (it exited 126 for a script every shell runs).  A missing interpreter
# whose path fits is still caught before the lock (127/126, no run).
#   long_shebang.sh DLOCK URL
set -u
dlock=$1 url=$2
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok   $*"; }
t=$(mktemp -d /tmp/dlock-adv47-sb.XXXXXX)
trap 'rm -rf "$t"' EXIT
export DLOCK_STORE=$url

# An interpreter path of 256 bytes: "#!" and it fill the buffer.
d=$t
while [ ${#d} -lt 240 ]; do d=$d/dddddddddddddddddddddddddddddd; done
d=${d:0:253}
d=${d%/}
mkdir -p "$d"
pad=$((256 - ${#d} - 1))
ip=$d/$(printf 's%.0s' $(seq 1 "$pad"))
ln -s /bin/sh "$ip"
[ ${#ip} -eq 256 ] || bad "setup: interpreter path is ${#ip} bytes"
printf '#!%s\necho long-ok\n' "$ip" >"$t/long.sh"
chmod +x "$t/long.sh"
out=$("$t/long.sh" 2>&1)
[ "$out" = long-ok ] || { echo "the shell does not run it ($out): skip"; exit 77; }

out=$("$dlock" run adv47-sb -- "$t/long.sh" 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$out" = long-ok ]; then
    ok "a '#!' line too long for the kernel runs with /bin/sh, as under a shell"
else
    bad "dlock run of a script with a 256-byte '#!' path: rc $rc: $out"
fi

# Still caught: a missing interpreter whose path fits the buffer.
printf '#!%s/nope\necho no\n' "$t" >"$t/miss.sh"
chmod +x "$t/miss.sh"
out=$("$dlock" run adv47-sb2 -- "$t/miss.sh" 2>&1)
rc=$?
case "$rc:$out" in
127:*"interpreter"*missing*) ok "a missing interpreter still exits 127 before the lock" ;;
*) bad "missing interpreter: rc $rc: $out" ;;
esac
if "$dlock" history adv47-sb2 2>/dev/null | grep -q .; then
    bad "the 127 command recorded a run"
fi
exit $fail
