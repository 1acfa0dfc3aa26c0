# Helpers of the collprof-report tests that run the report alone (rejudge.sh, drain.sh),
# sourced after lib.sh: the report's output in $WORK/rout and $WORK/rerr, its status in $rrc.
REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}
[ -x "$REPORT" ] || skip_all "collprof-report was not built (it needs HDF5)"
rep() {
    rrc=0
    timeout -k 5 60 "$REPORT" "$@" </dev/null >"$WORK/rout" 2>"$WORK/rerr" || rrc=$?
}
diag() { # STATUS: what the report printed (and the files in $DIAG_MORE), after a failed check
    # shellcheck disable=SC2086 # DIAG_MORE is a list of files
    [ "$1" -eq 0 ] || sed 's/^/# /' "$WORK/rout" "$WORK/rerr" ${DIAG_MORE:-} 2>/dev/null | head -n 40
}
check() { # DESCRIPTION (the last command's status is the check's)
    r=$?
    ok $r "$1"
    diag $r
}
one_error() { # REGEXP: exit 2 and one error line matching it
    [ "$rrc" -eq 2 ] && [ "$(wc -l <"$WORK/rerr")" -eq 1 ] &&
        grep -q "^collprof-report: error: .*$1" "$WORK/rerr"
}
