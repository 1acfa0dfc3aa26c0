# Shared by the bench/ and contrib/gpu/ scripts (sourced; POSIX sh).  Before sourcing: NAME.

die() {
    printf '%s: %s\n' "$NAME" "$*" >&2
    exit 1
}

bad_usage() {
    printf '%s: %s (see --help)\n' "$NAME" "$*" >&2
    exit 2
}

# need_arg OPTION ARGS-LEFT: the option has a value after it
need_arg() {
    [ "$2" -ge 2 ] || bad_usage "$1 needs a value"
}

# at_least VALUE MINIMUM: VALUE is a whole number >= MINIMUM
at_least() {
    case $1 in '' | *[!0-9]*) return 1 ;; esac
    [ "$1" -ge "$2" ]
}

# COLLPROF_BIN as an absolute path (./collprof, else the one on PATH, unless
# already set) and BUILD_DIR, the folder it is in.
find_collprof() {
    if [ -z "$COLLPROF_BIN" ]; then
        if [ -x ./collprof ]; then
            COLLPROF_BIN=./collprof
        else
            COLLPROF_BIN=$(command -v collprof 2>/dev/null) ||
                die "no collprof: run from the build tree, or pass --collprof PATH"
        fi
    fi
    [ -x "$COLLPROF_BIN" ] || die "$COLLPROF_BIN is not executable"
    COLLPROF_BIN=$(cd "$(dirname "$COLLPROF_BIN")" && pwd)/$(basename "$COLLPROF_BIN")
    BUILD_DIR=$(dirname "$COLLPROF_BIN")
}

# BASE (--base: another collprof build to run beside this one), when set, as an absolute path
find_base() {
    [ -n "$BASE" ] || return 0
    [ -x "$BASE" ] || die "--base: $BASE is not executable"
    BASE=$(cd "$(dirname "$BASE")" && pwd)/$(basename "$BASE")
}

# CSV_AWK: the awk function csv(line, f), which splits one CSV line (RFC 4180
# quoting, no embedded newlines) into f[1..n] and returns n.  Put it in front of
# a program: awk -v ... "$CSV_AWK"'PROGRAM' (plain awk text: mawk has no -e).
CSV_AWK='
function csv(line, f,    n, i, c, q, cur) {
    n = 0; cur = ""; q = 0
    for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (q) {
            if (c == "\"") {
                if (substr(line, i + 1, 1) == "\"") { cur = cur "\""; i++ } else q = 0
            } else cur = cur c
        } else if (c == "\"") q = 1
        else if (c == ",") { f[++n] = cur; cur = "" }
        else cur = cur c
    }
    f[++n] = cur
    return n
}
'
