/* test_validate.c - the validation suite's machinery (planner/validate.h,
 * `stagecraft validate`) and the integrity of the shipped suites:
 *   - the loader refuses bad and infeasible rows with one message naming the
 *     file and the JSON path;
 *   - the error arithmetic on a tiny hand-made suite whose "measured" figures
 *     are the simulator's own predictions divided by known factors, so every
 *     error, the MAPE, the mean signed error and the max |error| are known
 *     exactly (through the library and through `validate --json`), and the
 *     three ways of stating a measurement (iteration_s, tokens_per_s,
 *     tflops_per_gpu) convert as documented;
 *   - the command refuses an infeasible row (exit 2) and --check fails on
 *     missed targets;
 *   - every shipped suite in validation/ loads (so every row is feasible),
 *     cites a source and says what an approximate row assumes (which data
 *     sets are kept out of the suites is docs/accuracy.md's rule, not a
 *     test's: no test names them);
 *   - the fuzz corpus replays through the loader; docs/formats.md documents
 *     every key the shipped suites use and its example loads.
 *   - the per-preset validation figures that sim, plan, tune and whatif print
 *     (cost_models/label.c's table) are those of the shipped rows, and the
 *     targets hold over them (MAPE, mean signed error, every row within 10%
 *     but a strict list of the rows not yet there); the shipped suites are
 *     simulated once for both (all rows, about 6 s here); make validate
 *     checks every target without exceptions.
 */
#include "check.h"
#include "json.h"
#include "step.h"
#include "validate.h"
#include "label.h"
#include "overhead.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>

static char out[1 << 17];

#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)

/* ---- helpers ------------------------------------------------------------------ */

/* Writes text to TMPDIR/name and returns the path (static buffer per call
 * slot: at most 4 live at once). */
static const char *put(const char *name, const char *text)
{
    static char paths[4][600];
    static int k;
    char *p = paths[k++ % 4];
    snprintf(p, 600, "%s/%s", sc_test_tmpdir(), name);
    FILE *f = fopen(p, "w");
    if (!f)
        return p;
    fputs(text, f);
    fclose(f);
    return p;
}

/* A one-row suite: the row's model, layout, cluster and measured objects
 * (JSON text), and any extra row keys (",\"k\": v" or ""). */
static void one_row(char *buf, size_t cap, const char *model, const char *layout,
                    const char *cluster, const char *measured, const char *extra)
{
    snprintf(buf, cap,
             "{\"format\": \"stagecraft.validation/1\", \"name\": \"t\",\n"
             " \"sources\": [{\"id\": \"s\", \"citation\": \"A. Author: A paper (2024)\", "
             "\"year\": 2024}],\n"
             " \"rows\": [{\"id\": \"r0\", \"source\": \"s\", \"where\": \"Table 1\", "
             "\"hardware\": \"8 x A100\", \"software\": \"Megatron-LM\"%s,\n"
             "   \"model\": %s,\n   \"layout\": %s,\n   \"cluster\": %s,\n   \"measured\": %s}]}\n",
             extra, model, layout, cluster, measured);
}

#define TINY "{\"generator\": \"gpt\", \"layers\": 4, \"hidden\": 256, \"heads\": 4, " \
             "\"seq\": 128, \"vocab\": 1024, \"tied\": true}"
#define LAYOUT_OK "{\"dp\": 2, \"tp\": 2, \"pp\": 2, \"recompute\": \"none\", \"mbs\": 1, " \
                  "\"global_batch\": 8}"
#define CLUSTER_OK "{\"preset\": \"dgx-a100-80g\", \"nodes\": 1}"
#define MEASURED_OK "{\"iteration_s\": 0.01}"

/* Loads a one-row suite and expects failure with a message that has the
 * file's path and want. */
static void expect_refused(const char *model, const char *layout, const char *cluster,
                           const char *measured, const char *extra, const char *want,
                           int line)
{
    char text[4096];
    one_row(text, sizeof text, model, layout, cluster, measured, extra);
    const char *file = put("bad.json", text);
    sc_val_suite *s = NULL;
    sc_error err = {0};
    sc_status st = sc_val_load(file, &s, &err);
    if (st == SC_OK) {
        sc_test_fail(__FILE__, line, "loaded, but should be refused for '%s'", want);
        sc_val_free(s);
        return;
    }
    if (!strstr(err.msg, file) || !strstr(err.msg, want))
        sc_test_fail(__FILE__, line, "message \"%s\" lacks the file or \"%s\"", err.msg, want);
    CHECK(s == NULL);
}

#define REFUSED(m, l, c, me, x, want) expect_refused(m, l, c, me, x, want, __LINE__)

/* ---- the loader ----------------------------------------------------------------- */

TEST(validate_load_accepts_a_good_row)
{
    char text[4096];
    one_row(text, sizeof text, TINY, LAYOUT_OK, CLUSTER_OK, MEASURED_OK, "");
    sc_val_suite *s = NULL;
    sc_error err = {0};
    REQUIRE(sc_val_load(put("good.json", text), &s, &err) == SC_OK);
    CHECK_EQ_INT(s->n, 1);
    CHECK_EQ_INT(s->rows[0].m, 4); /* 8 / (dp 2 · mbs 1) per replica */
    CHECK(!strcmp(s->rows[0].schedule, "1f1b"));
    CHECK(s->rows[0].model != NULL);
    CHECK_NEAR(s->rows[0].measured_s, 0.01, 1e-15);
    CHECK(!strcmp(s->rows[0].source->citation, "A. Author: A paper (2024)"));
    CHECK_STR_HAS(s->rows[0].model_desc, "gpt l4 h256 a4 s128 V1024 tied");
    CHECK_EQ_INT(s->rows[0].overlap_p2p_comm, 1); /* absent: beside the compute */
    sc_val_free(s);
    sc_val_free(NULL);
    one_row(text, sizeof text, TINY, "{\"dp\": 2, \"tp\": 2, \"pp\": 2, \"recompute\": "
            "\"none\", \"mbs\": 1, \"global_batch\": 8, \"overlap_p2p_comm\": false}",
            CLUSTER_OK, MEASURED_OK, "");
    REQUIRE(sc_val_load(put("good_p2p.json", text), &s, &err) == SC_OK);
    CHECK_EQ_INT(s->rows[0].overlap_p2p_comm, 0);
    sc_val_free(s);
    /* a choice by name: in the model, and in the row's description */
    one_row(text, sizeof text,
            "{\"generator\": \"gpt\", \"cross_entropy\": \"xentropy\", \"layers\": 4, "
            "\"hidden\": 256, \"heads\": 4, \"seq\": 128, \"vocab\": 1024}",
            LAYOUT_OK, CLUSTER_OK, MEASURED_OK, "");
    REQUIRE(sc_val_load(put("good_ce.json", text), &s, &err) == SC_OK);
    CHECK_STR_HAS(s->rows[0].model_desc, "gpt xentropy l4");
    const sc_module *head = sc_model_find(s->rows[0].model, "head");
    REQUIRE(head);
    CHECK_NEAR(head->act_saved_bytes, 2.0 * 128 * 256 + 2.0 * 128 * 1024, 1e-12);
    sc_val_free(s);
}

/* cluster.network: a row whose source gives its network as a rate a node runs
 * the preset with those NICs, under its own cluster name, and is slower where
 * that network is slower; a bad one is refused naming the key. */
TEST(validate_row_network)
{
    static const char *const model = "{\"generator\": \"gpt\", \"layers\": 4, \"hidden\": "
                                     "2048, \"heads\": 16, \"seq\": 512, \"vocab\": 1024}";
    static const char *const layout = "{\"dp\": 16, \"tp\": 1, \"pp\": 1, \"recompute\": "
                                      "\"none\", \"mbs\": 1, \"global_batch\": 16, "
                                      "\"overlap_grad_reduce\": false}";
    char text[4096];
    sc_val_suite *s = NULL;
    sc_error err = {0};
    sc_val_result own, slow;
    one_row(text, sizeof text, model, layout, "{\"preset\": \"dgx-a100-80g\", \"nodes\": 2}",
            MEASURED_OK, ", \"approximate\": true");
    REQUIRE(sc_val_load(put("net_own.json", text), &s, &err) == SC_OK);
    CHECK_EQ_INT(s->rows[0].net_nics, 0);
    REQUIRE(sc_val_run_row(s, 0, NULL, &own, &err) == SC_OK);
    CHECK(!strcmp(own.cluster, "dgx-a100-80g"));
    sc_val_free(s);
    one_row(text, sizeof text, model, layout,
            "{\"preset\": \"dgx-a100-80g\", \"nodes\": 2, \"network\": "
            "{\"nics_per_node\": 2, \"nic_gbps\": 100}}",
            MEASURED_OK, ", \"approximate\": true");
    REQUIRE(sc_val_load(put("net_slow.json", text), &s, &err) == SC_OK);
    CHECK_EQ_INT(s->rows[0].net_nics, 2);
    CHECK_NEAR(s->rows[0].net_nic_gbps, 100, 0);
    REQUIRE(sc_val_run_row(s, 0, NULL, &slow, &err) == SC_OK);
    CHECK(!strcmp(slow.cluster, "dgx-a100-80g@2x100G"));
    /* 25 GB/s a node against the preset's 200: the reduction after the
     * backward takes longer, the compute does not */
    CHECK(slow.breakdown.dp > 2 * own.breakdown.dp);
    CHECK(slow.predicted_s > own.predicted_s);
    CHECK_NEAR(slow.breakdown.compute, own.breakdown.compute, 1e-9 * own.breakdown.compute);
    /* an override replaces the row's cluster, network and all */
    sc_val_opts o = {0};
    o.cluster_override = "dgx-a100-80g";
    sc_val_result over;
    REQUIRE(sc_val_run_row(s, 0, &o, &over, &err) == SC_OK);
    CHECK(!strcmp(over.cluster, "dgx-a100-80g"));
    CHECK_NEAR(over.predicted_s, own.predicted_s, 1e-12 * own.predicted_s);
    sc_val_free(s);
    static const char *const approx = ", \"approximate\": true";
    REFUSED(model, layout, "{\"preset\": \"dgx-a100-80g\", \"nodes\": 2, \"network\": "
            "{\"nics_per_node\": 0, \"nic_gbps\": 100}}", MEASURED_OK, approx,
            "rows[0].cluster.network.nics_per_node");
    REFUSED(model, layout, "{\"preset\": \"dgx-a100-80g\", \"nodes\": 2, \"network\": "
            "{\"nics_per_node\": 2, \"nic_gbps\": -5}}", MEASURED_OK, approx,
            "rows[0].cluster.network.nic_gbps");
    REFUSED(model, layout, "{\"preset\": \"dgx-a100-80g\", \"nodes\": 2, \"network\": "
            "{\"nics_per_node\": 2}}", MEASURED_OK, approx,
            "rows[0].cluster.network.nic_gbps: missing");
    REFUSED(model, layout, "{\"preset\": \"dgx-a100-80g\", \"nodes\": 2, \"network\": "
            "{\"nics_per_node\": 2, \"nic_gbps\": 100, \"rdma\": true}}", MEASURED_OK,
            approx, "rows[0].cluster.network.rdma: unknown field");
    REFUSED(model, layout, "{\"preset\": \"dgx-a100-80g\", \"nodes\": 2, \"network\": 400}",
            MEASURED_OK, approx, "rows[0].cluster.network");
    REFUSED(model, layout, "{\"preset\": \"dgx-a100-80g\", \"nodes\": 2, \"network\": "
            "{\"nics_per_node\": 2, \"nic_gbps\": 100}}", MEASURED_OK, "",
            "rows[0].cluster.network: a row on another network than its preset's must be "
            "marked approximate");
}

/* Each FLOP convention of measured.tflops_per_gpu becomes the iteration time
 * its formula gives (validate.h), on TINY (l 4, h 256, s 128, V 1024) at
 * global batch 8 over 8 GPUs. */
TEST(validate_flops_conventions)
{
    const double B = 8, s = 128, l = 4, h = 256, V = 1024, N = 3.0e6, tf = 0.002, g = 8;
    const struct {
        const char *flops;
        int with_params;
        double F;
    } c[] = {
        {"6nd", 1, 6 * N * B * s},
        {"6nd-attn", 1, 6 * N * B * s + 12 * l * h * B * s * s},
        {"megatron", 0, 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))},
        {"megatron-full-recompute", 0,
         96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char me[256], text[4096];
        if (c[i].with_params)
            snprintf(me, sizeof me, "{\"tflops_per_gpu\": %g, \"flops\": \"%s\", "
                     "\"params\": %g, \"formula\": \"x\"}", tf, c[i].flops, N);
        else
            snprintf(me, sizeof me, "{\"tflops_per_gpu\": %g, \"flops\": \"%s\", "
                     "\"formula\": \"x\"}", tf, c[i].flops);
        one_row(text, sizeof text, TINY, LAYOUT_OK, CLUSTER_OK, me, "");
        sc_val_suite *v = NULL;
        sc_error err = {0};
        if (sc_val_load(put("flops.json", text), &v, &err) != SC_OK) {
            sc_test_fail(__FILE__, __LINE__, "%s: %s", c[i].flops, err.msg);
            continue;
        }
        CHECK_NEAR(v->rows[0].measured_s, c[i].F / (tf * 1e12 * g), 1e-12);
        sc_val_free(v);
    }
}

