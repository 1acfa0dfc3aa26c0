/*
 * collprof result schema, version 1: every table, dataset and attribute of
 * the HDF5 result file, declared once.  The HDF5 writer
 * (src/output/h5writer.c), the text summary and collprof-report's reader
 * (src/report/read/h5read.c) all work from these lists, through the descriptor
 * tables of src/schema/h5schema.h.  docs/hdf5-schema.md describes the file.
 *
 * Each X(name, kind, size, opt, unit, doc) row is one column of a table.
 * kind is one of STR (fixed-size string of `size` bytes, NUL padded), I32,
 * I64, U64 or F64.  opt is 1 for a column added after the first files of
 * schema 1.0 were written: a reader takes a file without it (the field is
 * left 0 or empty).  Adding a column appends a row with opt 1 and bumps
 * COLLPROF_SCHEMA_VERSION_MINOR; renaming or removing one bumps MAJOR.
 */
#ifndef COLLPROF_SCHEMA_H
#define COLLPROF_SCHEMA_H

#define COLLPROF_SCHEMA_NAME          "collprof-results"
#define COLLPROF_SCHEMA_VERSION_MAJOR 1
#define COLLPROF_SCHEMA_VERSION_MINOR 13

/* clang-format off */
/* /results: one row per matrix cell, appended as the run goes */
#define COLLPROF_RESULT_COLUMNS(X)                                                                   \
    X(cell,         I32,    0, 0, "",       "index of the cell in the run, names /cells/<cell>")     \
    X(backend,      STR,   32, 0, "",       "backend plugin name")                                   \
    X(variant,      STR,   64, 0, "",       "variant (algorithm choice); default = library's own")   \
    X(op,           STR,   16, 0, "",       "operation")                                             \
    X(dtype,        STR,   16, 0, "",       "element type")                                          \
    X(redop,        STR,    8, 0, "",       "reduction operator, or none")                           \
    X(root,         I32,    0, 0, "",       "root rank of rooted operations, else 0")                \
    X(in_place,     I32,    0, 0, "",       "1 when the operation ran in place")                     \
    X(imbalance,    STR,   96, 0, "",       "traffic pattern of the variable ops, else empty")       \
    X(count,        U64,    0, 0, "elements", "element count of the largest buffer")                 \
    X(bytes,        U64,    0, 0, "B",      "S of algBW = S / time")                                 \
    X(iterations,   I32,    0, 0, "",       "timed iterations")                                      \
    X(warmup,       I32,    0, 0, "",       "warm-up iterations")                                    \
    X(time_mean_us, F64,    0, 0, "us",     "mean over iterations of the max over ranks")            \
    X(time_min_us,  F64,    0, 0, "us",     "minimum of the per-iteration maxima")                   \
    X(time_p50_us,  F64,    0, 0, "us",     "median (nearest rank) of the per-iteration maxima")     \
    X(time_p95_us,  F64,    0, 0, "us",     "95th percentile (nearest rank)")                        \
    X(time_p99_us,  F64,    0, 0, "us",     "99th percentile (nearest rank)")                        \
    X(time_max_us,  F64,    0, 0, "us",     "maximum of the per-iteration maxima")                   \
    X(algbw_gbs,    F64,    0, 0, "GB/s",   "bytes / mean time, 1e9 B/s")                            \
    X(busbw_gbs,    F64,    0, 0, "GB/s",   "algBW x the operation's bus factor")                    \
    X(wrong,        U64,    0, 0, "",       "elements that differ from the exact result, all ranks") \
    X(status,       STR,   16, 0, "",       "ok, wrong, error, unsupported, skipped, timeout")       \
    X(error,        STR,  256, 0, "",       "why a cell did not give a result, else empty")          \
    X(start_time,   F64,    0, 0, "s",      "cell start, seconds since 1970-01-01 UTC")              \
    X(memory,       STR,    8, 1, "",       "buffer memory: host, pinned or device (added in 1.1)")  \
    X(timer,        STR,   64, 1, "",       "clock of the samples (added in 1.2)")                   \
    X(allocation,   STR,   64, 1, "",       "how the buffers were allocated (added in 1.2)")  \
    X(device,       STR,   64, 1, "",       "host, or the accelerator (added in 1.2)")              \
    X(split,        STR,    8, 1, "",       "node or cross group (--split), empty: every rank (1.3)") \
    X(group_ranks,  I32,    0, 1, "",       "ranks in rank 0's group of a split cell, else 0 (1.3)") \
    X(copy_gbs,     F64,    0, 1, "GB/s",   "memcpy rate at this size, one thread per local rank (1.3)") \
    X(copy1_gbs,    F64,    0, 1, "GB/s",   "memcpy rate at this size, one thread (1.3)") \
    X(repeats,      I32,    0, 1, "",       "runs of the cell (--repeats), 1 for one; 0: before 1.4") \
    X(rep_p50_us,   F64,    0, 1, "us",     "median of the repeats' p50s: the cell's figure (1.4)") \
    X(ci_lo_us,     F64,    0, 1, "us",     "interval of rep_p50_us, lower end; 0: none (1.4)") \
    X(ci_hi_us,     F64,    0, 1, "us",     "interval of rep_p50_us, upper end; 0: none (1.4)") \
    X(ci_level,     F64,    0, 1, "",       "the interval's exact coverage, e.g. 0.96875 (1.4)") \
    X(bimodal,      I32,    0, 1, "",       "1 when the repeats form two clusters (1.4)")         \
    X(mode_lo_us,   F64,    0, 1, "us",     "bimodal: the faster cluster's median p50 (1.4)")    \
    X(mode_lo_n,    I32,    0, 1, "",       "bimodal: repeats in the faster cluster (1.4)")      \
    X(mode_hi_us,   F64,    0, 1, "us",     "bimodal: the slower cluster's median p50 (1.4)")    \
    X(mode_hi_n,    I32,    0, 1, "",       "bimodal: repeats in the slower cluster (1.4)")      \
    X(overall_us,   F64,    0, 1, "us",     "non-blocking op: post + overlapped compute + wait (1.5)") \
    X(comm_us,      F64,    0, 1, "us",     "non-blocking op: post + wait, nothing overlapped (1.5)") \
    X(compute_us,   F64,    0, 1, "us",     "non-blocking op: the calibrated host compute (1.5)") \
    X(overlap_pct,  F64,    0, 1, "%",      "non-blocking op: OSU's overlap, 0..100; else 0 (1.5)") \
    X(sync,         STR,   16, 1, "",       "barrier, none or batch (--sync); empty: before 1.5") \
    X(batch,        I32,    0, 1, "",       "operations per sample, time / batch (1.5)")          \
    X(rotate,       I32,    0, 1, "",       "buffer slots the operations cycled through (1.5)")   \
    X(dcopy_gbs,    F64,    0, 1, "GB/s",   "device memory: device-to-device copy rate at this size; 0: none (1.6)") \
    X(check,        STR,   16, 1, "",       "outputs checked (--check): last, every, sample:K or none; empty: before 1.8")

