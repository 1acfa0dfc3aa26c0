#!/bin/bash
# Collect a collprof campaign (campaign.sbatch) once its array job has ended:
#
#   sbatch --dependency=afterany:<array job id> collect.sh campaign_<array job id>
#   bash collect.sh campaign_<array job id>          # or by hand
#
# Writes into the campaign directory:
#   index.tsv   one line per array task: task, job, matrix, backend, exit status, result
#               (PASSED/FAILED/missing) and the task's summary file
#   report.txt  collprof-report summary of every .h5 file, when collprof-report is on PATH
#               (or $COLLPROF_REPORT)
# Exit status: 0 when every task that ran passed, 1 otherwise, 2 for bad usage.
#
#SBATCH --job-name=collprof-collect
#SBATCH --ntasks=1
#SBATCH --time=00:10:00
#SBATCH --output=collprof-collect-%j.out
set -eu

dir=${1:-}
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "usage: collect.sh CAMPAIGN_DIR (a campaign_<array job id> directory)" >&2
    exit 2
fi
if [ ! -s "$dir/tasks.tsv" ]; then
    echo "collect: $dir/tasks.tsv is missing or empty: no task of the campaign ended" >&2
    exit 1
fi

bad=0
{
    printf 'task\tjob\tmatrix\tbackend\texit\tresult\tsummary\n'
    sort -n "$dir/tasks.tsv" | while IFS=$'\t' read -r task job matrix backend rc; do
        summary=$(find "$dir" -maxdepth 1 -name "collprof_*_j${job}_*.txt" | sort | head -n 1)
        result=missing
        if [ -n "$summary" ]; then
            result=$(sed -n 's/^result: *\([A-Z]*\).*/\1/p' "$summary" | head -n 1)
            result=${result:-incomplete}
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$task" "$job" "$matrix" "$backend" "$rc" \
            "$result" "${summary##*/}"
    done
} >"$dir/index.tsv"
ntask=$(($(wc -l <"$dir/index.tsv") - 1))
npass=$(awk -F'\t' 'NR > 1 && $5 == 0 && $6 == "PASSED"' "$dir/index.tsv" | wc -l)
[ "$npass" -eq "$ntask" ] || bad=1

report=${COLLPROF_REPORT:-$(command -v collprof-report || true)}
if [ -n "$report" ] && ls "$dir"/collprof_*.h5 >/dev/null 2>&1; then
    "$report" summary "$dir"/collprof_*.h5 >"$dir/report.txt" 2>&1 || bad=1
fi
echo "collect: $npass of $ntask tasks passed; index: $dir/index.tsv${report:+, report: $dir/report.txt}"
exit "$bad"
