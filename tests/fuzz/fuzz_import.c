/* libFuzzer harness: collprof-report import's readers (nccl-tests JSON and text, OSU text)
 * on the input, without writing anything; the JSON reader (src/report/import/json.c) with them. */
#include "config.h"

#include "report/import/import.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (size > 65536 || text == NULL) {
        free(text);
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0';
    int (*readers[])(cp_import_t *, const char *, size_t) = {cp_import_nccl_json,
                                                             cp_import_nccl_text, cp_import_osu};
    for (size_t i = 0; i < sizeof(readers) / sizeof(readers[0]); i++) {
        cp_import_t im;
        memset(&im, 0, sizeof(im));
        im.shown = "fuzz";
        im.ranks = i == 2 ? 4 : 0;
        readers[i](&im, text, strlen(text));
        cp_import_free(&im);
    }
    free(text);
    return 0;
}
