/* libFuzzer harness: collprof-report import's readers (nccl-tests JSON and text, OSU text)
 * on the input, without writing anything; the JSON reader (src/report/import/json.c, on
 * yajl) with them, and alone: the whole document kept, then few values kept (the limit). */
#include "config.h"

#include "report/import/import.h"
#include "report/import/json.h"

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
    static const char *const keep[] = {"results", "config", NULL};
    const cp_json_opts_t opts[] = {{NULL, 0}, {keep, 16}};
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        cp_json_error_t e;
        cp_json_t *doc = cp_json_parse(text, size, &opts[i], &e);
        if (doc != NULL) {
            (void)cp_json_get(doc, "results");
        } else if (e.msg[0] == '\0' || e.line < 1) {
            __builtin_trap(); /* a refusal always says why and where */
        }
        cp_json_free(doc);
    }
    free(text);
    return 0;
}