TEST(validate_load_refuses_infeasible_layouts)
{
    /* tp 3 does not divide 4 heads (one node of 8 has the ranks) */
    REFUSED(TINY, "{\"dp\": 1, \"tp\": 3, \"pp\": 1, \"recompute\": \"none\", \"mbs\": 1, "
            "\"global_batch\": 2}", CLUSTER_OK, MEASURED_OK, "", "rows[0].layout.tp");
    /* grouped-query attention: tp must divide the kv heads too */
    REFUSED("{\"generator\": \"llama\", \"layers\": 2, \"hidden\": 256, \"heads\": 8, "
            "\"kv_heads\": 2, \"ffn\": 512, \"seq\": 64, \"vocab\": 512}",
            "{\"dp\": 1, \"tp\": 4, \"pp\": 1, \"recompute\": \"none\", \"mbs\": 1, "
            "\"global_batch\": 2}", CLUSTER_OK, MEASURED_OK, "", "rows[0].layout.tp");
    /* a global batch not divisible by dp·mbs */
    REFUSED(TINY, "{\"dp\": 2, \"tp\": 1, \"pp\": 1, \"recompute\": \"none\", \"mbs\": 2, "
            "\"global_batch\": 6}", CLUSTER_OK, MEASURED_OK, "", "rows[0].layout.global_batch");
    /* interleaved: m not a multiple of pp */
    REFUSED(TINY, "{\"dp\": 1, \"tp\": 1, \"pp\": 2, \"v\": 2, \"recompute\": \"none\", "
            "\"mbs\": 1, \"global_batch\": 3}", CLUSTER_OK, MEASURED_OK, "",
            "rows[0].layout.global_batch");
    /* v > 1 without the interleaved schedule */
    REFUSED(TINY, "{\"dp\": 1, \"tp\": 1, \"pp\": 2, \"v\": 2, \"schedule\": \"1f1b\", "
            "\"recompute\": \"none\", \"mbs\": 1, \"global_batch\": 4}", CLUSTER_OK,
            MEASURED_OK, "", "rows[0].layout.v");
    /* more stages than layers */
    REFUSED(TINY, "{\"dp\": 1, \"tp\": 1, \"pp\": 4, \"v\": 2, \"recompute\": \"none\", "
            "\"mbs\": 1, \"global_batch\": 4}", CLUSTER_OK, MEASURED_OK, "",
            "rows[0].layout.pp");
    /* sequence parallelism without tensor parallelism */
    REFUSED(TINY, "{\"dp\": 1, \"tp\": 1, \"pp\": 1, \"recompute\": \"none\", \"sp\": true, "
            "\"mbs\": 1, \"global_batch\": 4}", CLUSTER_OK, MEASURED_OK, "",
            "rows[0].layout.sp");
    /* the overlaps where they cannot apply */
    REFUSED(TINY, "{\"dp\": 1, \"tp\": 2, \"pp\": 1, \"recompute\": \"none\", "
            "\"tp_comm_overlap\": true, \"mbs\": 1, \"global_batch\": 4}", CLUSTER_OK,
            MEASURED_OK, "", "rows[0].layout.tp_comm_overlap");
    REFUSED(TINY, "{\"dp\": 2, \"tp\": 1, \"pp\": 1, \"recompute\": \"none\", "
            "\"overlap_param_gather\": true, \"mbs\": 1, \"global_batch\": 4}", CLUSTER_OK,
            MEASURED_OK, "", "rows[0].layout.overlap_param_gather");
    /* the output layer's deferred weight gradients need a pipeline */
    REFUSED(TINY, "{\"dp\": 1, \"tp\": 1, \"pp\": 1, \"recompute\": \"none\", "
            "\"defer_embedding_wgrad_compute\": true, \"mbs\": 1, \"global_batch\": 4}",
            CLUSTER_OK, MEASURED_OK, "", "rows[0].layout.defer_embedding_wgrad_compute");
    REFUSED(TINY, "{\"dp\": 1, \"tp\": 1, \"pp\": 2, \"recompute\": \"none\", "
            "\"defer_embedding_wgrad_compute\": true, \"wgrad_deferral_limit\": -1, "
            "\"mbs\": 1, \"global_batch\": 4}",
            CLUSTER_OK, MEASURED_OK, "", "rows[0].layout.wgrad_deferral_limit");
    /* more ranks than GPUs */
    REFUSED(TINY, "{\"dp\": 8, \"tp\": 2, \"pp\": 1, \"recompute\": \"none\", \"mbs\": 1, "
            "\"global_batch\": 8}", CLUSTER_OK, MEASURED_OK, "", "rows[0].cluster.nodes");
    /* an unknown schedule (the simulator's own check, prefixed with the path) */
    REFUSED(TINY, "{\"dp\": 1, \"tp\": 1, \"pp\": 2, \"schedule\": \"dualpipe\", "
            "\"recompute\": \"none\", \"mbs\": 1, \"global_batch\": 4}", CLUSTER_OK,
            MEASURED_OK, "", "rows[0].layout");
    REFUSED(TINY, "{\"dp\": 1, \"tp\": 1, \"pp\": 1, \"recompute\": \"some\", \"mbs\": 1, "
            "\"global_batch\": 4}", CLUSTER_OK, MEASURED_OK, "", "rows[0].layout.recompute");
}

/* A row's layout may say which Megatron-LM overlaps the run used
 * (tp_comm_overlap, overlap_param_gather); each reaches the simulated step
 * and makes it shorter on a row where it has something to overlap. */
/* One row of a 4-layer gpt large enough that its collectives are bandwidth's,
 * not latency's, with this layout: loaded (its flags checked by the caller
 * through *row) and run; its predicted step. */
static double overlap_row(const char *layout, sc_val_row *row)
{
    char text[4096];
    one_row(text, sizeof text,
            "{\"generator\": \"gpt\", \"layers\": 4, \"hidden\": 4096, \"heads\": 32, "
            "\"seq\": 2048, \"vocab\": 1024, \"tied\": true}",
            layout, CLUSTER_OK, MEASURED_OK, "");
    sc_val_suite *s = NULL;
    sc_error err = {0};
    sc_val_result r = {0};
    if (sc_val_load(put("ov.json", text), &s, &err) != SC_OK ||
        sc_val_run_row(s, 0, NULL, &r, &err) != SC_OK) {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        sc_val_free(s);
        return 0;
    }
    *row = s->rows[0];
    sc_val_free(s);
    return r.predicted_s;
}

TEST(validate_row_overlaps)
{
    const char *layouts[3] = {
        "{\"dp\": 2, \"tp\": 2, \"pp\": 1, \"zero\": 1, \"recompute\": \"none\", "
        "\"sp\": true, \"mbs\": 1, \"global_batch\": 8}",
        "{\"dp\": 2, \"tp\": 2, \"pp\": 1, \"zero\": 1, \"recompute\": \"none\", "
        "\"sp\": true, \"tp_comm_overlap\": true, \"mbs\": 1, \"global_batch\": 8}",
        "{\"dp\": 2, \"tp\": 2, \"pp\": 1, \"zero\": 1, \"recompute\": \"none\", "
        "\"sp\": true, \"tp_comm_overlap\": true, \"overlap_param_gather\": true, "
        "\"mbs\": 1, \"global_batch\": 8}"};
    double t[3] = {0};
    sc_val_row row;
    for (int i = 0; i < 3; i++) {
        t[i] = overlap_row(layouts[i], &row);
        CHECK_EQ_INT(row.tp_comm_overlap, i >= 1);
        CHECK_EQ_INT(row.overlap_param_gather, i >= 2);
    }
    CHECK(t[1] != t[0]); /* the key reaches the simulator (faster or slower: cost_kernel.c) */
    CHECK(t[2] < t[1]);
    /* overlap_grad_reduce false (DeepSpeed's pipeline engine): the buckets wait for
     * the last backward, so a step without a pipeline is longer; overlap_param_gather
     * needs it, and is refused without it */
    double g0 = overlap_row("{\"dp\": 8, \"tp\": 1, \"pp\": 1, \"recompute\": \"none\", "
                            "\"mbs\": 1, \"global_batch\": 8}",
                            &row);
    CHECK_EQ_INT(row.overlap_grad_reduce, 1);
    double g1 = overlap_row("{\"dp\": 8, \"tp\": 1, \"pp\": 1, \"recompute\": \"none\", "
                            "\"overlap_grad_reduce\": false, \"mbs\": 1, \"global_batch\": 8}",
                            &row);
    CHECK_EQ_INT(row.overlap_grad_reduce, 0);
    CHECK_EQ_INT(row.grad_reduce_in_fp32, 0);
    CHECK(g1 > g0);
    /* grad_reduce_in_fp32 (Composer's FSDP DEFAULT, DDP under autocast): the
     * buckets carry twice the bytes, so the exposed reduction is longer */
    double g2 = overlap_row("{\"dp\": 8, \"tp\": 1, \"pp\": 1, \"recompute\": \"none\", "
                            "\"overlap_grad_reduce\": false, \"grad_reduce_in_fp32\": true, "
                            "\"mbs\": 1, \"global_batch\": 8}",
                            &row);
    CHECK_EQ_INT(row.grad_reduce_in_fp32, 1);
    CHECK(g2 > g1);
    REFUSED(TINY, "{\"dp\": 2, \"tp\": 1, \"pp\": 1, \"zero\": 1, \"recompute\": \"none\", "
            "\"overlap_grad_reduce\": false, \"overlap_param_gather\": true, \"mbs\": 1, "
            "\"global_batch\": 4}", CLUSTER_OK, MEASURED_OK, "", "rows[0].layout.overlap_param_gather");
}

