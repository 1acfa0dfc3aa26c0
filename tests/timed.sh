#!/bin/sh
# Runs one test (its path and arguments) and adds how long it took to its log as a TAP comment,
# so that the slow tests can be found (contrib/sanitize.sh and quickstart.sh list them).
start=$(date +%s)
rc=0
"$@" || rc=$?
echo "# took $(($(date +%s) - start)) s"
exit $rc
