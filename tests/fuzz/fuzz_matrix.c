/* libFuzzer harness: the --matrix file parser, through the command line. */
#include "config.h"

#include "cli/cli.h"
#include "fuzz_files.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[256], err[2048];
    if (size > 65536 || fuzz_tmpfile(data, size, path, sizeof(path)) != 0) {
        return 0;
    }
    /* imbalance=file:... inside a matrix would read arbitrary files: the traffic harness covers it
     */
    if (memmem(data, size, "file:", 5) == NULL) {
        cp_options_t opt;
        char *argv[] = {"collprof", "--matrix", path, NULL};
        if (cp_cli_parse(3, argv, &opt, err, sizeof(err)) == 0) {
            cp_cli_free(&opt);
        }
    }
    unlink(path);
    return 0;
}
