#!/bin/sh
# Sort a compute-sanitizer log into what matters and what does not:
#   - memory errors (invalid accesses, races, leaks, ...): any is a failure;
#   - CUDA API errors raised inside NCCL and handled there (its start-up
#     asks for kernels built for other GPUs; ncclMemAlloc tries a fabric
#     handle before a plain one): counted, not a failure;
#   - CUDA API errors from any other code (collprof's own calls): a failure.
# An API error's origin is the first "Host Frame" of its backtrace; errors
# the log did not print (--print-limit) cannot be sorted and fail.
# Usage: san_triage.sh LOG.  Prints one summary line (and the failing
# reports' first lines); exit status 0 clean, 1 not, 2 bad usage.
[ $# -eq 1 ] && [ -r "$1" ] || { echo "usage: san_triage.sh LOG (a readable compute-sanitizer log)" >&2; exit 2; }
awk '
    function close_report() {
        if (kind == "") return
        if (kind == "api" && frame ~ / in libnccl\.so/) nccl++
        else if (kind == "api") { other++; if (other <= 5) bad[++nb] = head }
        else { mem++; if (mem <= 5) bad[++nb] = head }
        kind = ""
    }
    /^========= ERROR SUMMARY: [0-9]+ errors? w[ea][rs]e? not printed/ { close_report(); unprinted += $4; next }
    /^========= (COMPUTE-SANITIZER|ERROR SUMMARY)/ { close_report(); next }
    /^========= [^ ]/ {
        close_report()
        head = $0; frame = ""
        kind = $0 ~ /^========= Program hit .* on CUDA API call to / ? "api" : "mem"
        next
    }
    /^=========         Host Frame:/ { if (frame == "") frame = $0; next }
    END {
        close_report()
        printf "compute-sanitizer: %d memory error(s), %d API error(s) outside NCCL, %d API error(s) inside NCCL (handled by NCCL)", mem, other, nccl
        if (unprinted > 0) printf ", %d not printed (raise --print-limit): not sorted", unprinted
        printf "\n"
        for (i = 1; i <= nb; i++) print "  " bad[i]
        exit mem + other + unprinted > 0 ? 1 : 0
    }' "$1"
