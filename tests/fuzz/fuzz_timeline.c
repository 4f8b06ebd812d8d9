/* fuzz_timeline.c - libFuzzer target for the timeline loader:
 *   make fuzz && build/fuzz/fuzz_timeline -max_total_time=300 tests/fuzz/corpus/timeline */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_input.h"
#include "json.h"
#include "timeline.h"

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
        sc_timeline *t = NULL;
        if (sc_timeline_from_json(j, "fuzz.json", &t, &err) == SC_OK) {
            cJSON *c = sc_timeline_chrome(t);
            cJSON_Delete(c);
            sc_timeline_free(t);
        } else if (!err.msg[0]) {
            __builtin_trap();
        }
        cJSON_Delete(j);
    }
    /* the streaming reader on the same bytes: loads or fails with a message,
     * and its writers run on what it loads */
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/dev/shm/sc-fuzz-timeline-%d.json", (int)getpid());
    if (fuzz_input_to(path, data, size) == 0) {
        sc_timeline *t = NULL;
        err.msg[0] = '\0';
        if (sc_timeline_load(path, &t, &err) == SC_OK) {
            sc_buf b = {0};
            sc_timeline_write(t, &b);
            sc_timeline_chrome_write(t, &b);
            sc_buf_free(&b);
            sc_timeline_free(t);
        } else if (!err.msg[0]) {
            __builtin_trap();
        }
    }
    sc_free(text);
    return 0;
}
