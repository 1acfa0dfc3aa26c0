/*
 * collprof-report: post-analysis of collprof's HDF5 result files
 * (docs/hdf5-schema.md), loaded by libcpreader (reader.h).  The program
 * links libcpreader, HDF5 and libcpformat (with the layers below it) only, never PMIx, MPI or an
 * accelerator runtime.
 *
 * Its layers, top to bottom, each file calling only files below it: main.c; the commands
 * (cmd/cmd_*.c, import/cmd_import.c, export/cmd_export.c, plot/cmd_plot.c); their helpers
 * (the other files of cmd/, import/, export/ and plot/); what commands and helpers of several
 * folders share (best_cells.c, links_data.c); args.c; the reader (read/, reader.h); then
 * src/format, src/screen, src/colls and src/base.  Each folder's files, top to bottom (no
 * command calls another; the other folders' orders are in import.h, plot_int.h, reader.h):
 * src/report: main > best_cells > links_data > args
 * cmd: cmd_*.c (the commands, side by side) > rejudge, replay_rows > screen_drain, screen_json,
 *   simulate_grid
 * export: cmd_export > export_prom > export_jsonl
 */
#ifndef COLLPROF_REPORT_REPORT_H
#define COLLPROF_REPORT_REPORT_H

#include <stdio.h>

#include "screen/screen.h"
#include "screen/sim.h"
#include "format/best.h"
#include "report/read/reader.h"

/* exit statuses: 1 is reserved for "compare found a regression" */
#define CP_REPORT_EXIT_OK         0
#define CP_REPORT_EXIT_REGRESSION 1
#define CP_REPORT_EXIT_BAD        2

/* ---- the command line of a subcommand (args.c) ---------------------------- */

/** Print "collprof-report: error: <message>" on stderr. */
void cp_report_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

typedef struct cp_report_opt {
    const char *name; /**< long name without "--" */
    char short_name;  /**< 0 when none */
    int has_arg;
} cp_report_opt_t;

/** What a subcommand's operands are. */
typedef enum cp_report_files {
    CP_REPORT_FILES_ALL,      /**< FILE|DIR...: a DIR stands for its result files; all are read
                                   before run, which gets them all */
    CP_REPORT_FILES_EACH,     /**< FILE|DIR...: the same, but run once per file; a bad file is
                                   reported and skipped, and the exit status is 2 */
    CP_REPORT_FILES_ONE,      /**< FILE: one file, or a DIR holding exactly one */
    CP_REPORT_FILES_BASE_NEW, /**< BASE NEW: two such files */
    CP_REPORT_FILES_SOURCE,   /**< INPUT: one file that is not a result file (import): given to
                                   option() as CP_REPORT_OPERAND, never opened; run gets none */
    CP_REPORT_FILES_SOURCES,  /**< INPUT...: the same, any number (import --trace) */
} cp_report_files_t;

/** The option index under which option() gets the operand of CP_REPORT_FILES_SOURCE. */
#define CP_REPORT_OPERAND (-1)

/**
 * A subcommand: its options, its operands, and what it does with the
 * files.  Every subcommand parses, checks and opens through
 * cp_report_run(), so all say the same things the same way:
 *   collprof-report: error: CMD: unknown option '--x' (see 'collprof-report CMD --help')
 */
typedef struct cp_report_cmd {
    const char *name;
    void (*usage)(FILE *f);
    const cp_report_opt_t *opts; /**< opts[0] is --help; ends with a NULL name */
    /** Option k (> 0) with its value (NULL when it takes none): 0, or -1 after printing why. */
    int (*option)(void *ctx, int k, char *val);
    /** After parsing: NULL, or what is wrong ("--out is required"); may be NULL. */
    const char *(*check)(void *ctx);
    cp_report_files_t files;
    /** The work, on the opened files; returns the exit status. */
    int (*run)(void *ctx, cp_report_file_t **files, int n);
} cp_report_cmd_t;