/* /ranks: one row per rank */
#define COLLPROF_RANK_COLUMNS(X)                                                        \
    X(rank,         I32,    0, 0, "",       "rank in the job, also the row index")      \
    X(hostname,     STR,   64, 0, "",       "host the rank ran on")                     \
    X(node_id,      I32,    0, 0, "",       "node index, by order of first appearance") \
    X(local_rank,   I32,    0, 0, "",       "rank among those on its node")             \
    X(pid,          I64,    0, 0, "",       "process id")                               \
    X(cpu_affinity, STR,  256, 0, "",       "CPU list the rank may run on, e.g. 0-3,8") \
    X(device,       STR,   64, 0, "",       "host, or the accelerators its backends used")  \
    X(transport,    STR,  256, 1, "",       "per backend, what it communicated over (added in 1.2)") \
    X(log,          STR,  256, 1, "",       "--log-dir: the rank's own log file, else empty (1.3)")

/* /backends: one row per backend plugin found */
#define COLLPROF_BACKEND_COLUMNS(X)                                                                          \
    X(name,            STR,   32, 0, "",       "backend plugin name")                                        \
    X(plugin_version,  STR,   32, 0, "",       "version of the plugin")                                      \
    X(library_version, STR,  128, 0, "",       "version of the library behind it")                           \
    X(state,           STR,  256, 0, "",       "initialised, not used, or failed: <reason>")                 \
    X(variants,        STR, 2048, 0, "",       "the variants offered, comma-separated")                      \
    X(link_gbps,       F64,    0, 1, "Gbit/s", "link rate the backend reported, 0 = none (added after 1.0)") \
    X(options,         STR, 1024, 1, "",       "effective options, NAME=VALUE, defaults marked (added in 1.2)") \
    X(study,           STR,   64, 1, "",       "ops whose variants it compares in a study table (added in 1.2)")

