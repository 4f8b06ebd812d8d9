/* fuzz_plan.c - libFuzzer target for the plan loader with its cross-checks:
 * bytes -> plan file -> sc_plan_load -> sc_plan_open (the model's and the
 * cluster's digests, nodes, gpus_per_node, the partition's bounds and leaf
 * names, tp against the heads) -> sc_step_check; a plan that passes all of
 * them and is small is simulated (one replica), as `sim --plan` would, and
 * every opened plan is exported to each target (`export --to`): files, or a
 * refusal with a message naming the plan.
 *   make fuzz && (cd tests/fuzz/corpus && ../../../build/fuzz/fuzz_plan plan)
 * Run from the repository root or from tests/fuzz/corpus: the target copies
 * the model and cluster the seeds name (tests/corpus/plan/good/tiny.json and
 * p4d.json) into a private directory and writes each input beside them, as
 * both NAME and good/NAME, so that the seeds' relative sources (and digests)
 * resolve. Sources that leave that directory (absolute, "..", "-") are not
 * opened: a fuzzer must not read arbitrary files of the machine (a FIFO would
 * hang it). Any input must load or fail with a message that names the file;
 * never crash, leak or hang. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "export.h"
#include "fuzz_input.h"
#include "plan.h"
#include "step.h"

static char dir[64], path[96];

static int copy(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb");
    if (!a)
        return -1;
    FILE *b = fopen(to, "wb");
    if (!b) {
        fclose(a);
        return -1;
    }
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0)
        fwrite(buf, 1, n, b);
    fclose(a);
    return fclose(b);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char *const roots[] = {"tests/corpus/plan/good", "../../corpus/plan/good",
                                        "../corpus/plan/good"};
    static const char *const files[] = {"tiny.json", "p4d.json"};
    snprintf(dir, sizeof dir, "/dev/shm/sc-fuzz-plan-%d", (int)getpid());
    char sub[96];
    snprintf(sub, sizeof sub, "%s/good", dir);
    mkdir(dir, 0700);
    mkdir(sub, 0700);
    const char *root = NULL;
    for (size_t i = 0; i < sizeof roots / sizeof *roots && !root; i++)
        if (access(roots[i], R_OK) == 0)
            root = roots[i];
    if (!root) {
        fprintf(stderr, "fuzz_plan: run from the repository root (tests/corpus/plan/good)\n");
        exit(2);
    }
    for (size_t i = 0; i < 2; i++) {
        char from[160], to[160], to2[160];
        snprintf(from, sizeof from, "%s/%s", root, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        snprintf(to2, sizeof to2, "%s/%s", sub, files[i]);
        if (copy(from, to) || copy(from, to2)) {
            fprintf(stderr, "fuzz_plan: cannot copy %s into %s\n", from, dir);
            exit(2);
        }
    }
    snprintf(path, sizeof path, "%s/in.plan.json", dir);
    return 0;
}

static int confined(const char *s)
{
    return s[0] && s[0] != '/' && s[0] != '-' && !strstr(s, "..");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (fuzz_input_to(path, data, size))
        return 0;
    sc_error err = {0};
    sc_plan *p = NULL;
    sc_status st = sc_plan_load(path, &p, &err);
    if (st != SC_OK) {
        if (!strstr(err.msg, path))
            __builtin_trap(); /* a refusal names the file */
        return 0;
    }
    if (!confined(p->model_source) || !confined(p->cluster_source)) {
        sc_plan_free(p);
        return 0;
    }
    sc_model *m = NULL;
    sc_cluster c;
    err.msg[0] = '\0';
    st = sc_plan_open(p, path, &m, &c, &err);
    if (st != SC_OK) {
        if (!strstr(err.msg, path))
            __builtin_trap();
        sc_plan_free(p);
        return 0;
    }
    sc_step_cfg cfg;
    sc_plan_step_cfg(p, &cfg);
    cfg.one_replica = 1;
    sc_step_size sz;
    sc_step_size_estimate(m, &c, &cfg, &sz);
    if (sc_step_check(m, &c, &cfg, &err) == SC_OK && sz.actions < 20000 && sz.tasks < 100000) {
        sc_step_result *r = NULL;
        if (sc_step_simulate(m, &c, &cfg, &r, &err) == SC_OK) {
            /* an opened plan is one the simulator can run: a finite step */
            if (!(r->step_time_s > 0 && r->step_time_s < 1e30))
                __builtin_trap();
            sc_step_result_free(r);
        } else if (!err.msg[0]) {
            __builtin_trap();
        }
    }
    static const char *const targets[] = {"megatron", "deepspeed", "torch"};
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
        sc_export *e = NULL;
        err.msg[0] = '\0';
        st = sc_export_make(p, m, path, targets[i], &e, &err);
        if (st == SC_OK) {
            if (!e || e->n_files < 1)
                __builtin_trap(); /* an export writes its files */
            cJSON_Delete(sc_export_to_json(e, path)); /* export --json */
        } else if (st != SC_ENOMEM && !strstr(err.msg, path)) {
            __builtin_trap(); /* a refusal names the plan */
        }
        sc_export_free(e);
    }
    sc_model_free(m);
    sc_plan_free(p);
    return 0;
}