/** Parse argv (argv[0] is the subcommand), open the files and run: the exit status. */
int cp_report_run(const cp_report_cmd_t *c, void *ctx, int argc, char **argv);

/** Parse a finite number in [lo, hi] for an option; prints the error and returns -1. */
int cp_report_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi,
                           double *out);

/**
 * Write path (standard output when NULL) with write(out, data); 0, or the
 * exit status 2 after printing why (it could not be created or written).
 */
int cp_report_write(const char *path, void (*write)(FILE *out, const void *data), const void *data);

/**
 * Write s with each byte c that esc[c] names replaced by esc[c], and the
 * other control characters (below 0x20) as JSON's backslash-u escapes when json_controls.
 */
void cp_report_put_escaped(FILE *out, const char *s, const char *const esc[256], int json_controls);

/** Doubles as the shortest of %.15g and %.17g that reads back as the same value. */
void cp_report_fmt_double(double d, char *buf, size_t len);
/** A number column's value as text (integers as such, doubles as cp_report_fmt_double). */
void cp_report_fmt_value(const cp_report_value_t *v, char *buf, size_t len);
/** s as a CSV field (RFC 4180: quoted when it holds a comma, a quote or a line break). */
void cp_report_csv_field(FILE *out, const char *s);
/** s as a JSON string, quotes included. */
void cp_report_json_string(FILE *out, const char *s);

/** s as XML character data (&, <, >, quotes escaped). */
void cp_report_xml_text(FILE *out, const char *s);

/** The index of s in names[0..n), or -1 after printing "CMD: OPT 'S' is not one of ...". */
int cp_report_parse_choice(const char *cmd, const char *opt, const char *s,
                           const char *const *names, int n, const char *expected);

/* ---- subcommands ---------------------------------------------------------- */

int cp_report_cmd_summary(int argc, char **argv);
int cp_report_cmd_compare(int argc, char **argv);
int cp_report_cmd_export(int argc, char **argv);
int cp_report_cmd_stragglers(int argc, char **argv);
int cp_report_cmd_plot(int argc, char **argv);
int cp_report_cmd_scaling(int argc, char **argv);
int cp_report_cmd_study(int argc, char **argv);
int cp_report_cmd_links(int argc, char **argv);
int cp_report_cmd_counters(int argc, char **argv);
int cp_report_cmd_best(int argc, char **argv);
int cp_report_cmd_screen(int argc, char **argv);
int cp_report_cmd_baseline(int argc, char **argv);
int cp_report_cmd_import(int argc, char **argv);
int cp_report_cmd_simulate(int argc, char **argv);
int cp_report_cmd_replay(int argc, char **argv);

/* ---- compare and best on replays (cmd/replay_rows.c) ----------------------- */

/** A file that holds a replay (/replay) and no matrix cells. */
#define CP_REPORT_IS_REPLAY(f) ((f)->nreplay > 0 && (f)->nrows == 0)
/** compare on two replays: their type and trace rows by op x size x group (and backend,
 *  unless each replayed on one), the p50 time's change against threshold (percent); the
 *  exit status (1: a regression). */
int cp_report_replay_compare(const cp_report_file_t *base, const cp_report_file_t *cur,
                             double threshold);
/** best on replays: per op x size x group and for the whole trace, the fastest replay. */
void cp_report_replay_best(cp_report_file_t *const *files, int n);

/* ---- export's Prometheus formats (export_prom.c) and JSON lines (export_jsonl.c) ---- */

/** The metrics of some result files, built before anything is written. */
typedef struct cp_report_prom cp_report_prom_t;

/**
 * The metrics of files[0..n): OpenMetrics with each run's time on its samples when
 * openmetrics, else the text format without times (the newest sample of each series).
 * NULL after a one-line error (out of memory; for OpenMetrics, a file without a time).
 */
