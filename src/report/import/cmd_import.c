/*
 * `collprof-report import [--from FORMAT] INPUT -o OUT.h5`: other tools'
 * results as a collprof result file, so that compare, best, plot, export and
 * summary read them beside collprof's own runs.  The formats: nccl-tests'
 * JSON file (-J, format version 3) and its text table, and the text of the
 * OSU micro-benchmarks' collective latency tests (7.x, with or without -f
 * and -z).  What each source says goes into the row columns of the same
 * meaning; what it does not record stays empty (0 or "").  The mapping is
 * documented in docs/hdf5-schema.md, "Imported files".
 */
#include "config.h"

#include "report/import/import.h"
#include "report/import/trace.h"
#include "report/report.h"

#include <collprof/vocab.h>

#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the command ----------------------------------------------------------------------- */

enum { FROM_AUTO, FROM_NCCL_JSON, FROM_NCCL_TEXT, FROM_OSU };
static const char *const from_names[] = {"auto", "nccl-tests-json", "nccl-tests", "osu"};

typedef struct settings {
    cp_import_t im;
    int from;
    const char *input, *out;
    const char *trace; /**< --trace FORMAT: the trace import, of every input */
    char **inputs;     /**< [ninputs] the operands */
    int ninputs;
    char command[4096];
} settings_t;

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report import [--from FORMAT] INPUT -o OUT.h5\n"
               "       collprof-report import --trace FORMAT FILE... -o OUT.h5\n"
               "Read another tool's results into a collprof result file (marked as imported),\n"
               "for compare, best, plot, export and summary beside collprof's own runs.\n"
               "\n"
               "  --from FORMAT   auto (default: by the content), nccl-tests-json (-J output,\n"
               "                  format version 3), nccl-tests (its text table) or osu (the\n"
               "                  text of an OSU collective latency test, 7.x, with or without\n"
               "                  -f and -z; several tests one after the other are fine)\n"
               "  -o, --output OUT.h5   the file to write (it must not exist)\n"
               "  --backend NAME  the backend the cells name (default: nccl for nccl-tests,\n"
               "                  mpi for OSU): compare matches cells by backend\n"
               "  --variant NAME  the variant they name (default: default)\n"
               "  --op OP         the operation, where the source does not say it\n"
               "  --ranks N       the number of ranks, where the source does not say it (OSU):\n"
               "                  needed for busBW and for the ops whose size is per rank\n"
               "  --trace FORMAT  a job's communication as a trace (docs/replay.md), from one\n"
               "                  file per rank or process: param (PARAM's basic JSON trace,\n"
               "                  <rank>.json), nccl-inspector (NCCL Inspector JSON lines, the\n"
               "                  groups rebuilt by joining the files on the communicator hash),\n"
               "                  nccl-collprof (the files of collprof's NCCL profiler plugin),\n"
               "                  flight-recorder (PyTorch Flight Recorder JSON 2.x),\n"
               "                  collprof-trace (the recorder's files, one per rank),\n"
               "                  pytorch-et (PyTorch execution-trace JSON, no times),\n"
               "                  chakra-json (Chakra's linked host+device JSON, with\n"
               "                  times) or chakra-et (Chakra .et protobuf files, with its\n"
               "                  comm_group.json among the FILEs); the rank is the last\n"
               "                  number in each file's name (collprof-trace: its header's\n"
               "                  rank; nccl-*: the process's rank in the communicator of\n"
               "                  all ranks)\n"
               "  -h, --help      this help\n"
               "\n"
               "What the source did not record (per-rank samples, percentiles) stays empty.\n"
               "Exit status: 0 written, 2 bad usage or an input that cannot be read (one\n"
               "error line naming the file and line; nothing is written).\n");
}

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    double v;
    switch (k) {
    case CP_REPORT_OPERAND:
        s->input = s->input != NULL ? s->input : val;
        s->inputs[s->ninputs++] = val;
        return 0;
    case 7:
        if (cp_trace_format_known(val) != 0) {
            cp_report_error("import: --trace '%s' is not a trace format (param, nccl-inspector, "
                            "nccl-collprof, flight-recorder, collprof-trace, pytorch-et, "
                            "chakra-json or chakra-et)",
                            val);
            return -1;
        }
        s->trace = val;
        return 0;
    case 1:
        s->from = cp_report_parse_choice("import", "--from", val, from_names, 4,
                                         "auto, nccl-tests-json, nccl-tests or osu");
        return s->from < 0 ? -1 : 0;
    case 2: s->out = val; return 0;
    case 3:
    case 4:
        if (val[0] == '\0' || strlen(val) >= (k == 3 ? 32 : 64) ||
            strspn(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:+-") !=
                strlen(val)) {
            cp_report_error("import: --%s '%s' is not a name (letters, digits, _.:+-)",
                            k == 3 ? "backend" : "variant", val);
            return -1;
        }
        *(k == 3 ? &s->im.backend : &s->im.variant) = val;
        return 0;
    case 5:
        if (cp_import_op(val) < 0) {
            cp_report_error("import: --op '%s' is not an operation collprof knows", val);
            return -1;
        }
        s->im.op = val;
        return 0;
    default:
        if (cp_report_parse_double("import", "--ranks", val, 1, CP_IMPORT_MAX_RANKS, &v) != 0) {
            return -1;
        }
        if (v != floor(v)) {
            cp_report_error("import: --ranks '%s' is not a whole number", val);
            return -1;
        }
        s->im.ranks = (int)v;
        return 0;
    }
}