TEST(validate_load_refuses_bad_fields)
{
    REFUSED(TINY, LAYOUT_OK, "{\"preset\": \"dgx-z900\", \"nodes\": 1}", MEASURED_OK, "",
            "rows[0].cluster.preset");
    REFUSED(TINY, LAYOUT_OK, "{\"preset\": \"dgx-a100-80g\", \"nodes\": 0}", MEASURED_OK, "",
            "rows[0].cluster.nodes");
    REFUSED("{\"builtin\": \"gpt-9t\"}", LAYOUT_OK, CLUSTER_OK, MEASURED_OK, "",
            "rows[0].model.builtin");
    REFUSED("{\"generator\": \"rnn\", \"layers\": 2}", LAYOUT_OK, CLUSTER_OK, MEASURED_OK, "",
            "rows[0].model.generator");
    REFUSED("{\"generator\": \"gpt\", \"layers\": 2, \"hidden\": 100, \"heads\": 3}", LAYOUT_OK,
            CLUSTER_OK, MEASURED_OK, "", "rows[0].model");
    REFUSED("{\"generator\": \"gpt\", \"depth\": 2}", LAYOUT_OK, CLUSTER_OK, MEASURED_OK, "",
            "rows[0].model");
    /* pipeline sends beside the compute or blocking: a boolean */
    REFUSED(TINY, "{\"dp\": 2, \"tp\": 2, \"pp\": 2, \"recompute\": \"none\", \"mbs\": 1, "
            "\"global_batch\": 8, \"overlap_p2p_comm\": 0}", CLUSTER_OK, MEASURED_OK, "",
            "rows[0].layout.overlap_p2p_comm");
    /* the gradient reduction's width: a boolean */
    REFUSED(TINY, "{\"dp\": 2, \"tp\": 1, \"pp\": 1, \"recompute\": \"none\", \"mbs\": 1, "
            "\"global_batch\": 4, \"grad_reduce_in_fp32\": \"fp32\"}", CLUSTER_OK, MEASURED_OK,
            "", "rows[0].layout.grad_reduce_in_fp32");
    /* the loss a row's framework ran is given by name */
    REFUSED("{\"generator\": \"gpt\", \"cross_entropy\": \"apex\"}", LAYOUT_OK, CLUSTER_OK,
            MEASURED_OK, "", "rows[0].model.cross_entropy: must be megatron, megatron-fused or "
            "xentropy");
    REFUSED("{\"generator\": \"gpt\", \"cross_entropy\": 2}", LAYOUT_OK, CLUSTER_OK,
            MEASURED_OK, "", "rows[0].model.cross_entropy: must be megatron");
    REFUSED(TINY, "{\"dp\": 2, \"tp\": 2, \"pp\": 2, \"recompute\": \"none\", \"mbs\": 1, "
            "\"global_batch\": 8, \"ep\": 2}", CLUSTER_OK, MEASURED_OK, "",
            "rows[0].layout.ep: unknown field");
    /* context parallelism: its range, its ranks, and what it needs (flash) */
    REFUSED(TINY, "{\"dp\": 2, \"cp\": 0, \"tp\": 2, \"pp\": 1, \"recompute\": \"none\", "
            "\"mbs\": 1, \"global_batch\": 4}", CLUSTER_OK, MEASURED_OK, "",
            "rows[0].layout.cp");
    REFUSED(TINY, "{\"dp\": 2, \"cp\": 4, \"tp\": 2, \"pp\": 1, \"recompute\": \"none\", "
            "\"attention\": \"flash\", \"mbs\": 1, \"global_batch\": 4}", CLUSTER_OK,
            MEASURED_OK, "", "rows[0].cluster.nodes: dp·cp·tp·pp = 16 ranks");
    REFUSED(TINY, "{\"dp\": 2, \"cp\": 2, \"tp\": 2, \"pp\": 1, \"recompute\": \"none\", "
            "\"mbs\": 1, \"global_batch\": 4}", CLUSTER_OK, MEASURED_OK, "",
            "rows[0].layout: --cp: context parallelism passes keys and values between fused "
            "attention kernels");
    REFUSED(TINY, "{\"dp\": 2, \"tp\": 2, \"pp\": 2, \"recompute\": \"none\", \"mbs\": 1, "
            "\"global_batch\": 8, \"framework\": \"jax\"}", CLUSTER_OK, MEASURED_OK, "",
            "rows[0].layout.framework: \"jax\" is not megatron, deepspeed or torch");
    REFUSED(TINY, LAYOUT_OK, CLUSTER_OK, "{}", "", "rows[0].measured: missing");
    REFUSED(TINY, LAYOUT_OK, CLUSTER_OK, "{\"iteration_s\": 1, \"tokens_per_s\": 5}", "",
            "rows[0].measured");
    REFUSED(TINY, LAYOUT_OK, CLUSTER_OK, "{\"tokens_per_s\": 5}", "",
            "rows[0].measured.formula: missing");
    REFUSED(TINY, LAYOUT_OK, CLUSTER_OK, "{\"iteration_s\": -1}", "",
            "rows[0].measured.iteration_s");
    REFUSED(TINY, LAYOUT_OK, CLUSTER_OK,
            "{\"tflops_per_gpu\": 100, \"flops\": \"magic\", \"formula\": \"x\"}", "",
            "rows[0].measured.flops");
    REFUSED(TINY, LAYOUT_OK, CLUSTER_OK,
            "{\"tflops_per_gpu\": 100, \"flops\": \"6nd\", \"formula\": \"6ND\"}", "",
            "rows[0].measured.params: missing");
    REFUSED(TINY, LAYOUT_OK, CLUSTER_OK,
            "{\"tflops_per_gpu\": 100, \"flops\": \"6nd-attn\", \"formula\": \"x\"}", "",
            "rows[0].measured.params: missing");
    REFUSED(TINY, LAYOUT_OK, CLUSTER_OK,
            "{\"tflops_per_gpu\": 100, \"flops\": \"megatron\", \"params\": 5, "
            "\"formula\": \"x\"}", "", "rows[0].measured.params: only 6nd and 6nd-attn");
    REFUSED(TINY, LAYOUT_OK, CLUSTER_OK, MEASURED_OK, ", \"source\": \"t\"", "duplicate field");
    REFUSED(TINY, LAYOUT_OK, CLUSTER_OK, MEASURED_OK, ", \"assumptions\": \"mbs 1\"",
            "rows[0].approximate");
    REFUSED(TINY, LAYOUT_OK, CLUSTER_OK, MEASURED_OK, ", \"hardware2\": \"x\"",
            "rows[0].hardware2: unknown field");

    /* suite-level faults */
    sc_val_suite *s = NULL;
    sc_error err = {0};
    const char *f = put("v.json", "{\"format\": \"stagecraft.plan/1\"}");
    CHECK(sc_val_load(f, &s, &err) != SC_OK);
    CHECK_STR_HAS(err.msg, f);
    CHECK_STR_HAS(err.msg, "format");
    char text[4096];
    one_row(text, sizeof text, TINY, LAYOUT_OK, CLUSTER_OK, MEASURED_OK, "");
    char *src = strstr(text, "\"source\": \"s\"");
    REQUIRE(src);
    src[11] = 'x'; /* the row cites a source the suite does not list */
    f = put("v.json", text);
    CHECK(sc_val_load(f, &s, &err) != SC_OK);
    CHECK_STR_HAS(err.msg, "rows[0].source");
    f = put("v.json", "{\"format\": \"stagecraft.validation/1\", \"name\": \"t\", "
                      "\"sources\": [{\"id\": \"s\", \"citation\": \"c\", \"year\": 2024}], "
                      "\"rows\": []}");
    CHECK(sc_val_load(f, &s, &err) != SC_OK);
    CHECK_STR_HAS(err.msg, "rows");
    /* two rows with one id */
    char two[8192];
    one_row(two, sizeof two, TINY, LAYOUT_OK, CLUSTER_OK, MEASURED_OK, "");
    char *end = strrchr(two, ']');
    REQUIRE(end);
    char *row = strstr(two, "{\"id\": \"r0\"");
    REQUIRE(row);
    char copy[4096];
    snprintf(copy, sizeof copy, ", %.*s]}\n", (int)(end - row), row);
    strcpy(end, copy);
    f = put("v.json", two);
    CHECK(sc_val_load(f, &s, &err) != SC_OK);
    CHECK_STR_HAS(err.msg, "rows[1].id");
}

/* layout.attention_kernel: the run's fused attention kernel (fa2, fa3,
 * triton, cudnn) at its published rates on the row's GPU; refused when it is not a kernel, without flash
 * attention, or where the GPU has none (FA3 or cuDNN on an A100). */
TEST(validate_attention_kernel)
{
#define FLASH_LAYOUT(k) "{\"dp\": 8, \"tp\": 1, \"pp\": 1, \"recompute\": \"none\", " \
                        "\"attention\": \"flash\"" k ", \"mbs\": 2, \"global_batch\": 32}"
#define H100 "{\"preset\": \"dgx-h100\", \"nodes\": 1}"
    REFUSED(TINY, FLASH_LAYOUT(", \"attention_kernel\": \"fa9\""), H100, MEASURED_OK, "",
            "rows[0].layout.attention_kernel: \"fa9\" is not fa1, fa2, fa3, triton, cudnn");
    REFUSED(TINY, "{\"dp\": 8, \"tp\": 1, \"pp\": 1, \"recompute\": \"none\", "
            "\"attention_kernel\": \"fa2\", \"mbs\": 2, \"global_batch\": 32}", H100,
            MEASURED_OK, "", "rows[0].layout.attention_kernel: needs \"attention\": \"flash\"");
    REFUSED(TINY, FLASH_LAYOUT(", \"attention_kernel\": \"fa3\""), CLUSTER_OK, MEASURED_OK, "",
            "rows[0].layout.attention_kernel: no published fa3 rate for A100");
    REFUSED(TINY, FLASH_LAYOUT(", \"attention_kernel\": \"cudnn\""), CLUSTER_OK, MEASURED_OK,
            "", "rows[0].layout.attention_kernel: no published cudnn rate for A100");
    /* on H100, fa2 runs the step slower than the preset's fa3, by the
     * attention's share only; fa3 is the preset itself; cuDNN's published
     * rates lie between FA3's and FA2's */
    double t[5];
    const char *ks[5] = {"", ", \"attention_kernel\": \"fa3\"", ", \"attention_kernel\": \"fa2\"",
                         ", \"attention_kernel\": \"triton\"",
                         ", \"attention_kernel\": \"cudnn\""};
    for (int i = 0; i < 5; i++) {
        char layout[512], text[4096];
        snprintf(layout, sizeof layout, FLASH_LAYOUT("%s"), ks[i]);
        /* long enough sequences for attention to be compute-bound */
        one_row(text, sizeof text,
                "{\"generator\": \"gpt\", \"layers\": 2, \"hidden\": 1024, \"heads\": 8, "
                "\"seq\": 2048, \"vocab\": 1024, \"tied\": true}", layout, H100, MEASURED_OK,
                "");
        sc_val_suite *s = NULL;
        sc_error err = {0};
        sc_val_result r;
        REQUIRE(sc_val_load(put("k.json", text), &s, &err) == SC_OK);
        REQUIRE(sc_val_run_row(s, 0, NULL, &r, &err) == SC_OK);
        t[i] = r.predicted_s;
        sc_val_free(s);
    }
    CHECK(t[1] == t[0]);
    CHECK(t[2] > t[0] * 1.001);
    CHECK(t[2] < t[0] * 1.5);
    CHECK(t[3] > t[2] * 1.001); /* the Triton kernel is slower again than FA2 */
    CHECK(t[3] < t[2] * 1.5);
    CHECK(t[4] > t[0] * 1.0001 && t[4] < t[2]);
#undef FLASH_LAYOUT
#undef H100
}

/* ---- the arithmetic ------------------------------------------------------------------ */

/* Three rows of a tiny GPT on one DGX A100 (different layouts), each
 * simulated once; then a suite whose measured figures are those predictions
 * divided by 1 + e for known e. */
static const char *const layouts[3] = {
    "{\"dp\": 2, \"tp\": 2, \"pp\": 2, \"recompute\": \"none\", \"mbs\": 1, \"global_batch\": 8}",
    "{\"dp\": 1, \"tp\": 4, \"pp\": 2, \"v\": 2, \"recompute\": \"selective\", \"sp\": true, "
    "\"mbs\": 2, \"global_batch\": 8}",
    "{\"dp\": 4, \"tp\": 1, \"pp\": 1, \"zero\": 3, \"recompute\": \"full\", \"mbs\": 2, "
    "\"global_batch\": 16}"};
static const double want_err[3] = {0.10, -0.05, 0.02};

static int predictions(double pred[3], long gb[3], int gpus[3])
{
    for (int i = 0; i < 3; i++) {
        char text[4096];
        one_row(text, sizeof text, TINY, layouts[i], CLUSTER_OK, MEASURED_OK, "");
        sc_val_suite *s = NULL;
        sc_error err = {0};
        sc_val_result r;
        if (sc_val_load(put("p.json", text), &s, &err) || sc_val_run_row(s, 0, NULL, &r, &err)) {
            sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
            sc_val_free(s);
            return -1;
        }
        pred[i] = r.predicted_s;
        gb[i] = s->rows[0].global_batch;
        gpus[i] = r.gpus;
        sc_val_free(s);
    }
    return 0;
}

/* The suite with measured = pred / (1 + e): row 0 as an iteration time, row
 * 1 as tokens per second, row 2 as Megatron-LM TFLOP/s per GPU. */
static const char *error_suite(const double pred[3], const long gb[3], const int gpus[3])
{
    static char text[16384];
    char me[3][512];
    double t[3];
    for (int i = 0; i < 3; i++)
        t[i] = pred[i] / (1 + want_err[i]);
    snprintf(me[0], sizeof me[0], "{\"iteration_s\": %.17g}", t[0]);
    snprintf(me[1], sizeof me[1],
             "{\"tokens_per_s\": %.17g, \"formula\": \"global batch x seq / tokens per s\"}",
             (double)gb[1] * 128 / t[1]);
    /* Megatron-LM's 96·B·s·l·h²(1 + s/6h + V/16lh) for full recompute */
    double l = 4, h = 256, s = 128, V = 1024;
    double F = 96.0 * gb[2] * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    snprintf(me[2], sizeof me[2],
             "{\"tflops_per_gpu\": %.17g, \"flops\": \"megatron-full-recompute\", "
             "\"formula\": \"Narayanan et al. 2021 eq. 3\"}",
             F / (t[2] * 1e12 * gpus[2]));
    int n = snprintf(text, sizeof text,
                     "{\"format\": \"stagecraft.validation/1\", \"name\": \"arith\",\n"
                     " \"sources\": [{\"id\": \"s\", \"citation\": \"made up for a test\", "
                     "\"year\": 2024}],\n \"rows\": [");
    for (int i = 0; i < 3; i++)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "%s{\"id\": \"r%d\", \"source\": \"s\", \"where\": \"nowhere\", "
                      "\"hardware\": \"none\", \"software\": \"none\", \"model\": %s, "
                      "\"layout\": %s, \"cluster\": %s, \"measured\": %s}\n",
                      i ? ", " : "", i, TINY, layouts[i], CLUSTER_OK, me[i]);
    snprintf(text + n, sizeof text - (size_t)n, "]}\n");
    return put("arith.json", text);
}

