#!/bin/sh
# Runs one test (its path and arguments) and adds how long it took to its log as a TAP comment,
# so that the slow tests can be found (contrib/sanitize.sh lists them), and, with CP_TEST_TIMES
# set to a file, a line "SECONDS BUILD-DIR TEST" there (contrib/quickstart.sh test prints the
# slowest of every stage, distcheck's included, whose logs are gone by then).
start=$(date +%s)
rc=0
"$@" || rc=$?
took=$(($(date +%s) - start))
echo "# took $took s"
[ -z "${CP_TEST_TIMES:-}" ] || echo "$took $(basename "$PWD") $1" >>"$CP_TEST_TIMES"
exit $rc
