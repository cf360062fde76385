#!/bin/bash
# A role granted on a name's parent range, `app/` (the natural grant for
# "the names under app/"), and etcd run records: before issue 43 they sat
# at P app/job \xff runs, inside that range; at P app \xff runs/job they
# are outside it (inside, `etcdctl lock app` would wait behind them), and
# that user's --once and --once-per refused with a bare "permission
# denied".  Now the message says where the records are and what grant
# covers them; and a role on `app` (no '/') runs, records and skips.
#   adv_b_etcd_role.sh DLOCK SCRIPTS   (a throwaway etcd with auth on)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../stores/etcd/lib.sh"

DLOCK=${1:?usage: adv_b_etcd_role.sh DLOCK SCRIPTS}
script="${2:?SCRIPTS}/server-etcd.sh"
[ -x "$script" ] || skip "no $script"
command -v etcd >/dev/null 2>&1 || skip "no etcd (scripts/deps.sh test)"
srv=$(mktemp -d /tmp/dlock-etcd-role-srv.XXXXXX)
trap '"$script" stop "$srv" >/dev/null 2>&1; rm -rf "$srv"' EXIT
URL=$("$script" start "$srv") || { echo "FAIL cannot start etcd"; exit 1; }
etcd_setup "$DLOCK" "$URL" python3
trap 'etcd_cleanup; "$script" stop "$srv" >/dev/null 2>&1; rm -rf "$srv"' EXIT
hp=${URL#etcd://}
ectl user add root --new-user-password=root-pw --interactive=false >/dev/null &&
    ectl user grant-role root root >/dev/null &&
    ectl auth enable >/dev/null || { fail "auth enable"; finish; exit; }
ra() { ectl --user root:root-pw "$@" >/dev/null; }
ra user add ua --new-user-password=ua-pw --interactive=false
ra role add app
ra role grant-permission app readwrite --prefix=true t43/app/
ra user grant-role ua app
ra user add ub --new-user-password=ub-pw --interactive=false
ra role add appx
ra role grant-permission appx readwrite --prefix=true t43/app
ra user grant-role ub appx
# The role on app/: the refusal names the records and the grant.
out=$("$DLOCK" -s "etcd://ua:ua-pw@$hp?prefix=t43/" run --once app/once -- echo ran 2>&1)
case $out in
*"permission denied"*"(t43/app, a byte 0xff, runs/once, start/once, keep/once and suspend/once) lie outside a role on 't43/app/' (grant it on 't43/app')"*)
    ok "a role on app/: --once says where the records are: $out" ;;
*) fail "a role on app/: --once: $out" ;;
esac
U="etcd://ub:ub-pw@$hp?prefix=t43/"
out=$("$DLOCK" -s "$U" run app/job -- echo ran 2>&1)
[ "$out" = ran ] && ok "a role on app: dlock run app/job ran" || fail "dlock run app/job: $out"
out=$("$DLOCK" -s "$U" run --once app/once -- echo ran 2>&1)
[ "$out" = ran ] && ok "--once app/once ran" || fail "--once app/once: $out"
out=$("$DLOCK" -s "$U" run --once app/once -- echo ran 2>&1)
case $out in *"already ran"*) ok "a second --once app/once skipped ($out)" ;;
*) fail "a second --once app/once: $out" ;; esac
out=$("$DLOCK" -s "$U" run --once-per 1h app/per -- echo ran 2>&1)
[ "$out" = ran ] && ok "--once-per app/per ran" || fail "--once-per app/per: $out"
out=$("$DLOCK" -s "$U" run --once-per 1h app/per -- echo ran 2>&1)
[ "$out" != ran ] && [ -n "$out" ] && ok "a second --once-per app/per skipped ($out)" ||
    fail "a second --once-per app/per: $out"
out=$("$DLOCK" -s "$U" history app/job 2>&1)
case $out in *"exited 0"*) ok "history app/job: $out" ;;
*) fail "history app/job: $out" ;; esac
finish