TEST(validate_error_arithmetic)
{
    double pred[3];
    long gb[3];
    int gpus[3];
    REQUIRE(predictions(pred, gb, gpus) == 0);
    const char *file = error_suite(pred, gb, gpus);
    sc_val_suite *s = NULL;
    sc_error err = {0};
    REQUIRE(sc_val_load(file, &s, &err) == SC_OK);
    REQUIRE(s->n == 3);
    double e[3];
    for (int i = 0; i < 3; i++) {
        sc_val_result r;
        REQUIRE(sc_val_run_row(s, i, NULL, &r, &err) == SC_OK);
        CHECK_NEAR(r.predicted_s, pred[i], 1e-12); /* deterministic */
        CHECK_NEAR(r.measured_s, pred[i] / (1 + want_err[i]), 1e-12);
        CHECK_NEAR(r.error, want_err[i], 1e-9);
        CHECK_EQ_INT(r.gpus, gpus[i]);
        e[i] = r.error;
    }
    sc_val_stats st;
    sc_val_stats_of(e, 3, &st);
    CHECK_EQ_INT(st.n, 3);
    CHECK_NEAR(st.mape, (0.10 + 0.05 + 0.02) / 3, 1e-9);
    CHECK_NEAR(st.mean_signed, (0.10 - 0.05 + 0.02) / 3, 1e-9);
    CHECK_NEAR(st.max_abs, 0.10, 1e-9);
    CHECK(!sc_val_targets_met(&st));
    sc_val_free(s);

    /* the same through the command's --json */
    REQUIRE(SC("%s validate --suite %s --json 2>/dev/null", sc_test_bin(), file) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
    const cJSON *suites = cJSON_GetObjectItemCaseSensitive(j, "suites");
    CHECK(cJSON_IsArray(rows) && cJSON_GetArraySize(rows) == 3);
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(suites, "arith")));
    const char *keys[] = {"mape", "mean_signed_error", "max_abs_error"};
    double want[] = {(0.10 + 0.05 + 0.02) / 3, (0.10 - 0.05 + 0.02) / 3, 0.10};
    for (int k = 0; k < 3; k++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, keys[k]);
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(suites, "arith"), keys[k]);
        CHECK(cJSON_IsNumber(x) && cJSON_IsNumber(y));
        if (cJSON_IsNumber(x))
            CHECK_NEAR(x->valuedouble, want[k], 1e-9);
        if (cJSON_IsNumber(y))
            CHECK_NEAR(y->valuedouble, want[k], 1e-9);
    }
    int i = 0;
    for (const cJSON *r = rows ? rows->child : NULL; r; r = r->next, i++) {
        const char *rk[] = {"suite", "id", "source", "where", "model", "cluster", "gpus",
                            "predicted_s", "measured_s", "error", "approximate"};
        for (size_t k = 0; k < SC_ARRAY_LEN(rk); k++)
            CHECK(cJSON_GetObjectItemCaseSensitive(r, rk[k]) != NULL);
        const cJSON *er = cJSON_GetObjectItemCaseSensitive(r, "error");
        if (cJSON_IsNumber(er) && i < 3)
            CHECK_NEAR(er->valuedouble, want_err[i], 1e-9);
        /* where the predicted step went: its parts add up to it (sim's
         * breakdown, an average rank), the compute among them */
        const cJSON *bd = cJSON_GetObjectItemCaseSensitive(r, "breakdown");
        REQUIRE(cJSON_IsObject(bd));
        double sum = 0;
        for (const cJSON *x = bd->child; x; x = x->next)
            sum += cJSON_GetNumberValue(x);
        double step = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "predicted_s"));
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(bd, "compute_s")) > 0);
        CHECK_NEAR(sum, step, 1e-6);
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "targets");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(t, "met")));
    cJSON_Delete(j);

    /* the text report: one line per row, the suite's and the overall figures */
    REQUIRE(SC("%s validate --suite %s", sc_test_bin(), file) == 0);
    CHECK_STR_HAS(out, "arith/r0");
    CHECK_STR_HAS(out, "+10.0%");
    CHECK_STR_HAS(out, "-5.0%");
    CHECK_STR_HAS(out, "suite arith");
    CHECK_STR_HAS(out, "all rows");
    CHECK_STR_HAS(out, "NOT met");
    /* --breakdown: each row's shares of its predicted step add up to it */
    REQUIRE(SC("%s validate --suite %s --breakdown", sc_test_bin(), file) == 0);
    const char *bdh = strstr(out, "where each predicted step goes");
    REQUIRE(bdh);
    const char *line = strstr(bdh, "\narith/r0");
    REQUIRE(line);
    double row_err, sh[5], busy;
    char nm[64];
    REQUIRE(sscanf(line + 1, "%63s %lf%% %lf%% %lf%% %lf%% %lf%% %lf%% %lf%%", nm, &row_err,
                   &sh[0], &sh[1], &sh[2], &sh[3], &sh[4], &busy) == 8);
    CHECK_NEAR(row_err, 10.0, 1e-9);
    CHECK(sh[0] > 0);
    CHECK(fabs(sh[0] + sh[1] + sh[2] + sh[3] + sh[4] - 100) < 0.3); /* five rounded shares */
    /* --by: the errors grouped by what the rows are (rows 0 and 1 on 8 GPUs,
     * +10% and -5%; row 2 on 4, +2%), groups in the keys' order */
    REQUIRE(SC("%s validate --suite %s --by gpus --json 2>/dev/null", sc_test_bin(), file) == 0);
    j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(j, "by");
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(by, "groups");
    REQUIRE(cJSON_IsArray(groups) && cJSON_GetArraySize(groups) == 2);
    const cJSON *g4 = cJSON_GetArrayItem(groups, 0), *g8 = cJSON_GetArrayItem(groups, 1);
#define GNUM(g, k) cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(g, k))
    CHECK_NEAR(GNUM(g4, "gpus"), 4, 0);
    CHECK_NEAR(GNUM(g4, "rows"), 1, 0);
    CHECK_NEAR(GNUM(g4, "mape"), 0.02, 1e-9);
    CHECK_NEAR(GNUM(g8, "gpus"), 8, 0);
    CHECK_NEAR(GNUM(g8, "rows"), 2, 0);
    CHECK_NEAR(GNUM(g8, "mape"), 0.075, 1e-9);
    CHECK_NEAR(GNUM(g8, "mean_signed_error"), 0.025, 1e-9);
    CHECK_NEAR(GNUM(g8, "max_abs_error"), 0.10, 1e-9);
    CHECK_NEAR(GNUM(g8, "min_error"), -0.05, 1e-9);
    CHECK_NEAR(GNUM(g8, "max_error"), 0.10, 1e-9);
    cJSON_Delete(j);
    /* two keys: (mbs 1, none), (mbs 2, full), (mbs 2, selective) */
    REQUIRE(SC("%s validate --suite %s --by mbs,recompute --json 2>/dev/null", sc_test_bin(),
               file) == 0);
    j = cJSON_Parse(out);
    REQUIRE(j);
    groups = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "by"),
                                              "groups");
    REQUIRE(cJSON_IsArray(groups) && cJSON_GetArraySize(groups) == 3);
    const char *rc_want[] = {"none", "full", "selective"};
    const double mbs_want[] = {1, 2, 2}, err_want[] = {0.10, 0.02, -0.05};
    for (int q = 0; q < 3; q++) {
        const cJSON *g = cJSON_GetArrayItem(groups, q);
        const cJSON *rc = cJSON_GetObjectItemCaseSensitive(g, "recompute");
        CHECK(cJSON_IsString(rc) && !strcmp(rc->valuestring, rc_want[q]));
        CHECK_NEAR(GNUM(g, "mbs"), mbs_want[q], 0);
        CHECK_NEAR(GNUM(g, "mean_signed_error"), err_want[q], 1e-9);
    }
#undef GNUM
    cJSON_Delete(j);
    REQUIRE(SC("%s validate --suite %s --by gpus", sc_test_bin(), file) == 0);
    const char *byh = strstr(out, "errors by gpus (--by):");
    REQUIRE(byh);
    CHECK_STR_HAS(byh, "\ngpus  rows     MAPE  mean signed        min        max\n");
    CHECK_STR_HAS(byh, "\n4        1     2.0%        +2.0%      +2.0%      +2.0%\n");
    CHECK_STR_HAS(byh, "\n8        2     7.5%        +2.5%      -5.0%     +10.0%\n");
    /* keys it does not know, or twice, or too many: usage errors */
    CHECK(SC("%s validate --suite %s --by nope", sc_test_bin(), file) == 2);
    CHECK_STR_HAS(out, "--by: no key 'nope' (suite, cluster");
    CHECK(SC("%s validate --suite %s --by seq,seq", sc_test_bin(), file) == 2);
    CHECK_STR_HAS(out, "'seq' given twice");
    CHECK(SC("%s validate --suite %s --by seq,gpus,dp,tp,pp", sc_test_bin(), file) == 2);
    CHECK_STR_HAS(out, "at most 4 keys");
    CHECK(SC("%s validate --suite %s --by seq,", sc_test_bin(), file) == 2);
    CHECK_STR_HAS(out, "no key ''");
    /* --check: the targets are missed, exit 1 */
    CHECK(SC("%s validate --suite %s --check", sc_test_bin(), file) == 1);
    CHECK_STR_HAS(out, "targets are missed");
}

TEST(validate_stats_and_targets)
{
    sc_val_stats st;
    sc_val_stats_of(NULL, 0, &st);
    CHECK(st.n == 0 && st.mape == 0 && st.mean_signed == 0 && st.max_abs == 0);
    CHECK(!sc_val_targets_met(&st));
    double ok[] = {0.04, -0.04, 0.01, -0.02};
    sc_val_stats_of(ok, 4, &st);
    CHECK(sc_val_targets_met(&st));
    double row_out[] = {0.11, -0.01, 0, 0, 0, 0, 0, 0, 0, -0.09};
    sc_val_stats_of(row_out, 10, &st); /* MAPE 2.1%, bias +0.1%, but one row at 11% */
    CHECK(!sc_val_targets_met(&st));
    double biased[] = {-0.03, -0.03, -0.03, -0.03};
    sc_val_stats_of(biased, 4, &st);
    CHECK(!sc_val_targets_met(&st));
}

