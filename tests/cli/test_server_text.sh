#!/bin/sh
# A server's text never reaches the terminal raw: a fake Redis on
# loopback answers every command with an error full of terminal escapes
# (set the title, clear the screen), as a hostile server or a man in the
# middle on plain redis:// could.  Every dlock command that shows the
# error must show it escaped (threat model R9; issue 34, item 12).
#   test_server_text.sh DLOCK
DLOCK=${1:?usage: test_server_text.sh DLOCK}
T=$(mktemp -d)
trap 'kill $srv 2>/dev/null; rm -rf "$T"' EXIT
mkfifo "$T/port"
python3 - "$T/port" <<'PY' &
import socket, sys, threading
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
open(sys.argv[1], "w").write("%d\n" % s.getsockname()[1])
evil = b"-ERR \x1b]0;pwned\x07\x1b[2J\x9b31m boom\r\n"
def serve(c):
    try:
        while c.recv(65536):
            c.sendall(evil)
    except OSError:
        pass
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
srv=$!
read -r port <"$T/port"
fails=0 n=0
for cmd in "status x" "list" "release --force x" "run -n x -- true"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    "$DLOCK" -s "redis://127.0.0.1:$port?timeout=2s" $cmd >"$T/out" 2>&1 </dev/null
    if LC_ALL=C grep -q "$(printf '[\033\007]')" "$T/out"; then
        echo "FAIL $cmd: raw escapes reached the terminal: $(od -c "$T/out" | head -3)"
        fails=$((fails + 1))
    elif ! grep -q 'x1b\]0;pwned' "$T/out"; then
        echo "FAIL $cmd: the server's error is not shown (escaped): $(cat "$T/out")"
        fails=$((fails + 1))
    else
        echo "ok   $cmd: $(cat "$T/out")"
    fi
done
echo "$fails of $n checks failed"
[ "$fails" = 0 ]
