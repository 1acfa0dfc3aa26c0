/* libFuzzer harness: size parsing and every matrix key's value parser. */
#include "config.h"

#include "cli/cli.h"
#include "base/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *keys[] = {"ops",      "dtypes",   "redops",  "counts",    "bytes",
                                 "backends", "variants", "inplace", "imbalance", "iters",
                                 "warmup",   "root",     "bogus"};
    if (size < 1 || size > 4096) {
        return 0;
    }
    char *s = malloc(size);
    if (s == NULL) {
        return 0;
    }
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    uint64_t v;
    char err[512];
    cp_parse_size(s, &v, err, sizeof(err));
    cp_options_t opt;
    memset(&opt, 0, sizeof(opt));
    char *argv[] = {"collprof", "--counts", "1M", NULL};
    if (cp_cli_parse(3, argv, &opt, err, sizeof(err)) == 0) {
        /* not file: values: those read files, which the other harnesses cover */
        if (strncmp(s, "file:", 5) != 0) {
            cp_spec_set(&opt.specs[0], keys[data[0] % (sizeof(keys) / sizeof(keys[0]))], s, err,
                        sizeof(err));
        }
        cp_cli_free(&opt);
    }
    free(s);
    return 0;
}