/* /environment: the variables that shape communication */
#define COLLPROF_ENV_COLUMNS(X)                                            \
    X(name,  STR,  128, 0, "",       "variable name")                      \
    X(value, STR, 1024, 0, "",       "its value (<redacted> for secrets)")

/* /links: the link sweep (collprof --link-sweep), one row per backend x message size x
 * pair of nodes; absent from files of other runs and from files before 1.2.  Read as a
 * matrix: for one backend and kind, row (node_a, node_b) is the link between them. */
#define COLLPROF_LINK_COLUMNS(X)                                                                         \
    X(backend,      STR,   32, 0, "",       "backend plugin name")                                       \
    X(kind,         STR,   16, 0, "",       "bandwidth (the large message) or latency (the small one)")  \
    X(bytes,        U64,    0, 0, "B",      "message size, sent each way at once")                       \
    X(node_a,       I32,    0, 0, "",       "node index of one end (node_a < node_b)")                   \
    X(node_b,       I32,    0, 0, "",       "node index of the other end")                               \
    X(rank_a,       I32,    0, 0, "",       "the rank that ran on node_a (its local rank 0)")            \
    X(rank_b,       I32,    0, 0, "",       "the rank that ran on node_b")                               \
    X(round,        I32,    0, 0, "",       "round of the schedule the pair ran in")                     \
    X(iterations,   I32,    0, 0, "",       "timed iterations")                                          \
    X(time_mean_us, F64,    0, 0, "us",     "mean over iterations of the max over the two ranks")        \
    X(time_min_us,  F64,    0, 0, "us",     "minimum of those maxima")                                   \
    X(time_p50_us,  F64,    0, 0, "us",     "median (nearest rank) of those maxima")                     \
    X(bw_gbs,       F64,    0, 0, "GB/s",   "bytes / mean time, each direction, 1e9 B/s")                \
    X(bw_best_gbs,  F64,    0, 0, "GB/s",   "bytes / the fastest iteration: what the link can do")       \
    X(wrong,        U64,    0, 0, "",       "wrong elements on the pair's two ranks")                    \
    X(status,       STR,   16, 0, "",       "ok, wrong, error, unsupported, skipped, timeout; a screen's: nosetup, unreachable") \
    X(error,        STR,  256, 0, "",       "why the pair gave no result, else empty")      \
    X(path,         STR,   16, 1, "",       "path class: same-switch, cross-switch (Slurm's tree topology) or any; empty: before 1.10") \
    X(nic_path,     STR,   16, 1, "",       "a screen pair's path check (bandwidth rows): ok, other-nic, excess or unknown, the graver end's; empty: not checked, or before 1.12") \
    X(nic_ratio,    F64,    0, 1, "",       "NIC bytes per operation over the message size, the larger end's; 0: not checked") \
    X(nic_via,      STR,   64, 1, "",       "the interfaces that carried the pair's bytes at its two ends, comma-separated") \
    X(nic_expected, STR,   64, 1, "",       "the interfaces the backend was meant to use (as the ends read them); empty: not known")

/* /screen: the screen's verdict (collprof --screen, added in 1.7), one row per node and one
 * per suspect link, per backend; absent from other runs' files.  The pairs it measured are
 * /links rows (the random rounds first, then the confirmation round). */