TEST(validate_command_refuses_infeasible_row)
{
    char text[4096];
    one_row(text, sizeof text, TINY,
            "{\"dp\": 1, \"tp\": 3, \"pp\": 1, \"recompute\": \"none\", \"mbs\": 1, "
            "\"global_batch\": 2}", CLUSTER_OK, MEASURED_OK, "");
    const char *f = put("infeasible.json", text);
    CHECK(SC("%s validate --suite %s", sc_test_bin(), f) == 2);
    CHECK_STR_HAS(out, f);
    CHECK_STR_HAS(out, "rows[0].layout.tp");
    /* one line, nothing on stdout */
    CHECK(strchr(out, '\n') == strrchr(out, '\n'));
    CHECK(SC("%s validate --suite no-such-suite", sc_test_bin()) == 2);
    CHECK(!strstr(out, "did you mean"));
    /* a suite named without its year: the one meant */
    CHECK(SC("%s validate --suite korthikanti", sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "--suite: no suite 'korthikanti' (");
    CHECK_STR_HAS(out, "korthikanti.json) (did you mean korthikanti2022?)");
    CHECK(SC("%s validate extra", sc_test_bin()) == 2);
    CHECK(SC("%s validate --help", sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "--cluster-override");
}

/* ---- the shipped suites ------------------------------------------------------------- */

TEST(validate_shipped_suites_load)
{
    char **paths = NULL;
    int n = 0;
    sc_error err = {0};
    REQUIRE(sc_val_list("validation", &paths, &n, &err) == SC_OK);
    CHECK(n >= 4);
    int rows = 0, korthikanti = 0, a100 = 0, h100 = 0;
    double min_gpus = 1e9, max_gpus = 0, min_params = 1e18, max_params = 0;
    for (int i = 0; i < n; i++) {
        sc_val_suite *s = NULL;
        if (sc_val_load(paths[i], &s, &err) != SC_OK) {
            sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
            continue;
        }
        for (int r = 0; r < s->n; r++) {
            const sc_val_row *w = &s->rows[r];
            rows++;
            /* cites a source: a citation with a year, a table or figure, the
             * hardware and the software */
            CHECK(w->source && w->source->citation && strlen(w->source->citation) > 20);
            CHECK(w->source && w->source->year >= 2019);
            CHECK(w->where && *w->where && w->hardware && *w->hardware && w->software &&
                  *w->software);
            /* an approximate row says what it assumes */
            if (w->approximate && !w->assumptions)
                sc_test_fail(__FILE__, __LINE__, "%s: %s: approximate without assumptions",
                             paths[i], w->path);
            /* a conversion is written down */
            if (w->kind != SC_VAL_ITERATION_S && !w->formula)
                sc_test_fail(__FILE__, __LINE__, "%s: %s: no formula", paths[i], w->path);
            CHECK(w->measured_s > 0);
            korthikanti += !strcmp(s->name, "korthikanti2022");
            const char *gpu_hint = w->preset;
            a100 += strstr(gpu_hint, "a100") || strstr(gpu_hint, "p4d");
            h100 += strstr(gpu_hint, "h100") || strstr(gpu_hint, "p5");
            double g = (double)w->dp * w->tp * w->pp;
            min_gpus = g < min_gpus ? g : min_gpus;
            max_gpus = g > max_gpus ? g : max_gpus;
            double p = sc_model_totals(w->model).params;
            min_params = p < min_params ? p : min_params;
            max_params = p > max_params ? p : max_params;
        }
        sc_val_free(s);
    }
    sc_val_paths_free(paths, n);
    CHECK_EQ_INT(korthikanti, 8);
    CHECK(rows >= korthikanti + 20);
    CHECK(a100 > 0 && h100 > 0);
    CHECK(min_gpus <= 8 && max_gpus >= 2048);
    CHECK(min_params < 2e9 && max_params > 9e11);
}

/* Every row of the shipped suites simulated once (the two tests below share
 * it): its suite/id, preset and signed error. */
#define SHIPPED_MAX 256
static struct {
    int n, done;
    char id[SHIPPED_MAX][96], preset[SHIPPED_MAX][32];
    int own_network[SHIPPED_MAX]; /* on its preset's network (no cluster.network) */
    double error[SHIPPED_MAX];
    int seq[SHIPPED_MAX];
    long gpus[SHIPPED_MAX];
    double params[SHIPPED_MAX];
    char attention[SHIPPED_MAX][16]; /* "unfused" or the fused kernel the row ran */
    double mem_share[SHIPPED_MAX];   /* that peak over a GPU's memory */
    int fp8[SHIPPED_MAX];            /* layout.fp8 */
    double est_pred[SHIPPED_MAX];    /* the planner's estimate / the simulated step */
} shipped;

static void run_shipped(void)
{
    if (shipped.done)
        return;
    shipped.done = 1;
    char **paths = NULL;
    int n = 0;
    sc_error err = {0};
    if (sc_val_list("validation", &paths, &n, &err) != SC_OK) {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        return;
    }
    for (int i = 0; i < n; i++) {
        sc_val_suite *s = NULL;
        if (sc_val_load(paths[i], &s, &err) != SC_OK) {
            sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
            continue;
        }
        for (int r = 0; r < s->n && shipped.n < SHIPPED_MAX; r++) {
            sc_val_result res;
            if (sc_val_run_row(s, r, NULL, &res, &err) != SC_OK) {
                sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
                continue;
            }
            snprintf(shipped.id[shipped.n], sizeof shipped.id[0], "%s/%s", s->name,
                     s->rows[r].id);
            snprintf(shipped.preset[shipped.n], sizeof shipped.preset[0], "%s",
                     s->rows[r].preset);
            shipped.own_network[shipped.n] = !s->rows[r].net_nics;
            shipped.seq[shipped.n] = s->rows[r].model->seq_len;
            shipped.gpus[shipped.n] = res.gpus;
            shipped.params[shipped.n] = sc_model_totals(s->rows[r].model).params;
            snprintf(shipped.attention[shipped.n], sizeof shipped.attention[0], "%s",
                     sc_val_row_attention(&s->rows[r], s->rows[r].preset));
            shipped.mem_share[shipped.n] = res.peak_mem_bytes / res.gpu_mem_bytes;
            shipped.fp8[shipped.n] = s->rows[r].fp8;
            shipped.est_pred[shipped.n] = res.estimate_s / res.predicted_s;
            shipped.error[shipped.n++] = res.error;
        }
        sc_val_free(s);
    }
    sc_val_paths_free(paths, n);
}

/* label.h's stored per-preset figures (rows, MAPE, mean signed error, sd of the
 * signed errors) against the shipped suites simulated now: stale by more than half
 * a point (0.005) fails, and so does a preset with rows that the table lacks. */
TEST(validate_label_table_is_current)
{
    int nt = 0;
    const sc_preset_validation *t = sc_preset_validations(&nt);
    REQUIRE(nt > 0 && nt <= 16);
    double *errs[16] = {0};
    int cnt[16] = {0}, total = 0, unlisted = 0;
    /* what each preset's rows span: sequence, GPUs, parameters */
    int seq_lo[16], seq_hi[16];
    long gpus_lo[16], gpus_hi[16];
    double par_lo[16], par_hi[16];
    char att[16][8][16]; /* the distinct attentions, sorted */
    int natt[16] = {0};
    for (int k = 0; k < 16; k++) {
        seq_lo[k] = 1 << 30, seq_hi[k] = 0, gpus_lo[k] = 1L << 40, gpus_hi[k] = 0;
        par_lo[k] = INFINITY, par_hi[k] = 0;
    }
    for (int k = 0; k < nt; k++)
        REQUIRE((errs[k] = calloc(SHIPPED_MAX, sizeof(double))) != NULL);
    run_shipped();
    for (int i = 0; i < shipped.n; i++) {
        /* a row on another network than its preset's (cluster.network) ran on
         * a cluster the label does not call the preset either (label.c) */
        if (!shipped.own_network[i])
            continue;
        total++;
        int k = 0;
        while (k < nt && strcmp(t[k].preset, shipped.preset[i]))
            k++;
        if (k == nt) {
            unlisted++;
            sc_test_fail(__FILE__, __LINE__, "%s: preset %s has validation rows but no entry "
                         "in cost_models/label.c", shipped.id[i], shipped.preset[i]);
        } else {
            errs[k][cnt[k]++] = shipped.error[i];
            seq_lo[k] = shipped.seq[i] < seq_lo[k] ? shipped.seq[i] : seq_lo[k];
            seq_hi[k] = shipped.seq[i] > seq_hi[k] ? shipped.seq[i] : seq_hi[k];
            gpus_lo[k] = shipped.gpus[i] < gpus_lo[k] ? shipped.gpus[i] : gpus_lo[k];
            gpus_hi[k] = shipped.gpus[i] > gpus_hi[k] ? shipped.gpus[i] : gpus_hi[k];
            par_lo[k] = fmin(par_lo[k], shipped.params[i]);
            par_hi[k] = fmax(par_hi[k], shipped.params[i]);
            int a = 0;
            while (a < natt[k] && strcmp(att[k][a], shipped.attention[i]) < 0)
                a++;
            if ((a == natt[k] || strcmp(att[k][a], shipped.attention[i])) && natt[k] < 8) {
                memmove(att[k][a + 1], att[k][a], (size_t)(natt[k] - a) * sizeof att[k][0]);
                snprintf(att[k][a], sizeof att[k][a], "%s", shipped.attention[i]);
                natt[k]++;
            }
        }
    }
    CHECK(total >= 28);
    for (int k = 0; k < nt; k++) {
        sc_val_stats st;
        sc_val_stats_of(errs[k], cnt[k], &st);
        double sd = 0;
        for (int i = 0; i < cnt[k]; i++)
            sd += (errs[k][i] - st.mean_signed) * (errs[k][i] - st.mean_signed);
        sd = cnt[k] > 1 ? sqrt(sd / (cnt[k] - 1)) : 0;
        if (cnt[k] != t[k].rows || fabs(st.mape - t[k].mape) > 0.005 ||
            fabs(st.mean_signed - t[k].mean_signed) > 0.005 || fabs(sd - t[k].sd_signed) > 0.005)
            sc_test_fail(__FILE__, __LINE__,
                         "cost_models/label.c: %s is stale: stored %d rows, MAPE %.4f, mean "
                         "signed %.4f, sd %.4f; the suite gives %d, %.4f, %.4f, %.4f",
                         t[k].preset, t[k].rows, t[k].mape, t[k].mean_signed, t[k].sd_signed,
                         cnt[k], st.mape, st.mean_signed, sd);
        /* the spans exactly (parameters to 4 significant digits, as stored) */
        if (cnt[k] && (seq_lo[k] != t[k].seq_lo || seq_hi[k] != t[k].seq_hi ||
                       gpus_lo[k] != t[k].gpus_lo || gpus_hi[k] != t[k].gpus_hi ||
                       fabs(par_lo[k] / t[k].params_lo - 1) > 0.005 ||
                       fabs(par_hi[k] / t[k].params_hi - 1) > 0.005))
            sc_test_fail(__FILE__, __LINE__,
                         "cost_models/label.c: %s's span is stale: stored sequences %d-%d, "
                         "GPUs %ld-%ld, parameters %.4g-%.4g; the suite gives %d, %d, %ld, %ld, "
                         "%.4g, %.4g",
                         t[k].preset, t[k].seq_lo, t[k].seq_hi, t[k].gpus_lo, t[k].gpus_hi,
                         t[k].params_lo, t[k].params_hi, seq_lo[k], seq_hi[k], gpus_lo[k],
                         gpus_hi[k], par_lo[k], par_hi[k]);
        char list[160] = "", stored[160] = "";
        for (int a = 0; a < natt[k]; a++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", a ? "," : "",
                     att[k][a]);
        for (int a = 0; a < SC_LABEL_ATTN_MAX && t[k].attention[a]; a++)
            snprintf(stored + strlen(stored), sizeof stored - strlen(stored), "%s%s",
                     a ? "," : "", t[k].attention[a]);
        if (cnt[k] && strcmp(list, stored))
            sc_test_fail(__FILE__, __LINE__,
                         "cost_models/label.c: %s's attention is stale: stored \"%s\", the "
                         "suite's rows ran \"%s\"",
                         t[k].preset, stored, list);
        free(errs[k]);
    }
    CHECK_EQ_INT(unlisted, 0);
}

/* The targets over every shipped row (what `make validate` checks):
 * MAPE <= 5%, mean signed error within +-2%, every row within 10%, except
 * the rows listed here, which are not yet within it (docs/accuracy.md, "The
 * rows beyond 10%"). The list is strict: a listed row that comes within 10%,
 * or that no longer exists, fails too. It grew once, by MPT-30B on 8
 * A100-80GB (+9.5% -> +10.9%), when FSDP's gradient copies were modelled
 * (docs/accuracy.md, "FSDP's own work on the gradients"): the suite's MAPE,
 * mean signed error, largest error and held-out MAPE all improved with
 * them; that row moved with the torch overhead refitted on them. It left
 * (+8.3%) when fused attention was timed by sequence length at the rates
 * Dao 2023 measured (docs/accuracy.md, "Fused attention by sequence
 * length"), which halved the fitted torch overhead. It grew again by
 * Nemotron-4 15B on 2048 H100 (-10.9%) when that row joined the suite
 * (docs/accuracy.md, "Nemotron-4 15B and 340B"), which left (-9.8%) when
 * the loss was timed as each framework runs it (docs/accuracy.md, "The
 * cross-entropy as the framework runs it"). MPT-13B on 64 H100 left it
 * (-8.7%) when the MPT rows with Composer's DEFAULT reduced in fp32 and came
 * back (-14.7%) when the dates showed that those runs predate Composer's
 * fp32 DEFAULT (docs/accuracy.md, "Composer's DEFAULT before 0.16.4").
 * Llama 2 34B on 96 H100 under IBM's fms-fsdp joined beyond it (-11.3%)
 * and left (-2.6%) when its layers were timed op by op as eager PyTorch
 * ran them (model gen llama --eager; docs/accuracy.md, "IBM's fms-fsdp"). */
TEST(validate_targets_hold)
{
    /* MPT-13B on 8 A100-40GB, 4 samples, 16 accumulation steps: the same
     * model's runs on 16 to 128 of those GPUs come out within 1.6%; MPT-13B
     * on 64 H100, 2 samples without recompute: the same model at 2 samples
     * on 8 to 64 of those GPUs comes out 15.8-17.1% fast as well
     * (docs/accuracy.md, "The rows beyond 10%: MPT-13B") */
    /* Llama 3.1 70B in FP8 on 2048 H100: -10.1% since the FP8 rows joined
     * (2026-12-07), its BF16 twin -3.4%: the fp8 model prices a 1.41x
     * speedup where the recipe measured 1.32x; what it leaves out (the amax
     * reductions at each microbatch's forward, the parameters kept and
     * gathered in fp8, the tp all-gathers in fp8) is not measured here
     * (docs/accuracy.md, "FP8 training"); -10.6% since each chunk's
     * parameters are gathered before that chunk's first forward.
     * GPT-3 175B in FP8 on 2048 H100: -9.7% since the FP8 rows joined,
     * -12.5% since the same change (2026-12-08): the gather that the second
     * op waited for whole had hidden part of the fp8 model's optimism there,
     * and left MLPerf's 10,752-GPU GPT-3 run +27% slow (docs/accuracy.md,
     * "The parameter gather, chunk by chunk") */
    static const char *const beyond[] = {
        "mpt_llmfoundry/a100-40-13b-8gpu",
        "mpt_llmfoundry/h100-13b-64gpu",
        "nvidia_dgxc2024/gpt3-175b-fp8-2048gpu",
        "nvidia_dgxc2024/llama31-70b-fp8-2048gpu",
    };
    int seen[SC_ARRAY_LEN(beyond)] = {0};
    run_shipped();
    REQUIRE(shipped.n >= 28);
    sc_val_stats st;
    sc_val_stats_of(shipped.error, shipped.n, &st);
    if (!(st.mape <= SC_VAL_TARGET_MAPE))
        sc_test_fail(__FILE__, __LINE__, "MAPE %.2f%% over %d rows, above the %.0f%% target",
                     100 * st.mape, shipped.n, 100 * SC_VAL_TARGET_MAPE);
    /* The mean signed error: missed (-2.0% to -2.1%) from the day the three
     * Llama 3.1 rows joined until each row's loss and pipeline messages were
     * timed as its framework ran them (-1.9%), missed again (-2.09% to
     * -2.31%) from Composer's training metrics until FlashAttention v1 ran
     * GPT3-760M's head size 96 padded to 128, as its kernel does, and the
     * MPT rows reduced in the dtype their Composer did (-1.96%;
     * docs/accuracy.md, "Head sizes a fused kernel pads"). Held within the
     * target itself since. */
    const double bias_guard = SC_VAL_TARGET_BIAS;
    if (!(fabs(st.mean_signed) <= bias_guard))
        sc_test_fail(__FILE__, __LINE__, "mean signed error %+.2f%%, beyond the +-%.0f%% "
                     "target",
                     100 * st.mean_signed, 100 * bias_guard);
    for (int i = 0; i < shipped.n; i++) {
        size_t k = 0;
        while (k < SC_ARRAY_LEN(beyond) && strcmp(beyond[k], shipped.id[i]))
            k++;
        int beyond_target = !(fabs(shipped.error[i]) <= SC_VAL_TARGET_MAX_ABS);
        if (k < SC_ARRAY_LEN(beyond)) {
            seen[k] = 1;
            if (!beyond_target)
                sc_test_fail(__FILE__, __LINE__, "%s is within %.0f%% now (%+.1f%%): take it "
                             "off this test's list", shipped.id[i],
                             100 * SC_VAL_TARGET_MAX_ABS, 100 * shipped.error[i]);
        } else if (beyond_target) {
            sc_test_fail(__FILE__, __LINE__, "%s: %+.1f%%, beyond the %.0f%% target",
                         shipped.id[i], 100 * shipped.error[i], 100 * SC_VAL_TARGET_MAX_ABS);
        }
    }
    for (size_t k = 0; k < SC_ARRAY_LEN(beyond); k++)
        if (!seen[k])
            sc_test_fail(__FILE__, __LINE__, "%s: no such row (take it off this test's list)",
                         beyond[k]);
}

/* Every published run ran, so the memory model must fit each shipped row in
 * its GPUs: a row that does not means the model overestimates memory (and the
 * planner would refuse what users run) or the row assumes a layout its run
 * cannot have used (the FA2 paper's 2.7B rows at 8k took the config's 4
 * samples a microbatch, 136% of a GPU, until 2026-12-06). The MPT tables'
 * 191 runs, each with its GPUs nearly full, peak at 88% of a GPU here
 * (scripts/mpt_table.py); no shipped row is above 90%, a bound that fails
 * when the memory model grows by more than about a tenth. An fp8 row's
 * memory is an upper bound (docs/accuracy.md, "FP8 training": the weights
 * counted at 16 bits where fp8_params keeps them in 8, the fp8 GEMMs'
 * activations at 16 bits): those must fit, under 100% (MLPerf v4.1's
 * 256-GPU GPT-3 run, 128 microbatches of 2 with FP8 parameters: 98.3%). */
TEST(validate_shipped_rows_fit)
{
    run_shipped();
    REQUIRE(shipped.n >= 28);
    double most = 0;
    for (int i = 0; i < shipped.n; i++) {
        if (!(shipped.mem_share[i] <= (shipped.fp8[i] ? 1.0 : 0.90)))
            sc_test_fail(__FILE__, __LINE__, "%s: predicted peak %.1f%% of a GPU, above the "
                         "90%% this test allows (the run fitted)", shipped.id[i],
                         100 * shipped.mem_share[i]);
        most = shipped.mem_share[i] > most ? shipped.mem_share[i] : most;
    }
    /* some row is near full: the share is computed, not zero */
    CHECK(most > 0.5);
}

/* The planner's analytical estimate of every shipped row's layout, against the
 * simulator it stands in for during a search: within 5% on every row (measured
 * when written: within 3.6%, the largest Nemotron-4 340B's twelve interleaved
 * chunks of one layer, the last with a 256k vocabulary's head; mean 0.2%).
 * Before each backward under ZeRO 3 reduce-scatters during it, the estimate
 * of the FSDP rows was 0.7-1.9% above; the search's own candidates are in
 * build/bench/estimate_bench. And `validate --json` carries it per row and
 * overall. */
TEST(validate_estimate_tracks_sim)
{
    run_shipped();
    REQUIRE(shipped.n >= 28);
    double mean = 0;
    for (int i = 0; i < shipped.n; i++) {
        double e = shipped.est_pred[i] - 1;
        if (!(fabs(e) <= 0.05))
            sc_test_fail(__FILE__, __LINE__, "%s: the estimate %+.1f%% from the simulated step",
                         shipped.id[i], 100 * e);
        mean += fabs(e) / shipped.n;
    }
    CHECK(mean < 0.01);
    REQUIRE(SC("%s validate --suite tridao_flashattn2022 --json 2>/dev/null", sc_test_bin()) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
    CHECK(cJSON_GetArraySize(rows) >= 2);
    for (int r = 0; r < cJSON_GetArraySize(rows); r++) {
        const cJSON *w = cJSON_GetArrayItem(rows, r);
        const cJSON *es = cJSON_GetObjectItemCaseSensitive(w, "estimate_s");
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(w, "estimate_vs_predicted");
        const cJSON *ps = cJSON_GetObjectItemCaseSensitive(w, "predicted_s");
        REQUIRE(cJSON_IsNumber(es) && cJSON_IsNumber(ev) && cJSON_IsNumber(ps));
        CHECK(es->valuedouble > 0);
        CHECK_NEAR(ev->valuedouble, es->valuedouble / ps->valuedouble - 1, 1e-9);
    }
    const cJSON *eo = cJSON_GetObjectItemCaseSensitive(j, "estimate");
    REQUIRE(eo);
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(eo, "max_abs");
    const cJSON *mr = cJSON_GetObjectItemCaseSensitive(eo, "max_row");
    CHECK(cJSON_IsNumber(mx) && mx->valuedouble >= 0 && mx->valuedouble <= 0.05);
    CHECK(cJSON_IsString(mr) && strstr(mr->valuestring, "tridao_flashattn2022/"));
    cJSON_Delete(j);
    REQUIRE(SC("%s validate --suite tridao_flashattn2022 2>/dev/null", sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "planner: its analytical estimate is within");
}

/* A one-row suite of GPT3-2.7B at 8k tokens on 8 A100-80GB with mbs samples a
 * microbatch (4 need 136% of a GPU as modelled, 2 fit), written to name. */
static const char *gpt27_8k(const char *name, int mbs)
{
    char text[4096], layout[256];
    snprintf(layout, sizeof layout,
             "{\"dp\": 8, \"tp\": 1, \"pp\": 1, \"zero\": 1, \"recompute\": \"none\", "
             "\"attention\": \"flash\", \"mbs\": %d, \"global_batch\": 32}", mbs);
    one_row(text, sizeof text,
            "{\"generator\": \"gpt\", \"layers\": 32, \"hidden\": 2560, \"heads\": 20, "
            "\"seq\": 8192, \"vocab\": 50264, \"tied\": true}",
            layout, CLUSTER_OK, "{\"iteration_s\": 5}", "");
    return put(name, text);
}

/* validate marks a row whose predicted peak exceeds its GPUs and counts it in
 * the text and the JSON; a suite that fits says so and names its largest. */
TEST(validate_memory_marks)
{
    const char *big = gpt27_8k("oom.json", 4);
    CHECK(SC("%s validate --suite %s", sc_test_bin(), big) == 0);
    CHECK_STR_HAS(out, " >mem");
    CHECK_STR_HAS(out, "memory: 1 of 1 rows do not fit their GPUs as modelled");
    CHECK_STR_HAS(out, "t/r0");
    CHECK(SC("%s validate --suite %s --json", sc_test_bin(), big) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    cJSON *m = cJSON_GetObjectItem(j, "memory");
    CHECK(m && cJSON_GetObjectItem(m, "rows_not_fitting") &&
          cJSON_GetObjectItem(m, "rows_not_fitting")->valuedouble == 1);
    CHECK(m && cJSON_GetObjectItem(m, "largest_fraction") &&
          cJSON_GetObjectItem(m, "largest_fraction")->valuedouble > 1);
    cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rows"), 0);
    CHECK(r0 && cJSON_IsFalse(cJSON_GetObjectItem(r0, "fits")));
    cJSON_Delete(j);
    /* two samples fit: no mark, the largest named */
    CHECK(SC("%s validate --suite %s", sc_test_bin(), gpt27_8k("fit.json", 2)) == 0);
    CHECK(!strstr(out, ">mem"));
    CHECK_STR_HAS(out, "memory: every row fits its GPUs as modelled");
    CHECK_STR_HAS(out, "(largest: t/r0,");
    /* on another cluster the rows did not run: no claim that they did */
    CHECK(SC("%s validate --suite %s --cluster-override p4d.24xlarge", sc_test_bin(),
             gpt27_8k("fit.json", 2)) == 0);
    CHECK_STR_HAS(out, " >mem");
    CHECK_STR_HAS(out, "memory: 1 of 1 rows would not fit p4d.24xlarge's GPUs as modelled");
    CHECK(!strstr(out, "each ran"));
}

/* The fuzz corpus of the file loaders replays through the suite loader:
 * every file loads or fails with a message naming it. */
TEST(validate_fuzz_corpus_replay)
{
    const char *dir = "tests/fuzz/corpus/files";
    DIR *d = opendir(dir);
    REQUIRE(d);
    int n = 0, loaded = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 6 || strcmp(e->d_name + l - 5, ".json"))
            continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        sc_val_suite *s = NULL;
        sc_error err = {0};
        if (sc_val_load(path, &s, &err) == SC_OK)
            loaded++;
        else if (!strstr(err.msg, path))
            sc_test_fail(__FILE__, __LINE__, "%s: message does not name the file: %s", path,
                         err.msg);
        sc_val_free(s);
        n++;
    }
    closedir(d);
    CHECK(n > 10);
    CHECK(loaded >= 1); /* the corpus holds a valid suite */
}

/* ---- docs/formats.md ------------------------------------------------------------------ */

static void collect_keys(const cJSON *o, const char *prefix, char *seen, size_t cap, int in_model)
{
    for (const cJSON *x = o->child; x; x = x->next) {
        if (!x->string)
            continue;
        char key[256];
        snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", x->string);
        /* a generator's parameters are its own (model gen --help): skip them */
        if (in_model && strcmp(x->string, "generator") && strcmp(x->string, "builtin") &&
            strcmp(x->string, "dtype"))
            continue;
        char tick[270];
        snprintf(tick, sizeof tick, "`%s`", key);
        if (!strstr(seen, tick) && strlen(seen) + strlen(tick) + 2 < cap) {
            strcat(seen, tick);
            strcat(seen, " ");
        }
        if (cJSON_IsObject(x))
            collect_keys(x, key, seen, cap, !strcmp(x->string, "model"));
        else if (cJSON_IsArray(x))
            for (const cJSON *y = x->child; y; y = y->next)
                if (cJSON_IsObject(y)) {
                    char k2[260];
                    snprintf(k2, sizeof k2, "%s[]", key);
                    collect_keys(y, k2, seen, cap, 0);
                }
    }
}

TEST(validate_docs_format_section)
{
    char *doc = NULL;
    size_t len;
    REQUIRE(sc_read_file("docs/formats.md", 1 << 22, &doc, &len, NULL) == SC_OK);
    const char *b = strstr(doc, "## validation (`stagecraft.validation/1`)");
    REQUIRE(b);
    const char *e = strstr(b + 10, "\n## ");
    size_t n = e ? (size_t)(e - b) : strlen(b);
    char *sec = calloc(1, n + 1);
    REQUIRE(sec);
    memcpy(sec, b, n);
    /* every key a shipped suite uses is in the section's table */
    char **paths = NULL;
    int np = 0;
    sc_error err = {0};
    static char seen[1 << 15];
    seen[0] = '\0';
    if (sc_val_list("validation", &paths, &np, &err) == SC_OK)
        for (int i = 0; i < np; i++) {
            cJSON *j = NULL;
            if (sc_json_load(paths[i], &j, &err) == SC_OK)
                collect_keys(j, "", seen, sizeof seen, 0);
            cJSON_Delete(j);
        }
    sc_val_paths_free(paths, np);
    for (char *p = seen; (p = strchr(p, '`'));) {
        char *q = strchr(p + 1, '`');
        if (!q)
            break;
        char key[300];
        snprintf(key, sizeof key, "| %.*s", (int)(q - p + 1), p);
        char alt[300]; /* a row that lists several keys: "`a`, `b`" */
        snprintf(alt, sizeof alt, "%.*s", (int)(q - p + 1), p);
        if (!strstr(sec, key) && !strstr(sec, alt))
            sc_test_fail(__FILE__, __LINE__, "docs/formats.md: the validation table lacks %s",
                         alt);
        p = q + 1;
    }
    /* its example loads */
    const char *x = strstr(sec, "```json\n");
    REQUIRE(x);
    x += 8;
    const char *y = strstr(x, "\n```");
    REQUIRE(y);
    char *ex = calloc(1, (size_t)(y - x) + 2);
    REQUIRE(ex);
    memcpy(ex, x, (size_t)(y - x));
    const char *f = put("example.json", ex);
    sc_val_suite *s = NULL;
    if (sc_val_load(f, &s, &err) != SC_OK)
        sc_test_fail(__FILE__, __LINE__, "the formats.md example does not load: %s", err.msg);
    sc_val_free(s);
    free(ex);
    free(sec);
    sc_free(doc);
}

/* Spearman's rho: perfect, reversed and tied orders, and the undefined
 * cases (one row, one value on a side). */
TEST(validate_spearman)
{
    double a[] = {1, 2, 3, 4, 5}, up[] = {10, 20, 30, 40, 50}, down[] = {5, 4, 3, 2, 1};
    CHECK_NEAR(sc_val_spearman(a, up, 5), 1, 1e-12);
    CHECK_NEAR(sc_val_spearman(a, down, 5), -1, 1e-12);
    /* one swap of neighbours among 5: rho = 1 - 6*2/(5*24) = 0.9 */
    double sw[] = {1, 2, 4, 3, 5};
    CHECK_NEAR(sc_val_spearman(a, sw, 5), 0.9, 1e-12);
    /* ties share their mean rank: ranks (1.5, 1.5, 3) against (1, 2, 3) */
    double t[] = {7, 7, 9};
    CHECK_NEAR(sc_val_spearman(t, up, 3), 0.8660254037844386, 1e-12);
    CHECK(isnan(sc_val_spearman(a, up, 1)));
    double flat[] = {2, 2, 2};
    CHECK(isnan(sc_val_spearman(flat, up, 3)));
}

/* The framework overheads (cost_models/overhead.c) are what `validate
 * --fit-overhead` fits on the shipped suites' fit half: a cost-model change
 * that moves the fit must refit the table. The halves alternate within each
 * framework, megatron's rows are never fitted, and the held-out rows are
 * reported apart. */
TEST(validate_overhead_fit)
{
    char **paths = NULL;
    int n = 0;
    sc_error err = {0};
    REQUIRE(sc_val_list("validation", &paths, &n, &err) == SC_OK);
    REQUIRE(n > 0 && n <= 64);
    sc_val_suite *s[64] = {0};
    for (int i = 0; i < n; i++)
        REQUIRE(sc_val_load(paths[i], &s[i], &err) == SC_OK);
    sc_val_mark_halves(s, n);
    /* every row names its framework; each framework's rows alternate */
    int no;
    const sc_overhead *ov = sc_overheads(&no);
    for (int k = 0; k < no; k++) {
        int idx = 0;
        for (int i = 0; i < n; i++)
            for (int r = 0; r < s[i]->n; r++) {
                const sc_val_row *w = &s[i]->rows[r];
                CHECK(w->framework != NULL);
                if (w->framework && !strcmp(w->framework, ov[k].framework))
                    CHECK_EQ_INT(w->fit_half, idx++ % 2 == 0);
            }
    }
    for (int k = 0; k < no; k++) {
        if (!ov[k].fit_rows) {
            CHECK(ov[k].compute == 0); /* megatron: never fitted */
            continue;
        }
        double frac;
        int rows;
        REQUIRE(sc_val_fit_overhead(s, n, ov[k].framework, &frac, &rows, &err) == SC_OK);
        CHECK_EQ_INT(rows, ov[k].fit_rows);
        if (fabs(frac - ov[k].compute) > 0.002)
            sc_test_fail(__FILE__, __LINE__,
                         "cost_models/overhead.c: %s's overhead is stale: stored %.4f, the fit "
                         "gives %.4f (stagecraft validate --fit-overhead)",
                         ov[k].framework, ov[k].compute, frac);
        /* at the fitted value the fit half is unbiased */
        sc_val_opts o = {.trial_framework = ov[k].framework, .trial_overhead = frac};
        double sum = 0;
        int cnt = 0;
        for (int i = 0; i < n; i++)
            for (int r = 0; r < s[i]->n; r++) {
                const sc_val_row *w = &s[i]->rows[r];
                if (!w->fit_half || strcmp(w->framework, ov[k].framework))
                    continue;
                sc_val_result res;
                REQUIRE(sc_val_run_row(s[i], r, &o, &res, &err) == SC_OK);
                CHECK_NEAR(res.overhead, frac, 1e-12);
                sum += res.error;
                cnt++;
            }
        CHECK(cnt == rows && fabs(sum / cnt) < 1e-3);
    }
    /* --no-overhead: the kernels alone; a row's step grows by at most its
     * overhead (compute only) */
    for (int i = 0; i < n; i++)
        for (int r = 0; r < s[i]->n; r++) {
            const sc_val_row *w = &s[i]->rows[r];
            const sc_overhead *o = sc_overhead_find(w->framework);
            if (!o || !o->compute || strcmp(s[i]->name, "mpt_llmfoundry"))
                continue;
            sc_val_result a, b;
            sc_val_opts none = {.no_overhead = 1};
            REQUIRE(sc_val_run_row(s[i], r, &none, &a, &err) == SC_OK);
            REQUIRE(sc_val_run_row(s[i], r, NULL, &b, &err) == SC_OK);
            CHECK(a.overhead == 0 && b.overhead == o->compute);
            CHECK(b.predicted_s > a.predicted_s);
            CHECK(b.predicted_s <= a.predicted_s * (1 + o->compute) * (1 + 1e-9));
        }
    /* a subset of the suites (--suite) marks the rows the table was fitted on,
     * numbered over every shipped suite: tridao's torch rows follow MPT's 17,
     * so numbering the subset alone would mark the other ones */
    const sc_val_suite *td = NULL;
    for (int i = 0; i < n; i++)
        if (!strcmp(s[i]->name, "tridao_flashattn2022"))
            td = s[i];
    REQUIRE(td && td->n >= 2);
    int alone_differs = 0;
    for (int r = 0; r < td->n; r++)
        alone_differs |= td->rows[r].fit_half != (r % 2 == 0);
    CHECK(alone_differs);
    REQUIRE(SC("%s validate --suite tridao_flashattn2022 --json 2>/dev/null", sc_test_bin()) == 0);
    cJSON *tj = cJSON_Parse(out);
    REQUIRE(tj);
    const cJSON *trows = cJSON_GetObjectItemCaseSensitive(tj, "rows");
    CHECK_EQ_INT(cJSON_GetArraySize(trows), td->n);
    for (int r = 0; r < td->n && r < cJSON_GetArraySize(trows); r++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(trows, r),
                                                          "overhead_fit_row");
        CHECK(cJSON_IsBool(f) && cJSON_IsTrue(f) == (td->rows[r].fit_half != 0));
    }
    cJSON_Delete(tj);
    for (int i = 0; i < n; i++)
        sc_val_free(s[i]);
    sc_val_paths_free(paths, n);
    /* rows of a suite the table never saw are none of its fit rows */
    char text[4096];
    one_row(text, sizeof text, TINY,
            "{\"framework\": \"torch\", \"dp\": 1, \"tp\": 1, \"pp\": 1, "
            "\"recompute\": \"none\", \"mbs\": 1, \"global_batch\": 2}",
            CLUSTER_OK, MEASURED_OK, "");
    const char *own = put("own_suite.json", text);
    REQUIRE(SC("%s validate --suite %s --json 2>/dev/null", sc_test_bin(), own) == 0);
    tj = cJSON_Parse(out);
    REQUIRE(tj);
    const cJSON *orow = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(tj, "rows"), 0);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(orow, "overhead_fit_row")));
    CHECK(cJSON_GetObjectItemCaseSensitive(
              cJSON_GetObjectItemCaseSensitive(tj, "overhead_fit_rows"), "rows")->valueint == 0);
    cJSON_Delete(tj);

    /* the report names the fit rows and gives the held-out rows apart */
    REQUIRE(SC("%s validate --suite mpt_llmfoundry --json 2>/dev/null", sc_test_bin()) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(j, "overhead_fit_rows");
    const cJSON *hr = cJSON_GetObjectItemCaseSensitive(j, "held_out_rows");
    CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(fr, "rows")) &&
          cJSON_GetObjectItemCaseSensitive(fr, "rows")->valueint == 9);
    CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(hr, "rows")) &&
          cJSON_GetObjectItemCaseSensitive(hr, "rows")->valueint == 8);
    const cJSON *row0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "rows"), 0);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(row0, "overhead_fit_row")));
    const cJSON *fw = cJSON_GetObjectItemCaseSensitive(row0, "framework");
    CHECK(cJSON_IsString(fw) && !strcmp(fw->valuestring, "torch"));
    cJSON_Delete(j);
    REQUIRE(SC("%s validate --suite mpt_llmfoundry", sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "rows the overheads were fit on");
    CHECK_STR_HAS(out, "rows held out from that fit");
    CHECK_STR_HAS(out, " fit\n");
    REQUIRE(SC("%s validate --suite korthikanti2022 --no-overhead --by model", sc_test_bin()) ==
            0);
    CHECK_STR_HAS(out, "no framework overhead");
    /* --by sorts the digits inside names as numbers: 48 layers before 105 */
    const char *l48 = strstr(out, "\ngpt l48 "), *l105 = strstr(out, "\ngpt l105 ");
    CHECK(l48 && l105 && l48 < l105);
    /* --by attention names the kernels as the suites and --flash do: the
     * flash-attention trainer's FA1 rows (5 + 2) and FA2 rows (4), the
     * Megatron-LM rows unfused */
    REQUIRE(SC("%s validate --suite tridao_flashattn2022,tridao_flashattn2_2023,"
               "korthikanti2022 --by attention", sc_test_bin()) == 0);
    const char *by = strstr(out, "errors by attention (--by):");
    REQUIRE(by);
    CHECK_STR_HAS(by, "\nfa1           7 ");
    CHECK_STR_HAS(by, "\nfa2           4 ");
    CHECK_STR_HAS(by, "\nunfused       8 ");
    CHECK(!strstr(by, "flash1"));
}

