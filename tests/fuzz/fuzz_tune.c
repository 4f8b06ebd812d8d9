/* fuzz_tune.c - libFuzzer target for the tune loader, which reads a file: the
 * input is written to a temporary file first.
 *   make fuzz && build/fuzz/fuzz_tune -max_total_time=120 tests/fuzz/corpus/tune */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calibrate.h"
#include "plan.h"
#include "tune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/sc-fuzz-tune-%d.json", (int)getpid());
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    sc_error err = {0};
    sc_status st;
#if 0
    sc_plan *p = NULL;
    st = sc_plan_load(path, &p, &err);
    sc_plan_free(p);
#elif 1
    sc_tune *t = NULL;
    st = sc_tune_load(path, &t, &err);
    sc_tune_free(t);
#else
    sc_cluster c, out;
    sc_cluster_preset_get("cpu-local", &c, NULL);
    const char *files[] = {path};
    st = sc_calibrate(&c, files, 1, "2026-01-01T00:00:00Z", &out, NULL, &err);
#endif
    if (st != SC_OK && !err.msg[0])
        __builtin_trap(); /* every failure carries a message */
    return 0;
}