static const char *check(void *ctx)
{
    settings_t *s = ctx;
    return s->input == NULL                     ? "no input file given"
           : s->out == NULL                     ? "-o OUT.h5 is required"
           : s->trace == NULL && s->ninputs > 1 ? "takes one input file (several: --trace)"
                                                : NULL;
}

/* The input, whole, NUL-terminated: NULL after the error. */
static char *slurp(settings_t *s, size_t *len)
{
    struct stat st;
    int fd = open(s->input, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    const char *why = NULL;
    if (fd < 0) {
        why = strerror(errno);
    } else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        why = "not a regular file (a FIFO, device, socket or directory)";
    } else if (st.st_size == 0) {
        why = "empty file";
    } else if ((uint64_t)st.st_size > CP_IMPORT_MAX_BYTES) {
        why = "larger than 64 MiB";
    }
    char *buf = why == NULL ? malloc((size_t)st.st_size + 1) : NULL;
    if (why == NULL && buf == NULL) {
        why = "out of memory";
    }
    size_t got = 0;
    while (buf != NULL && got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n <= 0) {
            why = n < 0 ? strerror(errno) : "it shrank while read";
            break;
        }
        got += (size_t)n;
    }
    if (fd >= 0) {
        close(fd);
    }
    if (why != NULL) {
        free(buf);
        cp_import_fail(&s->im, 0, "%s", why);
        return NULL;
    }
    buf[got] = '\0';
    *len = got;
    return buf;
}

/* The format by the content: JSON, a nccl-tests table, or OSU. */
static int guess(const char *text)
{
    const char *p = text + strspn(text, " \t\r\n");
    if (*p == '{') {
        return FROM_NCCL_JSON;
    }
    if (strstr(text, "# OSU ") != NULL) {
        return FROM_OSU;
    }
    if (strstr(text, "nccl-tests") != NULL || strstr(text, "out-of-place") != NULL) {
        return FROM_NCCL_TEXT;
    }
    return FROM_AUTO;
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    settings_t *s = ctx;
    (void)files;
    (void)n;
    if (s->trace != NULL) {
        return cp_import_trace(s->trace, s->inputs, s->ninputs, s->out, s->command) == 0
                   ? CP_REPORT_EXIT_OK
                   : CP_REPORT_EXIT_BAD;
    }
    char shown[4096];
    cp_text_sanitize(s->input, shown, sizeof(shown));
    s->im.shown = shown;
    size_t len = 0;
    char *text = slurp(s, &len);
    int rc = text == NULL ? -1 : 0, from = s->from;
    if (rc == 0 && from == FROM_AUTO && (from = guess(text)) == FROM_AUTO) {
        rc = cp_import_fail(&s->im, 0,
                            "not a format import reads (nccl-tests JSON or text, OSU text): "
                            "name one with --from");
    }
    if (rc == 0 && memchr(text, '\0', len) != NULL) {
        rc = cp_import_fail(&s->im, 0, "a NUL byte: not a text file");
    }
    if (rc == 0) {
        rc = from == FROM_NCCL_JSON   ? cp_import_nccl_json(&s->im, text, len)
             : from == FROM_NCCL_TEXT ? cp_import_nccl_text(&s->im, text, len)
                                      : cp_import_osu(&s->im, text, len);
    }
    if (rc == 0 && s->im.nrows == 0) {
        rc = cp_import_fail(&s->im, 0, "no results in it");
    }
    if (rc == 0) {
        rc = cp_import_write(&s->im, s->out, s->command);
    }
    free(text);
    if (rc != 0) {
        cp_report_error("%s", s->im.err);
    } else {
        printf("%s: %zu cells from %s (%s) written to %s\n", shown, s->im.nrows, s->im.tool,
               s->im.format, s->out);
    }
    cp_import_free(&s->im);
    return rc == 0 ? CP_REPORT_EXIT_OK : CP_REPORT_EXIT_BAD;
}

int cp_report_cmd_import(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {{"help", 'h', 0},  {"from", 0, 1},    {"output", 'o', 1},
                                           {"backend", 0, 1}, {"variant", 0, 1}, {"op", 0, 1},
                                           {"ranks", 0, 1},   {"trace", 0, 1},   {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {
        "import", usage, opts, option, check, CP_REPORT_FILES_SOURCES, run};
    settings_t *s = calloc(1, sizeof(*s));
    char **inputs = calloc((size_t)argc + 1, sizeof(char *));
    if (s == NULL || inputs == NULL) {
        free(s);
        free(inputs);
        cp_report_error("out of memory");
        return CP_REPORT_EXIT_BAD;
    }
    snprintf(s->command, sizeof(s->command), "collprof-report");
    for (int i = 0; i < argc; i++) {
        strncat(s->command, " ", sizeof(s->command) - strlen(s->command) - 1);
        strncat(s->command, argv[i], sizeof(s->command) - strlen(s->command) - 1);
    }
    s->inputs = inputs;
    int rc = cp_report_run(&cmd, s, argc, argv);
    free(inputs);
    free(s);
    return rc;
}