#define COLLPROF_SCREEN_COLUMNS(X)                                                                       \
    X(backend,       STR,   32, 0, "",      "backend plugin name")                                       \
    X(what,          STR,    8, 0, "",      "node, link or verify (the validation collective, 1.9)")     \
    X(node_a,        I32,    0, 0, "",      "the node (a link: one end; -1 for verify)")                 \
    X(node_b,        I32,    0, 0, "",      "a link's other end; -1 for a node")                         \
    X(host_a,        STR,   64, 0, "",      "node_a's host name")                                        \
    X(host_b,        STR,   64, 0, "",      "node_b's host name; empty for a node")                      \
    X(verdict,       STR,   16, 0, "",      "healthy, slow, unreachable, inconclusive or untested; verify: passed, failed, inconclusive or skipped") \
    X(score,         F64,    0, 0, "",      "node: median, link: worst of its pairs' min(bw/ref, ref lat/lat)")   \
    X(suspect,       I32,    0, 0, "",      "1 when the random rounds made it a suspect")                \
    X(partners,      I32,    0, 0, "",      "judged partners in the random and re-pairing rounds")       \
    X(slow_partners, I32,    0, 0, "",      "of those, the slow ones")                                   \
    X(confirm_with,  I32,    0, 0, "",      "node of its confirmation pair, -1 when none")               \
    X(ref_bw_gbs,    F64,    0, 0, "GB/s",  "the reference bandwidth (median of the random rounds)")     \
    X(ref_lat_us,    F64,    0, 0, "us",    "the reference latency")                                     \
    X(reference,     STR,   16, 0, "",      "screen (its own pairs' median) or baseline")                \
    X(threshold,     F64,    0, 0, "",      "slow below threshold x the reference")                      \
    X(seed,          U64,    0, 0, "",      "the matchings' seed (--seed)")                              \
    X(rounds,        I32,    0, 0, "",      "rounds run, the confirmation included")                     \
    X(evidence,      STR,  512, 0, "",      "its pairs: outcome, score, partner, phase")   \
    X(path_refs,     STR,  192, 1, "",      "judged by path class: each class's reference; else empty (1.10)")

/* /baseline: a baseline file's only table (collprof-report baseline -o FILE, read by
 * collprof --screen --baseline FILE; root attribute schema "collprof-baseline"): per backend,
 * kind, message size and path class, the healthy pairs' distribution. */
#define COLLPROF_BASELINE_COLUMNS(X)                                                                     \
    X(backend,       STR,   32, 0, "",      "backend plugin name")                                       \
    X(kind,          STR,   16, 0, "",      "bandwidth or latency")                                      \
    X(bytes,         U64,    0, 0, "B",     "message size, sent each way at once")                       \
    X(path_class,    STR,   16, 0, "",      "any (every pair), same-switch or cross-switch (1.10)")      \
    X(median,        F64,    0, 0, "",      "median pair: GB/s (bandwidth) or us (latency), of p50s")    \
    X(mad_log,       F64,    0, 0, "",      "median absolute deviation of the pairs' natural logarithms") \
    X(pairs,         I64,    0, 0, "",      "healthy pairs behind it")                                   \
    X(files,         I32,    0, 0, "",      "result files they came from")

/* The trace model (collprof-report import --trace, docs/replay.md): a real job's communication
 * as the replay will issue it.  /trace_ops: per rank, its operations in the order it issued
 * them (rank, seq); /trace_groups: the process groups (communicators) the ops name, their
 * members as global ranks in /trace_members[member_off .. member_off + size); the split sizes
 * of the variable ops in /trace_splits.  Absent from other files and from files before them. */
#define COLLPROF_TRACE_OP_COLUMNS(X)                                                                     \
    X(rank,          I32,    0, 0, "",      "global rank that issued it")                                \
    X(seq,           I64,    0, 0, "",      "its place in the rank's order, from 0")                     \
    X(op,            STR,   16, 0, "",      "collprof's operation, send, recv or wait")                  \
    X(dtype,         STR,   16, 0, "",      "collprof's element type; empty: not recorded (bytes only)") \
    X(in_count,      U64,    0, 0, "elements", "elements sent (input); 0: none or not recorded")      \
    X(out_count,     U64,    0, 0, "elements", "elements received (output); 0: none or not recorded") \
    X(bytes,         U64,    0, 0, "B",     "the message size as recorded: the larger buffer's bytes")  \
    X(group,         I32,    0, 0, "",      "its process group: the /trace_groups row")                  \
    X(root,          I32,    0, 0, "",      "rooted ops: the root's global rank; -1: none or not recorded") \
    X(peer,          I32,    0, 0, "",      "send, recv: the peer's global rank; -1: none")              \
    X(req,           I64,    0, 0, "",      "async: the request it issues (a wait: the one it waits on); -1: blocking") \
    X(coalesced,     I64,    0, 0, "",      "ops issued as one group call share a number; -1: none")     \
    X(split_off,     I64,    0, 0, "",      "variable ops: in splits at /trace_splits[split_off..+nsplit), then the out splits; -1: none") \
    X(nsplit,        I32,    0, 0, "",      "variable ops: split sizes each way (the group size); 0: none") \
    X(t_issue_ns,    I64,    0, 0, "ns",    "issue time, the source's clock; -1: not recorded")          \
    X(dur_ns,        I64,    0, 0, "ns",    "duration as the source measured it; -1: not recorded")      \
    X(source_seq,    I64,    0, 0, "",      "the source's own sequence number; -1: none")                \
    X(source_name,   STR,   32, 0, "",      "the source's name of the op, verbatim")

