/* fuzz_model.c - libFuzzer target for the model loader:
 *   make fuzz && build/fuzz/fuzz_model -max_total_time=300 tests/fuzz/corpus/model
 * Any input must load or fail with a message; never crash, leak or hang. */
#include <stdint.h>
#include <string.h>

#include "json.h"
#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = sc_malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    cJSON *j = NULL;
    sc_error err = {0};
    if (sc_json_parse("fuzz.json", text, size, &j, &err) == SC_OK) {
        sc_model *m = NULL;
        if (sc_model_from_json(j, "fuzz.json", &m, &err) == SC_OK) {
            cJSON *back = sc_model_to_json(m); /* saving what loaded must work */
            if (!back)
                __builtin_trap();
            cJSON_Delete(back);
            sc_model_free(m);
        } else if (!err.msg[0]) {
            __builtin_trap(); /* every failure carries a message */
        }
        cJSON_Delete(j);
    }
    sc_free(text);
    return 0;
}
