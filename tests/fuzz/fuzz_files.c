/* fuzz_files.c - libFuzzer target for the loaders that read a file path
 * (plans, tune curves, bench files, validation suites, and the bench,
 * timeline and fused attention bench inputs of calibration): each input is written to a temporary file
 * and handed to all of them.
 *   make fuzz && build/fuzz/fuzz_files -max_total_time=120 tests/fuzz/corpus/files
 * Any input must load or fail with a message; never crash, leak or hang. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "bench_file.h"
#include "fuzz_input.h"
#include "calib_points.h"
#include "calibrate.h"
#include "plan.h"
#include "tune.h"
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/dev/shm/sc-fuzz-files-%d.json", (int)getpid());
    if (fuzz_input_to(path, data, size))
        return 0;
    sc_error err = {0};
    sc_plan *p = NULL;
    if (sc_plan_load(path, &p, &err) != SC_OK && !err.msg[0])
        __builtin_trap();
    sc_plan_free(p);
    sc_tune *t = NULL;
    err.msg[0] = '\0';
    if (sc_tune_load(path, &t, &err) != SC_OK && !err.msg[0])
        __builtin_trap();
    sc_tune_free(t);
    sc_bench_result *b = NULL;
    err.msg[0] = '\0';
    if (sc_bench_load(path, &b, &err) != SC_OK && !err.msg[0])
        __builtin_trap();
    sc_bench_result_free(b);
    sc_val_suite *v = NULL;
    err.msg[0] = '\0';
    if (sc_val_load(path, &v, &err) != SC_OK && !err.msg[0])
        __builtin_trap();
    sc_val_free(v);
    static sc_cluster c; /* read off this machine once, not per input */
    static int have_c;
    if (!have_c)
        have_c = sc_cluster_preset_get("cpu-local", &c, NULL) == SC_OK;
    sc_cluster out;
    const char *files[] = {path};
    err.msg[0] = '\0';
    if (sc_calibrate(&c, files, 1, "2026-01-01T00:00:00Z", 0, &out, NULL, &err) != SC_OK &&
        !err.msg[0])
        __builtin_trap();
    /* and on a GPU preset, which a GPU's files (a fused attention bench) match */
    static sc_cluster h;
    static int have_h;
    if (!have_h)
        have_h = sc_cluster_preset_get("h200-sxm-1", &h, NULL) == SC_OK;
    err.msg[0] = '\0';
    if (have_h && sc_calibrate(&h, files, 1, "2026-01-01T00:00:00Z", 0, &out, NULL, &err) !=
                      SC_OK &&
        !err.msg[0])
        __builtin_trap();
    return 0;
}