#define COLLPROF_TRACE_GROUP_COLUMNS(X)                                                                  \
    X(group,         I32,    0, 0, "",      "group id, also the row index")                              \
    X(name,          STR,   64, 0, "",      "the source's name: pg name, communicator name or pg_id")    \
    X(desc,          STR,   64, 0, "",      "the source's description of it, else empty")                \
    X(source_hash,   STR,   32, 0, "",      "the key it was joined on: communicator hash, pg name or pg_id") \
    X(size,          I32,    0, 0, "",      "members")                                                   \
    X(member_off,    I64,    0, 0, "",      "its members (global ranks, in group-rank order) at /trace_members[member_off..+size)")

#define COLLPROF_TRACE_MEMBER_COLUMNS(X)                                                                 \
    X(rank,          I32,    0, 0, "",      "global rank of a group member")

#define COLLPROF_TRACE_SPLIT_COLUMNS(X)                                                                  \
    X(count,         U64,    0, 0, "elements", "one split size of a variable op")

/* The trace tables: X(table, columns, row type), like COLLPROF_TABLES. */
#define COLLPROF_TRACE_TABLES(X)                                                                   \
    X(trace_ops, COLLPROF_TRACE_OP_COLUMNS, collprof_trace_op_row_t)                               \
    X(trace_groups, COLLPROF_TRACE_GROUP_COLUMNS, collprof_trace_group_row_t)                      \
    X(trace_members, COLLPROF_TRACE_MEMBER_COLUMNS, collprof_trace_member_row_t)                   \
    X(trace_splits, COLLPROF_TRACE_SPLIT_COLUMNS, collprof_trace_split_row_t)

/* /replay: a replay of a trace (collprof --replay, docs/replay.md), in a run's file; absent
 * from other files.  Rows of three kinds (what): "op", one per rank and op of the trace in its
 * order; "type", one per operation x message size x group, the op rows of every rank folded;
 * "trace", one for the whole trace; under --gaps trace or compute, "rank", one per rank: its
 * issue errors, its span against its recorded window (added without a version bump: the table
 * came after 1.11's files and has had no release). */