/* scripts/mpt_table.py (docs/accuracy.md, "The MPT tables beyond the suite"):
 * on a stand-in llm-foundry clone it writes the bf16 rows of every table as a
 * suite (the FP8 table and a batch that is no multiple of GPUs x microbatch
 * left out, the A100 40GB header's missing TFLOP column tolerated), and rows
 * that are the shipped suite's runs predict exactly what the shipped rows do;
 * a row it cannot read is refused naming the section. */
#define MPT_HEAD                                                                          \
    "| Model | SeqLen (T) | # GPUs | GPU | MFU | HFU | %sMicroBatchSize | GradAccum | "       \
    "GlobalBatchSize | Throughput (S/s) | Throughput (T/s) | Throughput (T/s/GPU) | "         \
    "GlobalBatchSize (T) | Precision | MP Mode | Sharding Strategy | Activation "            \
    "Checkpointing | Activation CPUOffload | NumParams |\n|---|---|---|---|---|---|---|---|---" \
    "|---|---|---|---|---|---|---|---|---|---|%s\n"

static double predicted_of(const cJSON *rows, const char *id)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, rows)
    {
        const cJSON *i = cJSON_GetObjectItemCaseSensitive(r, "id");
        if (cJSON_IsString(i) && !strcmp(i->valuestring, id))
            return cJSON_GetObjectItemCaseSensitive(r, "predicted_s")->valuedouble;
    }
    return -1;
}