cp_report_prom_t *cp_report_prom_build(cp_report_file_t *const *files, int n, int openmetrics);
/** Write what cp_report_prom_build gave (data: the cp_report_prom_t), for cp_report_write. */
void cp_report_prom_write(FILE *out, const void *data);
void cp_report_prom_free(cp_report_prom_t *p);

/** One JSON object per line and cell of files[0..n), flat (docs/metrics.md). */
void cp_report_jsonl_write(FILE *out, cp_report_file_t *const *files, int n);

/* ---- which backend and variant wins (best_cells.c, for best, summary and plot) ---- */

/**
 * The results of files[0..n) as src/format/best.h takes them: every row
 * (borrowed) with the p5 of its per-iteration times from the raw samples.
 * Free with free(); NULL after printing "out of memory".
 */
cp_best_cell_t *cp_report_best_cells(cp_report_file_t *const *files, int n, size_t *count);

/* ---- the link sweep's heatmaps (links_map.c, drawn by plot) --------------- */

/** Heatmaps of f: one per backend of its link sweep (0 when it has none; a backend with a
 *  screen has its pairs in /links too, and gets a screen heatmap instead). */
int cp_report_links_nmaps(const cp_report_file_t *f);
/** Height in px of each heatmap of f, width px wide (they all have its node count). */
int cp_report_links_map_height(const cp_report_file_t *f, int width);
/** Heatmap k of f as SVG elements from (0, 0), width px wide: bandwidth of the best iteration,
 *  the slow links framed and the suspect nodes outlined and named as `links` judges them. */
void cp_report_links_map(FILE *out, const cp_report_file_t *f, int k, int width);
/** 1 when f has a screen (/screen rows) of backend. */
int cp_report_has_screen(const cp_report_file_t *f, const char *backend);

/* ---- the screen's heatmaps (screen_map.c, drawn by plot) ------------------- */

/** Heatmaps of f: one per backend of its screen (0 when it has none). */
int cp_report_screen_nmaps(const cp_report_file_t *f);
/** Height in px of each screen heatmap of f, width px wide. */
int cp_report_screen_map_height(const cp_report_file_t *f, int width);
/** Screen heatmap k of f from (0, 0), width px wide: each measured pair's score, the nodes
 *  and links the screen flagged (its /screen verdict) outlined or framed and named. */
void cp_report_screen_map(FILE *out, const cp_report_file_t *f, int k, int width);

/* ---- a file's pairs judged again against a baseline (rejudge.c) ------------ */

/** A baseline file (collprof-report baseline) as --baseline BASE.h5 gives it. */
typedef struct cp_report_base {
    char shown[512];               /**< its path as printable text */
    collprof_baseline_row_t *rows; /**< its /baseline rows */
    size_t n;
} cp_report_base_t;

/** The baseline's figures for one backend of a file: the reference and its message sizes. */
typedef struct cp_report_ref {
    cp_screen_ref_t ref;
    unsigned long long lat_bytes, bw_bytes;
} cp_report_ref_t;

/** Read path's baseline for command cmd: 0, or the exit status 2 after the error. */
int cp_report_base_load(const char *cmd, const char *path, cp_report_base_t *b);
void cp_report_base_free(cp_report_base_t *b);

/**
 * The baseline's reference for backend's pairs in f, at the message sizes of their /links
 * rows: 0, or the exit status 2 after a one-line error (no such pairs, or a baseline without
 * that backend, kind or size).
 */
int cp_report_base_ref(const char *cmd, const cp_report_base_t *b, const cp_report_file_t *f,
                       const char *backend, cp_report_ref_t *r);

/** "the baseline PATH (BACKEND: 1.23 GB/s at 262144 B, MAD 0.05; 12.3 us at 8 B, MAD 0.10)". */
void cp_report_base_words(const cp_report_base_t *b, const char *backend, const cp_report_ref_t *r,
                          char *buf, size_t len);

/* ---- screen --format json (screen_json.c) --------------------------------- */