#define COLLPROF_REPLAY_COLUMNS(X)                                                                       \
    X(what,          STR,    8, 0, "",      "op, type, trace or rank")                                    \
    X(backend,       STR,   32, 0, "",      "backend plugin name")                                       \
    X(rank,          I32,    0, 0, "",      "op: the global rank that issued it; else -1")               \
    X(seq,           I64,    0, 0, "",      "op: its seq in /trace_ops; else -1")                        \
    X(op,            STR,   16, 0, "",      "collprof's operation (send, recv, wait as recorded); trace: empty") \
    X(dtype,         STR,   16, 0, "",      "element type replayed")                                     \
    X(bytes,         U64,    0, 0, "B",     "the message size as recorded")                              \
    X(group,         I32,    0, 0, "",      "its process group (/trace_groups row); trace: -1")          \
    X(group_size,    I32,    0, 0, "",      "members of the group")                                      \
    X(ops,           I64,    0, 0, "",      "op: 1; type: its op rows; trace: every op row")             \
    X(iterations,    I32,    0, 0, "",      "replays of the trace (--replay-iters)")                     \
    X(time_p50_us,   F64,    0, 0, "us",    "op: p50 over the replays; type: median of its ops' p50; trace: the slowest rank's p50 of its ops' sum") \
    X(recorded_us,   F64,    0, 0, "us",    "the recorded duration (type: median; trace: the recorded window); -1: none") \
    X(ratio,         F64,    0, 0, "",      "time_p50_us / recorded_us; 0: nothing recorded")             \
    X(wrong,         U64,    0, 0, "",      "wrong elements, summed over the replays --check checked (type, trace: summed)")        \
    X(status,        STR,   16, 0, "",      "ok, wrong, error, unsupported or skipped (type, trace: the worst)")      \
    X(note,          STR,  128, 0, "",      "why an op was not replayed as recorded, else empty") \
    X(replayed_bytes, U64,   0, 1, "B",     "op, type: S of algBW = S / time, the replayed transfer's as a matrix cell's; 0: not replayed (1.12)") \
    X(algbw_gbs,     F64,    0, 1, "GB/s",  "op, type: replayed_bytes / time_p50_us, 1e9 B/s; 0: none (1.12)") \
    X(busbw_gbs,     F64,    0, 1, "GB/s",  "op, type: algbw_gbs x the op's bus factor on the group's size (1.12)") \
    X(issue_us,      F64,    0, 1, "us",    "op: its issue, from its rank's exit of the barrier that starts a replay, p50; else -1 (1.12)") \
    X(skew_us,       F64,    0, 1, "us",    "op: its group's spread of issue_us for it; type: the median over its ops; -1: none (1.12)") \
    X(straggler,     I32,    0, 1, "",      "op: its group's member that issued it last; type: the rank most often last; -1: none (1.12)") \
    X(straggler_ops, I64,    0, 1, "",      "type: the ops of its group the straggler issued last (of ops / group_size) (1.12)") \
    X(critical_us,   F64,    0, 1, "us",    "trace: the critical path's length; op: its cost on it, 0: not on it; type: its ops' sum; -1: none (1.12)") \
    X(exposed_us,    F64,    0, 1, "us",    "communication time not overlapped with the rank's compute (--gaps compute); -1: not measured (1.12)") \
    X(issue_err_p50_us, F64, 0, 1, "us",    "--gaps: |issue - target|, p50 (op: over the replays; rank: its ops x replays; type, trace: the largest); -1: none (1.12)") \
    X(issue_err_p99_us, F64, 0, 1, "us",    "--gaps: |issue - target|, p99, as issue_err_p50_us (1.12)")         \
    X(issue_err_max_us, F64, 0, 1, "us",    "--gaps: |issue - target|, the largest, as issue_err_p50_us (1.12)") \
    X(late,          I64,    0, 1, "",      "--gaps: issues past their target (the op before ended late), summed (1.12)") \
    X(overlapped_us, F64,    0, 1, "us",    "--gaps compute: op: its flight (its post to the end of the call that completed it) less exposed_us, p50; type: median; trace: the rank of the largest exposed_us, its sum; -1: not measured (1.13)")

#define COLLPROF_REPLAY_TABLES(X) X(replay, COLLPROF_REPLAY_COLUMNS, collprof_replay_row_t)

/* /counters: hardware and host counters around each cell (collprof --counters, added in
 * 1.11; docs/metrics.md), one row per cell, node and counter, read by the node's first rank
 * just before and just after the cell's warm-up and timed iterations; absent from files
 * without any (--counters none, or older files). */
#define COLLPROF_COUNTER_COLUMNS(X)                                                                      \
    X(cell,          I32,    0, 0, "",      "the cell's index, as in /results")                          \
    X(node,          I32,    0, 0, "",      "node index, as in /ranks")                                  \
    X(host,          STR,   64, 0, "",      "the node's host name")                                      \
    X(source,        STR,    8, 0, "",      "net, ib, efa, host or gpu")                                 \
    X(name,          STR,   64, 0, "",      "device/port/counter, interface/statistic, gpuN/figure")     \
    X(unit,          STR,   16, 0, "",      "of delta: B, packets, events, jiffies, MHz, W, C, ...")     \
    X(kind,          STR,    8, 0, "",      "counter (delta: the increase) or gauge (the value after)")  \
    X(delta,         F64,    0, 0, "",      "the increase over the interval, or a gauge's value after")  \
    X(per_op,        F64,    0, 0, "",      "counter: delta / ops; gauge: 0")                            \
    X(ops,           I64,    0, 0, "",      "operations run between the two readings (all repeats)")

