/* libFuzzer harness: collprof-report's reader on arbitrary (corrupted) files. */
#include "config.h"

#include "fuzz_files.h"
#include "report/read/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[256], err[1024];
    if (size > (1u << 20) || fuzz_tmpfile(data, size, path, sizeof(path)) != 0) {
        return 0;
    }
    cp_report_file_t *f = NULL;
    if (cp_report_open(path, &f, err, sizeof(err)) == 0) {
        cp_report_close(f);
    }
    unlink(path);
    return 0;
}