TEST(validate_mpt_table_script)
{
    if (SC("command -v git") != 0) {
        sc_test_skip("no git here: the script reads the tables from a git clone");
        return;
    }
    char readme[8192], h1[2048], h2[2048];
    snprintf(h1, sizeof h1, MPT_HEAD, "Model TFLOP | ", "---|");
    snprintf(h2, sizeof h2, MPT_HEAD, "", "");
    snprintf(readme, sizeof readme,
             "# MPT Training Benchmarks\n\n## H100 80GB BF16\n%s"
             "|  1b | 2048 | 8 | h100_80gb | 41 | 41 | 4E+14 | 14 | 1 | 112 | 177 | 363645 | "
             "45455 | 229376 | amp_bf16 | DEFAULT | FULL_SHARD | False | False | 1 |\n"
             "|  1b | 16384 | 8 | h100_80gb | 30 | 30 | 3E+14 | 1 | 1 | 8 | 1 | 100000 | "
             "12500 | 131072 | amp_bf16 | DEFAULT | FULL_SHARD | False | False | 1 |\n"
             "|  1b | 512 | 8 | h100_80gb | 40 | 40 | 4E+14 | 56 | 4 | 1792 | 700 | 360000 | "
             "45000 | 917504 | amp_bf16 | DEFAULT | FULL_SHARD | False | False | 1 |\n"
             "\n## H100 80GB FP8\n%s"
             "|  1b | 2048 | 8 | h100_80gb | 50 | 50 | 5E+14 | 14 | 1 | 112 | 200 | 409600 | "
             "51200 | 229376 | amp_fp8 | DEFAULT | FULL_SHARD | False | False | 1 |\n"
             "\n## A100 40GB with 1600 Gbps node-node interconnect (RoCE)\n%s"
             "|  1b | 2048 | 8 | a100_40gb | 50 | 50 | 1.5E+14 | 8 | 8 | 512 | 75 | 154171 | "
             "19271 | 1048576 | bf16 | PURE | FULL_SHARD | False | False | 1 |\n"
             "|  1b | 2048 | 8 | a100_40gb | 50 | 50 | 1.5E+14 | 7 | 8 | 500 | 75 | 154171 | "
             "19271 | 1024000 | bf16 | PURE | FULL_SHARD | False | False | 1 |\n",
             h1, h1, h2);
    const char *rm = put("mpt_readme.md", readme);
    const char *ym = put("mpt_1b.yaml", "model:\n  name: mpt_causal_lm\n  d_model: 2048\n"
                                        "  n_heads: 16\n  n_layers: 24\n  expansion_ratio: 4\n"
                                        "  vocab_size: 50368\n");
    const char *tmp = sc_test_tmpdir();
    REQUIRE(SC("d=%s/lf && rm -rf $d && mkdir -p $d/scripts/train/benchmarking "
               "$d/scripts/train/yamls/pretrain && cp %s $d/scripts/train/benchmarking/README.md "
               "&& cp %s $d/scripts/train/yamls/pretrain/mpt-1b.yaml && git -C $d init -q && "
               "git -C $d add -A && git -C $d -c user.name=t -c user.email=t@t commit -qm t 2>&1",
               tmp, rm, ym) == 0);
    REQUIRE(SC("/usr/bin/python3 scripts/mpt_table.py --llmfoundry %s/lf --commit HEAD "
               "-o %s/mpt_all.json --run %s 2>&1",
               tmp, tmp, sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "4 rows to");
    CHECK_STR_HAS(out, "1 bf16 rows left out");
    /* grouped by cluster and sequence (validate --by), sequences as numbers */
    const char *g = strstr(out, "errors by cluster, seq");
    REQUIRE(g);
    const char *s512 = strstr(g, "\ndgx-h100      512 "), *s2k = strstr(g, "\ndgx-h100      2048 "),
               *s16k = strstr(g, "\ndgx-h100      16384 ");
    CHECK(s512 && s2k && s16k && s512 < s2k && s2k < s16k);
    CHECK_STR_HAS(g, "\np4d.24xlarge  2048      1 ");
    /* and validate's memory line after the groups */
    CHECK_STR_HAS(g, "\nmemory: every row fits its GPUs as modelled");

    char path[700];
    snprintf(path, sizeof path, "%s/mpt_all.json", tmp);
    REQUIRE(SC("%s validate --suite %s --json 2>/dev/null", sc_test_bin(), path) == 0);
    cJSON *mine = cJSON_Parse(out);
    REQUIRE(mine);
    REQUIRE(SC("%s validate --suite mpt_llmfoundry --json 2>/dev/null", sc_test_bin()) == 0);
    cJSON *ship = cJSON_Parse(out);
    REQUIRE(ship);
    const cJSON *mr = cJSON_GetObjectItemCaseSensitive(mine, "rows");
    const cJSON *sr = cJSON_GetObjectItemCaseSensitive(ship, "rows");
    CHECK_EQ_INT(cJSON_GetArraySize(mr), 4);
    const char *pairs[][2] = {{"h100-1b-s2048-8gpu-mbs14", "h100-1b-8gpu"},
                              {"a100-40-1b-s2048-8gpu-mbs8", "a100-40-1b-8gpu"}};
    for (int i = 0; i < 2; i++) {
        double a = predicted_of(mr, pairs[i][0]), b = predicted_of(sr, pairs[i][1]);
        CHECK(a > 0 && b > 0 && fabs(a - b) <= 1e-9 * b);
    }
    const cJSON *h = cJSON_GetArrayItem(mr, 0);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, "approximate")));
    cJSON_Delete(mine);
    cJSON_Delete(ship);

    /* a later commit adds a table of other runs, as January 2024's did: its
     * rows take that commit's software (sweep.py's attn_impl per model, flash
     * as FlashAttention-2 where the benchmark installs flash-attn 2, the
     * gradients in fp32 under DEFAULT from Composer 0.16.4) and its sharding
     * strategy; the first table's rows keep what they ran */
    char more[16384];
    snprintf(more, sizeof more,
             "%s\n## H100 80GB BF16 (Large Scale, >= 128 GPUs)\n%s"
             "|  1b | 2048 | 128 | h100_80gb | 40 | 40 | 401 | 12 | 1 | 1536 | 2757 | "
             "5647854 | 44123 | 3145728 | amp_bf16 | DEFAULT | SHARD_GRAD_OP | False | False "
             "| 1 |\n"
             "|  1b | 2048 | 256 | h100_80gb | 40 | 40 | 401 | 12 | 1 | 3072 | 2757 | "
             "5647854 | 44123 | 6291456 | amp_bf16 | DEFAULT | NO_SHARD | False | False | 1 |\n",
             readme, h1);
    rm = put("mpt_readme_more.md", more);
    const char *sw = put("mpt_sweep.py", "model_args_list = [\n    [\n        '--model_yamls "
                                         "1b.yaml',\n        '--attn_impl flash',\n    ],\n]\n");
    const char *sub = put("mpt_submit.py", "pip_install = '.[gpu-flash2]'\n");
    const char *setup = put("mpt_setup.py",
                            "install_requires = ['mosaicml[wandb]>=0.17.2,<0.18']\n");
    REQUIRE(SC("d=%s/lf && cp %s $d/scripts/train/benchmarking/README.md && "
               "cp %s $d/scripts/train/benchmarking/sweep.py && "
               "cp %s $d/scripts/train/benchmarking/submit_benchmarks.py && cp %s $d/setup.py && "
               "git -C $d add -A && git -C $d -c user.name=t -c user.email=t@t commit -qm more "
               "2>&1", tmp, rm, sw, sub, setup) == 0);
    REQUIRE(SC("/usr/bin/python3 scripts/mpt_table.py --llmfoundry %s/lf --commit HEAD "
               "-o %s/mpt_more.json 2>&1", tmp, tmp) == 0);
    CHECK_STR_HAS(out, "5 rows to");
    CHECK_STR_HAS(out, "2 bf16 rows left out");
    snprintf(path, sizeof path, "%s/mpt_more.json", tmp);
    cJSON *more_j = NULL;
    sc_error jerr = {0};
    REQUIRE(sc_json_load(path, &more_j, &jerr) == SC_OK && more_j);
    const cJSON *row;
    int large = 0, old_rows = 0;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(more_j, "rows"))
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(row, "id");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(row, "layout");
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(l, "attention_kernel");
        const cJSON *z = cJSON_GetObjectItemCaseSensitive(l, "zero");
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(l, "grad_reduce_in_fp32");
        if (cJSON_IsString(id) && strstr(id->valuestring, "-128gpu-")) {
            large++;
            CHECK(cJSON_IsString(k) && !strcmp(k->valuestring, "fa2"));
            CHECK(cJSON_IsNumber(z) && z->valueint == 2);
            CHECK(cJSON_IsTrue(f));
        } else {
            old_rows++;
            CHECK(cJSON_IsString(k) && !strcmp(k->valuestring, "triton"));
            CHECK(cJSON_IsNumber(z) && z->valueint == 3);
            CHECK(!f);
        }
    }
    CHECK_EQ_INT(large, 1);
    CHECK_EQ_INT(old_rows, 4);
    cJSON_Delete(more_j);
    /* --triton-as: the Triton runs at another kernel's rates, said so; the
     * others as they ran */
    REQUIRE(SC("/usr/bin/python3 scripts/mpt_table.py --llmfoundry %s/lf --commit HEAD "
               "--triton-as fa1 -o %s/mpt_fa1.json 2>&1", tmp, tmp) == 0);
    snprintf(path, sizeof path, "%s/mpt_fa1.json", tmp);
    REQUIRE(sc_json_load(path, &more_j, &jerr) == SC_OK && more_j);
    int fa1 = 0, fa2 = 0, said = 0;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(more_j, "rows"))
    {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(row, "layout"), "attention_kernel");
        const cJSON *as = cJSON_GetObjectItemCaseSensitive(row, "assumptions");
        fa1 += cJSON_IsString(k) && !strcmp(k->valuestring, "fa1");
        fa2 += cJSON_IsString(k) && !strcmp(k->valuestring, "fa2");
        said += cJSON_IsString(as) && strstr(as->valuestring, "--triton-as") != NULL;
    }
    CHECK_EQ_INT(fa1, 4);
    CHECK_EQ_INT(fa2, 1);
    CHECK_EQ_INT(said, 4);
    cJSON_Delete(more_j);
    CHECK(SC("/usr/bin/python3 scripts/mpt_table.py --llmfoundry %s/lf --commit HEAD "
             "--triton-as fa9 -o %s/mpt_fa9.json 2>&1", tmp, tmp) != 0);

    /* a cell that is not a number: refused, naming the section */
    char bad[8192];
    snprintf(bad, sizeof bad, "## A100 80GB\n%s|  1b | 2048 | eight | a100_80gb | 50 | 50 | "
                              "1 | 8 | 8 | 512 | 75 | 1 | 1 | 1 | bf16 | PURE | FULL_SHARD | "
                              "False | False | 1 |\n", h1);
    rm = put("mpt_readme_bad.md", bad);
    REQUIRE(SC("d=%s/lf && cp %s $d/scripts/train/benchmarking/README.md && "
               "git -C $d -c user.name=t -c user.email=t@t commit -qam bad 2>&1",
               tmp, rm) == 0);
    CHECK(SC("/usr/bin/python3 scripts/mpt_table.py --llmfoundry %s/lf --commit HEAD "
             "-o %s/mpt_bad.json 2>&1",
             tmp, tmp) != 0);
    CHECK_STR_HAS(out, "section 'A100 80GB'");
    CHECK_STR_HAS(out, "eight");
    CHECK(SC("test -e %s/mpt_bad.json", tmp) != 0);
}