/*
 * The tables: X(table, columns, row type).  Each is a 1-D dataset of the
 * compound type of its row, at the root of the file.
 */
#define COLLPROF_TABLES(X)                                                                         \
    X(results, COLLPROF_RESULT_COLUMNS, collprof_result_row_t)                                     \
    X(ranks, COLLPROF_RANK_COLUMNS, collprof_rank_row_t)                                           \
    X(backends, COLLPROF_BACKEND_COLUMNS, collprof_backend_row_t)                                  \
    X(environment, COLLPROF_ENV_COLUMNS, collprof_env_row_t)                                      \
    X(links, COLLPROF_LINK_COLUMNS, collprof_link_row_t)                                           \
    X(screen, COLLPROF_SCREEN_COLUMNS, collprof_screen_row_t)                                       \
    X(baseline, COLLPROF_BASELINE_COLUMNS, collprof_baseline_row_t)                                 \
    X(counters, COLLPROF_COUNTER_COLUMNS, collprof_counter_row_t)

/*
 * Root attributes: X(name, kind, doc), kind STR (variable-length UTF-8
 * string), I64 or F64 (scalars).  Readers take a file without any of them
 * but `schema`.  Under Slurm the writer adds string attributes slurm_*
 * (src/slurm/slurm_meta.c) besides these.  The imported_* attributes are
 * set in files of `collprof-report import` (other tools' results,
 * docs/hdf5-schema.md "Imported files") and empty in a run's; readers that
 * do not know them ignore them, so they came without a version bump.
 */
#define COLLPROF_ROOT_ATTRS(X)                                                                     \
    X(schema,               STR, "the schema name, " COLLPROF_SCHEMA_NAME)                         \
    X(schema_version,       STR, "\"major.minor\"")                                                \
    X(schema_version_major, I64, "schema major version")                                         \
    X(schema_version_minor, I64, "schema minor version")                                         \
    X(collprof_version,     STR, "the collprof that wrote the file")                             \
    X(created,              STR, "UTC, ISO 8601")                                                \
    X(command_line,         STR, "argv, joined by spaces")                                       \
    X(world_size,           I64, "ranks")                                                        \
    X(node_count,           I64, "nodes")                                                        \
    X(launcher,             STR, "self, mpirun, slurm, pmix or none")                            \
    X(pmix_version,         STR, "the PMIx library of the ranks")                                \
    X(tag,                  STR, "--tag")                                                        \
    X(timing,               STR, "the measurement policy")                                       \
    X(check,                STR, "exact or disabled")                                            \
    X(link_gbps,            F64, "--link-gbps, 0 = not given (absent before collprof 0.2)")      \
    X(status,               STR, "complete, incomplete (killed or still running) or aborted")  \
    X(imported_from,        STR, "collprof-report import: the tool that measured (nccl-tests, osu)") \
    X(imported_version,     STR, "that tool's version where its output says it")                \
    X(imported_format,      STR, "the format read: nccl-tests-json 3, nccl-tests-text, osu-text") \
    X(imported_file,        STR, "the name of the file read (its last path component)")

/*
 * /cells/<cell> (the cell number, COLLPROF_CELL_NAME_FORMAT): the raw data
 * of a cell that ran.  Datasets X(id, name, kind, dims, doc); the group's
 * string attributes repeat the row's COLLPROF_CELL_ATTRS columns.
 */
#define COLLPROF_CELLS_GROUP       "cells"
#define COLLPROF_CELL_NAME_FORMAT  "%06d"
#define COLLPROF_CELL_DATASETS(X)                                                                  \
    X(SAMPLES,    samples_us,   F64, 2, "[iterations x ranks] every rank's time of each iteration") \
    X(RANK_MEAN,  rank_mean_us, F64, 1, "[ranks] each rank's mean time")                         \
    X(SEND_BYTES, send_bytes,   U64, 1, "[ranks] variable ops: bytes each rank sent")              \
    X(RECV_BYTES, recv_bytes,   U64, 1, "[ranks] variable ops: bytes each rank received")          \
    X(REP_P50,    repeat_p50_us, F64, 1, "[repeats] each repeat's p50 (1.4; repeats > 1 only)")  \
    X(REP_ITERS,  repeat_iterations, U64, 1, "[repeats] each repeat's timed iterations, in the order of samples_us (1.4)")