/** The version of collprof-report screen's JSON document (format "collprof-screen"). */
#define CP_REPORT_SCREEN_JSON_VERSION 1

/** A backend's screen judged again: the baseline's figures it was judged against. */
typedef struct cp_report_rejudged {
    char backend[32];
    cp_report_ref_t ref;
} cp_report_rejudged_t;

/**
 * The screen's verdict rows[0..n) of file f as the JSON document (docs/screen.md), each
 * backend with its pairs' path check from f's /links rows; b and j (one per backend, in the
 * rows' order) when the pairs were judged again against a baseline, else NULL.
 */
void cp_report_screen_json(FILE *out, const cp_report_file_t *f, const collprof_screen_row_t *rows,
                           size_t n, const cp_report_base_t *b, const cp_report_rejudged_t *j);

/* ---- the HTML page's script (plot_script.c) -------------------------------- */

/** JavaScript that makes plot's inline SVG interactive (what it expects: plot_script.c). */
extern const char cp_report_plot_script[];

/* ---- text helpers (args.c) ------------------------------------------------ */

/** "mpi/default AllReduce (max) float32 4,096": a cell for people. */
void cp_report_cell_name(const collprof_result_row_t *r, char *buf, size_t len);

/* ---- screen --format drain and --resume (screen_drain.c) ------------------ */

/** What screen's drain options ask for. */
typedef struct cp_report_drain_opts {
    int apply;            /**< run the lines through scontrol */
    const char *scontrol; /**< --scontrol PATH; NULL: PATH's absolute elements */
    const char *state;    /**< --state FILE: failing verdicts, drains, the breaker; NULL: none */
    int drain_after;      /**< failing verdicts in a row before a drain (2) */
    double max_share;     /**< the breaker: at most this share of a partition ... */
    long long window;     /**< ... drained in this many seconds (0.1, 3600) */
    int reset_breaker;    /**< --reset-breaker */
} cp_report_drain_opts_t;

/**
 * The drain of f's verdict rows[0..n) as o asks (screen_drain.c): the lines printed, and
 * with o->apply run.  status: the screen's exit status; returns the command's (2 after a
 * one-line error: a node outside the run, a bad state file, the breaker, scontrol).
 */
int cp_report_drain(const cp_report_file_t *f, const collprof_screen_row_t *rows, size_t n,
                    const cp_report_drain_opts_t *o, int status);

/** --resume: the nodes of f's run drained by collprof, resumed with o->apply; 0, or 2 after
 *  a one-line error. */
int cp_report_resume(const cp_report_file_t *f, const cp_report_drain_opts_t *o);

/* ---- collprof-report simulate screen's cases, grid and output (simulate_grid.c) ---- */

/** A case of the simulator: its label, its parameters (faults owned by the case list) and
 *  what its runs gave. */
typedef struct cp_report_sim {
    char label[96];
    cp_sim_case_t k;
    cp_sim_counts_t counts;
} cp_report_sim_t;

/** The built-in grid (collprof-report simulate screen --grid) into *cases (*n of them; free
 *  with cp_report_sim_free); 0, or -1 after printing "out of memory". */
int cp_report_sim_grid(cp_report_sim_t **cases, size_t *n);
void cp_report_sim_free(cp_report_sim_t *cases, size_t n);

/** A label for a case from its parameters ("1 random at 0.5x", "node 3 at 0.3x, hung 5"). */
void cp_report_sim_label(const cp_sim_case_t *k, char *buf, size_t len);

/** Run every case; its total seconds in *secs.  0, or the exit status 2 after the error. */
int cp_report_sim_run(cp_report_sim_t *cases, size_t n, double *secs);

/** The cases as a table (text; a last comment line with secs) or one JSON document. */
void cp_report_sim_text(FILE *out, const cp_report_sim_t *cases, size_t n, double secs);
void cp_report_sim_json(FILE *out, const cp_report_sim_t *cases, size_t n);

#endif /* COLLPROF_REPORT_REPORT_H */