/* scripts/layer_table.py: one layer of Korthikanti et al.'s 22B model (their
 * Table 4), forward and backward as the simulator runs them, each within the
 * suite's 10%; sequence parallelism shortens the forward, and the backward
 * grows from no recompute to selective to full, as measured. */
TEST(validate_layer_table_script)
{
    REQUIRE(SC("/usr/bin/python3 scripts/layer_table.py --run %s --json --check 2>&1",
               sc_test_bin()) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
    REQUIRE(cJSON_GetArraySize(rows) == 5);
    double fwd[5], bwd[5];
    for (int i = 0; i < 5; i++) {
        const cJSON *r = cJSON_GetArrayItem(rows, i);
        fwd[i] = cJSON_GetObjectItemCaseSensitive(r, "forward_ms")->valuedouble;
        bwd[i] = cJSON_GetObjectItemCaseSensitive(r, "backward_ms")->valuedouble;
        double ef = cJSON_GetObjectItemCaseSensitive(r, "forward_error")->valuedouble;
        double eb = cJSON_GetObjectItemCaseSensitive(r, "backward_error")->valuedouble;
        CHECK(fabs(ef) <= 0.10);
        CHECK(fabs(eb) <= 0.10);
        /* the error is of the simulated time against the published one */
        double mf = cJSON_GetObjectItemCaseSensitive(r, "measured_forward_ms")->valuedouble;
        CHECK_NEAR(ef, fwd[i] / mf - 1, 1e-9);
        CHECK(fwd[i] > 1 && bwd[i] > 1);
    }
    /* rows: none, sp, full, selective, selective + sp */
    CHECK(fwd[1] < fwd[0] && fwd[4] < fwd[3]);
    CHECK_NEAR(fwd[0], fwd[2], 1e-6); /* recompute leaves the forward alone */
    CHECK(bwd[0] < bwd[3] && bwd[3] < bwd[2]);
    cJSON_Delete(j);
    /* a binary that is not there is named */
    CHECK(SC("/usr/bin/python3 scripts/layer_table.py --run /nonexistent/sc 2>&1") != 0);
    CHECK_STR_HAS(out, "/nonexistent/sc: not an executable");
}