#define COLLPROF_CELL_ATTRS(X) X(backend) X(variant) X(op)

/*
 * /cells/<cell>/provenance, added in 1.2: one row per rank, written only
 * where the ranks' timer, allocation or device differ (the /results row
 * then says "per rank" in those columns).  A table of the same kind as
 * those above, but inside the cell's group: X(table, columns, row type).
 */
#define COLLPROF_PROVENANCE_COLUMNS(X)                                                             \
    X(rank,       I32,    0, 0, "",       "rank")                                                  \
    X(timer,      STR,   64, 0, "",       "clock of its samples")                                  \
    X(allocation, STR,   64, 0, "",       "how its buffers were allocated")                        \
    X(device,     STR,   64, 0, "",       "host, or its accelerator")                              \
    X(transport,  STR,  128, 0, "",       "what it communicated over")
#define COLLPROF_CELL_TABLES(X) X(provenance, COLLPROF_PROVENANCE_COLUMNS, collprof_provenance_row_t)
/* clang-format on */

#include <stdint.h>

/* One row of a table in memory; the HDF5 compound type has the same fields. */
#define COLLPROF_ROW_FIELD_STR(name, size)                   char name[size];
#define COLLPROF_ROW_FIELD_I32(name, size)                   int32_t name;
#define COLLPROF_ROW_FIELD_I64(name, size)                   int64_t name;
#define COLLPROF_ROW_FIELD_U64(name, size)                   uint64_t name;
#define COLLPROF_ROW_FIELD_F64(name, size)                   double name;
#define COLLPROF_ROW_FIELD(name, kind, size, opt, unit, doc) COLLPROF_ROW_FIELD_##kind(name, size)

typedef struct collprof_result_row {
    COLLPROF_RESULT_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_result_row_t;

typedef struct collprof_rank_row {
    COLLPROF_RANK_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_rank_row_t;

typedef struct collprof_backend_row {
    COLLPROF_BACKEND_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_backend_row_t;

typedef struct collprof_env_row {
    COLLPROF_ENV_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_env_row_t;

typedef struct collprof_provenance_row {
    COLLPROF_PROVENANCE_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_provenance_row_t;

typedef struct collprof_link_row {
    COLLPROF_LINK_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_link_row_t;

typedef struct collprof_screen_row {
    COLLPROF_SCREEN_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_screen_row_t;

typedef struct collprof_baseline_row {
    COLLPROF_BASELINE_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_baseline_row_t;

typedef struct collprof_trace_op_row {
    COLLPROF_TRACE_OP_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_trace_op_row_t;

typedef struct collprof_trace_group_row {
    COLLPROF_TRACE_GROUP_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_trace_group_row_t;

typedef struct collprof_trace_member_row {
    COLLPROF_TRACE_MEMBER_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_trace_member_row_t;

typedef struct collprof_trace_split_row {
    COLLPROF_TRACE_SPLIT_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_trace_split_row_t;

typedef struct collprof_replay_row {
    COLLPROF_REPLAY_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_replay_row_t;

typedef struct collprof_counter_row {
    COLLPROF_COUNTER_COLUMNS(COLLPROF_ROW_FIELD)
} collprof_counter_row_t;

/* The root attributes in memory: strings are borrowed (writer) or owned (reader). */
#define COLLPROF_ATTR_FIELD_STR(name)        const char *name;
#define COLLPROF_ATTR_FIELD_I64(name)        long long name;
#define COLLPROF_ATTR_FIELD_F64(name)        double name;
#define COLLPROF_ATTR_FIELD(name, kind, doc) COLLPROF_ATTR_FIELD_##kind(name)

typedef struct collprof_root_attrs {
    COLLPROF_ROOT_ATTRS(COLLPROF_ATTR_FIELD)
} collprof_root_attrs_t;

/* The kinds of columns, attributes and datasets. */
typedef enum collprof_kind {
    COLLPROF_STR,
    COLLPROF_I32,
    COLLPROF_I64,
    COLLPROF_U64,
    COLLPROF_F64
} collprof_kind_t;

#endif /* COLLPROF_SCHEMA_H */
