/* test_exec.c - the executor on the CPU backend under mpirun: every schedule
 * at pp 2 and 4, tp 2, dp 2 (ZeRO 0-3), recompute, tied embeddings and
 * mixes; the measured timeline holds exactly the simulator's compute-stream
 * ops per rank in the same order and the same multiset of comm ops, and
 * both are the lowered list of the plan (tests/lower_check.h);
 * activations are checked by checksum on receipt; a wrong rank count, a bad
 * plan and a dead or hung rank fail cleanly with nothing written.
 *
 * Small models (8 layers, hidden 128, seq 64) on an 8-"GPU" copy of the
 * cpu-local cluster keep each run well under a second on two cores.
 * Skipped with a message when mpirun is missing or the build has no MPI.
 */
#include "check.h"
#include "cluster.h"
#include "cost.h"
#include "json.h"
#include "lower_check.h"
#include "timeline.h"

#include <math.h>

#include <stdlib.h>

static char out[1 << 16];

#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)
/* Open MPI's own MPI_Init/MPI_Finalize leak (8 KiB and more, seen with a
 * bare MPI program under ASan), so the sanitizer build's leak check is off
 * for processes mpirun starts. */
#define MPIRUN "env ASAN_OPTIONS=detect_leaks=0 mpirun --allow-run-as-root --oversubscribe " \
               "--mca btl_vader_single_copy_mechanism none"

/* 1 if exec can run here (mpirun and an MPI build); else marks the test
 * skipped, saying why. */
static int have_mpi(void)
{
    static int known = -1;
    static const char *why = "";
    if (known < 0) {
        known = 0;
        if (SC("command -v mpirun") != 0)
            why = "mpirun not found";
        else if (SC("%s version", sc_test_bin()) == 0 && strstr(out, "MPI:  no"))
            why = "built without MPI";
        else
            known = 1;
    }
    if (!known)
        sc_test_skip("%s", why);
    return known;
}

/* A tiny fp32 model and an 8-device CPU cluster in the test's directory. */
static int setup(const char *d, const char *extra)
{
    if (SC("%s model gen gpt --layers 8 --hidden 128 --heads 4 --seq 64 --vocab 512 "
           "--dtype fp32 %s -o %s/tiny.json",
           sc_test_bin(), extra, d) != 0)
        return -1;
    return SC("%s cluster show cpu-local --json | sed -e 's/\"gpus_per_node\":[^,]*,/"
              "\"gpus_per_node\": 8,/' -e 's/\"cpu-local\"/\"cpu8\"/' > %s/cpu8.json",
              sc_test_bin(), d);
}

/* setup, then the 1F1B plan of tiny.json on 2 ranks (pp 2) with m
 * microbatches of 1, written to d/plan.json */
static int pp2_plan(const char *d, int m)
{
    if (setup(d, "") != 0)
        return -1;
    return SC("%s sim --model %s/tiny.json --cluster %s/cpu8.json --dp 1 --tp 1 --pp 2 "
              "--microbatches %d --mbs 1 --schedule 1f1b -o %s/plan.json",
              sc_test_bin(), d, d, m, d);
}

/* The CPU cluster with a kernel-level block (efficiency.gemm), so that leaves
 * which list kernels run them. */
static int kernel_cluster(const char *d)
{
    return SC("/usr/bin/python3 -c \"import json,sys; p='%s/cpu8.json'; c=json.load(open(p)); "
              "c['efficiency']['gemm']={'sms': 2, 'eff_max': 0.5, 'tile_m': 64, 'tile_n': 64, "
              "'k_half': 0, 'kernel_s': 1e-6, 'flash_fwd': 0.5, 'flash_bwd': 0.5}; "
              "json.dump(c, open(p, 'w'))\"",
              d);
}

/* Ops of one rank and stream, ordered by start (stable: list order on ties). */
typedef struct key {
    int kind, stage, chunk, mb;
    double start;
    int seq;
} key;

static int by_start(const void *a, const void *b)
{
    const key *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->seq - y->seq;
}

static int by_id(const void *a, const void *b)
{
    const key *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind - y->kind;
    if (x->stage != y->stage)
        return x->stage - y->stage;
    if (x->chunk != y->chunk)
        return x->chunk - y->chunk;
    return x->mb - y->mb;
}

static int collect(const sc_tl_rank *r, int stream, key *k)
{
    int n = 0;
    for (int i = 0; i < r->n_ops; i++)
        if (r->ops[i].stream == stream)
            k[n++] = (key){r->ops[i].kind, r->ops[i].stage, r->ops[i].chunk, r->ops[i].mb,
                           r->ops[i].start, i};
    return n;
}

/* Compares the measured timeline with the simulator's, op identity by op
 * identity; reports the first difference. */
static void compare(const char *what, const char *simf, const char *exf)
{
    sc_timeline *s = NULL, *e = NULL;
    sc_error err;
    if (sc_timeline_load(simf, &s, &err) || sc_timeline_load(exf, &e, &err)) {
        sc_test_fail(__FILE__, __LINE__, "%s: %s", what, err.msg);
        sc_timeline_free(s);
        return;
    }
    CHECK(!strcmp(e->source, "exec"));
    CHECK(e->n_steps >= 1 && e->step_median_s > 0 && e->step_min_s <= e->step_max_s);
    if (s->n_ranks != e->n_ranks) {
        sc_test_fail(__FILE__, __LINE__, "%s: %d ranks vs %d", what, s->n_ranks, e->n_ranks);
        goto out;
    }
    for (int r = 0; r < s->n_ranks; r++) {
        const sc_tl_rank *a = &s->ranks[r], *b = &e->ranks[r];
        CHECK(a->dp == b->dp && a->pp == b->pp && a->tp == b->tp);
        key *ka = calloc((size_t)a->n_ops + 1, sizeof(key));
        key *kb = calloc((size_t)b->n_ops + 1, sizeof(key));
        for (int stream = 0; stream < 2; stream++) {
            int na = collect(a, stream, ka), nb = collect(b, stream, kb);
            if (stream == SC_STREAM_COMPUTE && na == 0)
                sc_test_fail(__FILE__, __LINE__, "%s: rank %d: no compute ops", what, r);
            qsort(ka, (size_t)na, sizeof(key), stream ? by_id : by_start);
            qsort(kb, (size_t)nb, sizeof(key), stream ? by_id : by_start);
            int bad = na != nb ? (na < nb ? na : nb) : -1;
            for (int i = 0; i < na && i < nb && bad < 0; i++)
                if (by_id(&ka[i], &kb[i]))
                    bad = i;
            if (bad >= 0) {
                const key *x = bad < na ? &ka[bad] : NULL, *y = bad < nb ? &kb[bad] : NULL;
                sc_test_fail(__FILE__, __LINE__,
                             "%s: rank %d %s stream: %d sim ops, %d exec ops; at %d sim %s(%d,%d,%d) "
                             "exec %s(%d,%d,%d)",
                             what, r, stream ? "comm" : "compute", na, nb, bad,
                             x ? sc_op_kind_name(x->kind) : "-", x ? x->stage : 0,
                             x ? x->chunk : 0, x ? x->mb : 0, y ? sc_op_kind_name(y->kind) : "-",
                             y ? y->stage : 0, y ? y->chunk : 0, y ? y->mb : 0);
                break;
            }
        }
        /* times: within the step, ends after starts */
        for (int i = 0; i < b->n_ops; i++)
            if (!(b->ops[i].end >= b->ops[i].start && b->ops[i].start >= -1e-3)) {
                sc_test_fail(__FILE__, __LINE__, "%s: rank %d op %d: start %g end %g", what, r, i,
                             b->ops[i].start, b->ops[i].end);
                break;
            }
        free(ka);
        free(kb);
    }
out:
    sc_timeline_free(s);
    sc_timeline_free(e);
}

/* Plans cfg with sim, runs it under mpirun and compares. */
static void run_cfg(const char *d, const char *cfg, int ranks)
{
    char what[256];
    snprintf(what, sizeof what, "[%s]", cfg);
    if (SC("%s sim --model %s/tiny.json --cluster %s/cpu8.json %s -o %s/plan.json "
           "--timeline %s/sim.json",
           sc_test_bin(), d, d, cfg, d, d) != 0) {
        sc_test_fail(__FILE__, __LINE__, "%s: sim failed: %.300s", what, out);
        return;
    }
    SC("rm -f %s/measured.json", d);
    int rc = SC("%s -np %d %s exec %s/plan.json --backend cpu --steps 2 --warmup 1 --timeout 20 "
                "-o %s/measured.json",
                MPIRUN, ranks, sc_test_bin(), d, d);
    if (rc != 0) {
        sc_test_fail(__FILE__, __LINE__, "%s: exec exited %d: %.600s", what, rc, out);
        return;
    }
    CHECK_STR_HAS(out, "measured steps");
    char sf[512], ef[512];
    snprintf(sf, sizeof sf, "%s/sim.json", d);
    snprintf(ef, sizeof ef, "%s/measured.json", d);
    compare(what, sf, ef);
    /* and both are the lowered list, op for op */
    char pf[512];
    snprintf(pf, sizeof pf, "%s/plan.json", d);
    CHECK(sc_check_timeline_vs_lowered(what, pf, sf) > 0);
    CHECK(sc_check_timeline_vs_lowered(what, pf, ef) > 0);
}

TEST(exec_help_and_usage)
{
    CHECK(SC("%s exec --help", sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "usage: mpirun -np R stagecraft exec plan.json");
    CHECK(SC("%s exec", sc_test_bin()) == 2);
    CHECK(SC("%s exec p.json --backend tpu", sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "want cpu or cuda");
}

/* Under mpirun every rank parsed the same arguments and printed the same
 * usage error, interleaved ("stagecraft exec: stagecraft exec: --steps..."):
 * rank 0 alone says it now (cli_usage), for exec and bench alike. */
TEST(exec_usage_error_said_once_under_mpirun)
{
    if (!have_mpi())
        return;
    static const char *cmds[] = {"exec p.json --backend cpu --steps 0",
                                 "exec p.json --backend cpu --frobnicate",
                                 "bench gemm --iters 0"};
    static const char *said[] = {"--steps: 0 is out of range", "unknown option '--frobnicate'",
                                 "--iters: 0 is out of range"};
    for (size_t i = 0; i < SC_ARRAY_LEN(cmds); i++) {
        CHECK(SC("%s -np 2 %s %s", MPIRUN, sc_test_bin(), cmds[i]) != 0);
        const char *first = strstr(out, said[i]);
        CHECK(first != NULL);
        CHECK(first && !strstr(first + 1, said[i])); /* once */
        CHECK(!strstr(out, "exec: stagecraft") && !strstr(out, "bench: stagecraft"));
    }
}

TEST(exec_bad_plan_names_file)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    CHECK(SC("%s exec %s/missing.json --backend cpu -o %s/m.json", sc_test_bin(), d, d) != 0);
    CHECK_STR_HAS(out, "missing.json");
    SC("echo '{\"format\": \"stagecraft.plan/1\", \"dp\": \"x\"}' > %s/bad.json", d);
    CHECK(SC("%s exec %s/bad.json --backend cpu -o %s/m.json", sc_test_bin(), d, d) != 0);
    CHECK_STR_HAS(out, "bad.json");
    CHECK(!sc_test_exists(strcat(strcpy(out, d), "/m.json")));
}

TEST(exec_rank_count_mismatch)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(pp2_plan(d, 2) == 0);
    CHECK(SC("%s -np 3 %s exec %s/plan.json --backend cpu -o %s/m.json", MPIRUN, sc_test_bin(),
             d, d) != 0);
    CHECK_STR_HAS(out, "needs dp·cp·tp·pp = 1·1·1·2 = 2 ranks, but 3 were started");
    CHECK(!sc_test_exists(strcat(strcpy(out, d), "/m.json")));
}

/* sim and bench take --plan FILE; exec, compare and export took the plan only
 * as an argument, and refused --plan as an unknown option. All five take it
 * either way now. */
TEST(exec_plan_given_as_option)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(pp2_plan(d, 2) == 0);
    CHECK(SC("%s -np 2 %s exec --plan %s/plan.json --backend cpu --steps 1 --warmup 0 "
             "--tolerance 0 --probe 0 -o %s/m.json", MPIRUN, sc_test_bin(), d, d) == 0);
    char p[600];
    snprintf(p, sizeof p, "%s/m.json", d);
    REQUIRE(sc_test_exists(p));
    CHECK(SC("%s compare --plan %s/plan.json %s/m.json", sc_test_bin(), d, d) == 0);
    CHECK_STR_HAS(out, "/plan.json: predicted on");
    CHECK_STR_HAS(out, "/m.json measured on");
    CHECK(SC("%s export --plan %s/plan.json --to torch -o %s/x", sc_test_bin(), d, d) == 0);
    snprintf(p, sizeof p, "%s/x/torch_pipeline.py", d);
    CHECK(sc_test_exists(p));
    /* the plan twice, or nothing to compare with, is refused */
    CHECK(SC("%s exec --plan %s/plan.json %s/plan.json --backend cpu", sc_test_bin(), d, d) ==
          2);
    CHECK_STR_HAS(out, "(--plan gave the plan)");
    CHECK(SC("%s export --plan %s/plan.json other.json --to torch", sc_test_bin(), d) == 2);
    CHECK_STR_HAS(out, "(--plan gave the plan)");
    CHECK(SC("%s compare --plan %s/plan.json", sc_test_bin(), d) == 2);
    CHECK_STR_HAS(out, "give the measured timeline after --plan's plan");
}

TEST(exec_schedules_pp2_pp4)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(setup(d, "") == 0);
    run_cfg(d, "--dp 1 --tp 1 --pp 2 --microbatches 4 --mbs 1 --schedule gpipe", 2);
    run_cfg(d, "--dp 1 --tp 1 --pp 2 --microbatches 4 --mbs 1 --schedule 1f1b", 2);
    run_cfg(d, "--dp 1 --tp 1 --pp 2 --v 2 --microbatches 4 --mbs 1 --schedule interleaved", 2);
    run_cfg(d, "--dp 1 --tp 1 --pp 2 --microbatches 4 --mbs 1 --schedule zb-h1", 2);
    run_cfg(d, "--dp 1 --tp 1 --pp 4 --microbatches 4 --mbs 1 --schedule gpipe", 4);
    run_cfg(d, "--dp 1 --tp 1 --pp 4 --microbatches 4 --mbs 1 --schedule 1f1b", 4);
    run_cfg(d, "--dp 1 --tp 1 --pp 4 --v 2 --microbatches 4 --mbs 1 --schedule interleaved "
               "--partition uniform", 4);
    run_cfg(d, "--dp 1 --tp 1 --pp 4 --microbatches 4 --mbs 1 --schedule zb-h1", 4);
}

TEST(exec_tp_dp_zero_recompute)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(setup(d, "") == 0);
    run_cfg(d, "--dp 1 --tp 2 --pp 1 --microbatches 2 --mbs 1 --schedule 1f1b", 2);
    run_cfg(d, "--dp 2 --tp 1 --pp 1 --microbatches 2 --mbs 1 --schedule 1f1b", 2);
    run_cfg(d, "--dp 2 --tp 1 --pp 1 --microbatches 2 --mbs 1 --schedule 1f1b --zero 1", 2);
    run_cfg(d, "--dp 2 --tp 1 --pp 1 --microbatches 2 --mbs 1 --schedule 1f1b --zero 3", 2);
    /* the parameter gather before the recompute; small buckets: several pieces */
    run_cfg(d, "--dp 2 --tp 1 --pp 1 --microbatches 2 --mbs 1 --schedule 1f1b --zero 3 "
               "--recompute full --bucket-mib 0.25", 2);
    run_cfg(d, "--dp 1 --tp 2 --pp 1 --microbatches 2 --mbs 1 --schedule 1f1b --recompute full",
            2);
    /* sequence parallelism: reduce-scatter and all-gather on the tp group */
    run_cfg(d, "--dp 1 --tp 2 --pp 2 --microbatches 2 --mbs 1 --schedule 1f1b --sp", 4);
    /* tp communication overlap: the chunks beside each op, not waited for,
     * then the last chunk; with full recompute the recompute's too */
    run_cfg(d, "--dp 1 --tp 2 --pp 2 --microbatches 2 --mbs 1 --schedule 1f1b --sp "
               "--tp-comm-overlap 1", 4);
    run_cfg(d, "--dp 1 --tp 2 --pp 1 --microbatches 2 --mbs 1 --schedule 1f1b --sp "
               "--tp-comm-overlap 1 --recompute full", 2);
    run_cfg(d, "--dp 1 --tp 1 --pp 2 --microbatches 2 --mbs 1 --schedule 1f1b "
               "--recompute selective", 2);
    /* the parameter all-gather at the step's start, beside the first forward */
    run_cfg(d, "--dp 2 --tp 1 --pp 1 --microbatches 2 --mbs 1 --schedule 1f1b --zero 1 "
               "--overlap-param-gather 1", 2);
    run_cfg(d, "--dp 2 --tp 1 --pp 2 --microbatches 2 --mbs 1 --schedule 1f1b --zero 2 "
               "--overlap-param-gather 1", 4);
}

/* Full recompute re-runs the layers' forward, not the LM head and loss
 * (sc_stage_info recompute_full_s): on the last stage of a model whose head
 * is most of its work (vocabulary 32768, hidden 64), the executor's
 * recompute takes a fraction of its forward, as the simulator's does; before,
 * both re-ran the whole forward. */
TEST(exec_full_recompute_reruns_the_layers)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(setup(d, "") == 0); /* cpu8.json; tiny.json replaced: */
    REQUIRE(SC("%s model gen gpt --layers 4 --hidden 64 --heads 2 --seq 64 --vocab 32768 "
               "--dtype fp32 -o %s/tiny.json",
               sc_test_bin(), d) == 0);
    run_cfg(d, "--dp 1 --tp 1 --pp 2 --microbatches 4 --mbs 1 --schedule 1f1b --recompute full",
            2);
    for (int which = 0; which < 2; which++) {
        char f[512];
        snprintf(f, sizeof f, "%s/%s.json", d, which ? "measured" : "sim");
        sc_timeline *t = NULL;
        sc_error err;
        REQUIRE(sc_timeline_load(f, &t, &err) == SC_OK);
        double fwd = 0, rc = 0;
        int nf = 0, nr = 0;
        for (int r = 0; r < t->n_ranks; r++) {
            if (t->ranks[r].pp != 1)
                continue;
            for (int i = 0; i < t->ranks[r].n_ops; i++) {
                const sc_tl_op *o = &t->ranks[r].ops[i];
                if (o->kind == SC_OP_F) {
                    fwd += o->end - o->start;
                    nf++;
                } else if (o->kind == SC_OP_RECOMPUTE) {
                    rc += o->end - o->start;
                    nr++;
                }
            }
        }
        CHECK(nf > 0 && nr == nf);
        if (fwd > 0 && !(rc < 0.5 * fwd))
            sc_test_fail(__FILE__, __LINE__, "%s: the last stage's recompute took %g s, its "
                         "forward %g s: the head was re-run", f, rc, fwd);
        sc_timeline_free(t);
    }
}

TEST(exec_mixed_layouts)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(setup(d, "--tied") == 0); /* tied embedding and head: a shared group */
    run_cfg(d, "--dp 2 --tp 1 --pp 2 --microbatches 4 --mbs 1 --schedule zb-h1 --zero 2", 4);
    run_cfg(d, "--dp 1 --tp 2 --pp 2 --v 2 --microbatches 4 --mbs 1 --schedule interleaved "
               "--recompute full", 4);
    run_cfg(d, "--dp 2 --tp 2 --pp 2 --microbatches 2 --mbs 2 --schedule 1f1b --zero 3", 8);
}

/* Bytes of rank r's data-parallel gradient reductions and tied-group
 * allreduces in a timeline file (0 when it does not load). */
static double reduce_bytes(const char *file, int r)
{
    sc_timeline *t = NULL;
    sc_error err;
    if (sc_timeline_load(file, &t, &err) || r >= t->n_ranks) {
        sc_test_fail(__FILE__, __LINE__, "%s: %s", file, err.msg);
        sc_timeline_free(t);
        return 0;
    }
    double b = 0;
    for (int i = 0; i < t->ranks[r].n_ops; i++) {
        const sc_tl_op *o = &t->ranks[r].ops[i];
        if (o->kind == SC_OP_DP_ALLREDUCE || o->kind == SC_OP_DP_REDUCESCATTER)
            b += o->bytes; /* a tied group's allreduce is a DP_ALLREDUCE too */
    }
    sc_timeline_free(t);
    return b;
}

/* A bf16 plan that reduces its gradients in fp32 (grad_reduce_in_fp32):
 * the executor runs it, moving the plan's bytes (twice the bf16 reduction's)
 * in its buckets and its tied group's allreduce. */
TEST(exec_grad_reduce_in_fp32)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(setup(d, "--tied --dtype bf16") == 0);
    /* the CPU preset has no bf16 rate: give it the fp32 one and its curve (the
     * CPU backend computes in fp32 whatever the plan's dtype) */
    REQUIRE(SC("/usr/bin/python3 -c \"import json; p='%s/cpu8.json'; c=json.load(open(p)); "
               "f=c['gpu']['peak_flops']; f['bf16']=f['fp32']; e=c['efficiency']['compute']; "
               "e['bf16']=e['fp32']; json.dump(c, open(p, 'w'))\"",
               d) == 0);
    double b[2];
    for (int k = 0; k < 2; k++) {
        char cfg[128], sim[512], ex[512];
        snprintf(cfg, sizeof cfg, "--dp 2 --tp 1 --pp 2 --microbatches 2 --mbs 1 --schedule 1f1b "
                 "--zero 1 --grad-reduce-in-fp32 %d", k);
        run_cfg(d, cfg, 4);
        snprintf(sim, sizeof sim, "%s/sim.json", d);
        snprintf(ex, sizeof ex, "%s/measured.json", d);
        b[k] = reduce_bytes(ex, 0);
        CHECK(b[k] > 0);
        CHECK_NEAR(b[k], reduce_bytes(sim, 0), 1e-6 * b[k] + 64);
    }
    CHECK_NEAR(b[1], 2 * b[0], 1e-6 * b[1] + 64);
}

/* Token slices (TeraPipe): the executor runs each slice with its own
 * shapes (slice-length GEMMs, attention over the keys so far), and its
 * measured timeline is the lowered list op for op, as the simulator's. */
TEST(exec_token_slices)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(setup(d, "") == 0);
    run_cfg(d, "--dp 1 --tp 1 --pp 2 --microbatches 2 --mbs 1 --schedule gpipe --slices 4", 2);
    run_cfg(d, "--dp 1 --tp 2 --pp 2 --microbatches 1 --mbs 1 --schedule 1f1b --slices auto", 4);
}

/* Context parallelism: each rank runs its 1/cp of the tokens (attention over
 * every key), the key/value ring is an all-gather on the cp group issued
 * beside the compute it follows, the gradients are reduced over dp·cp; the
 * measured timeline is the lowered list op for op, as the simulator's. */
TEST(exec_context_parallel)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(setup(d, "") == 0);
    run_cfg(d, "--dp 1 --cp 2 --tp 2 --microbatches 2 --mbs 1 --attn flash --sp", 4);
    run_cfg(d, "--dp 2 --cp 2 --pp 2 --microbatches 4 --mbs 1 --attn flash --zero 1 "
               "--recompute full", 8);
    CHECK(SC("grep -c cp_exchange %s/measured.json", d) == 0);
}

/* On a cluster with the kernel-level model (efficiency.gemm) the executor
 * runs each leaf's kernel list, as the cost model times it (here a CPU
 * cluster given a GEMM block, flash attention's two products included); the
 * measured timeline is still the lowered list op for op. */
TEST(exec_kernel_lists)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(setup(d, "") == 0);
    REQUIRE(kernel_cluster(d) == 0);
    REQUIRE(SC("%s cost --model %s/tiny.json --cluster %s/cpu8.json --kernels --json", sc_test_bin(),
               d, d) == 0);
    CHECK_STR_HAS(out, "\"kernels\":");
    run_cfg(d, "--dp 1 --tp 2 --pp 2 --microbatches 2 --mbs 1 --schedule 1f1b", 4);
    run_cfg(d, "--dp 1 --tp 1 --pp 2 --microbatches 2 --mbs 1 --schedule gpipe --attn flash", 2);
}

/* exec --kernels: rank 0 times each kernel of its stage alone; the timeline
 * carries them (names from the model's kernel lists, the flash kernel as
 * the two batched GEMMs the executor runs, forward and backward passes),
 * and compare prints them beside their predictions, in text and JSON. */
/* The plan of model d/`model` (the tiny one setup writes, or one written
 * before) and `layout` (sim options) on the kernel-level CPU cluster, run by
 * 2 ranks with exec --kernels: d/plan.json, its measured timeline in ef
 * (d/measured.json), loaded; NULL (the test failed) when a step did not run. */
static sc_timeline *profile_kernels(const char *d, const char *model, const char *layout,
                                    char *ef, size_t n)
{
    snprintf(ef, n, "%s/measured.json", d);
    if (setup(d, "") || kernel_cluster(d) ||
        SC("%s sim --model %s/%s --cluster %s/cpu8.json %s -o %s/plan.json",
           sc_test_bin(), d, model, d, layout, d)) {
        sc_test_fail(__FILE__, __LINE__, "setting up %s failed: %.600s", layout, out);
        return NULL;
    }
    int rc = SC("%s -np 2 %s exec %s/plan.json --backend cpu --steps 2 --warmup 1 --timeout 20 "
                "--tolerance 0 --kernels -o %s",
                MPIRUN, sc_test_bin(), d, ef);
    if (rc != 0 || !strstr(out, "kernels: ")) {
        sc_test_fail(__FILE__, __LINE__, "exec exited %d: %.600s", rc, out);
        return NULL;
    }
    sc_timeline *t = NULL;
    sc_error err;
    if (sc_timeline_load(ef, &t, &err) != SC_OK) {
        sc_test_fail(__FILE__, __LINE__, "%s", err.msg);
        return NULL;
    }
    return t;
}

TEST(exec_kernel_profile)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    char ef[512];
    sc_timeline *t = profile_kernels(d, "tiny.json", "--pp 2 --microbatches 2 --attn flash", ef,
                                     sizeof ef);
    REQUIRE(t);
    CHECK(t->n_kernels > 0);
    CHECK_EQ_INT(t->kernels_rank, 0);
    CHECK(!strcmp(t->flash_attention, "gemms"));
    CHECK(!strcmp(t->operands, "random")); /* exec.h SC_EXEC_OPERANDS */
    int fwd = 0, bwd = 0, flash = 0, mem = 0, bad = 0;
    for (int i = 0; i < t->n_kernels; i++) {
        const sc_tl_kernel *k = &t->kernels[i];
        fwd += !strcmp(k->pass, "F");
        bwd += !strcmp(k->pass, "BW");
        flash += !strcmp(k->name, "flash") && !strcmp(k->op, "core");
        mem += !strcmp(k->op, "mem");
        bad += !(k->calls >= 1 && k->time_s >= 0 && k->name[0]);
    }
    CHECK(fwd > 0 && bwd > 0 && mem > 0);
    CHECK(flash >= 4); /* two products, forward and backward */
    CHECK_EQ_INT(bad, 0);
    sc_timeline_free(t);
    int rc = SC("%s compare %s/plan.json %s", sc_test_bin(), d, ef);
    CHECK_EQ_INT(rc, 0);
    CHECK_STR_HAS(out, "each timed alone");
    CHECK_STR_HAS(out, "MAPE over kernels");
    CHECK_STR_HAS(out, "flash");
    rc = SC("%s compare %s/plan.json %s --json", sc_test_bin(), d, ef);
    CHECK_EQ_INT(rc, 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j != NULL);
    const cJSON *ko = cJSON_GetObjectItem(j, "kernels");
    CHECK(cJSON_IsObject(ko) && cJSON_GetArraySize(cJSON_GetObjectItem(ko, "each")) > 0);
    const cJSON *all = cJSON_GetObjectItem(ko, "all");
    CHECK(all && cJSON_GetObjectItem(all, "measured_s")->valuedouble > 0 &&
          cJSON_GetObjectItem(all, "predicted_s")->valuedouble > 0);
    cJSON_Delete(j);
    /* without --kernels: none; --zero-operands is recorded */
    REQUIRE(SC("%s -np 2 %s exec %s/plan.json --backend cpu --steps 2 --warmup 1 --timeout 20 "
               "--tolerance 0 --zero-operands -o %s/measured.json",
               MPIRUN, sc_test_bin(), d, d) == 0);
    sc_error err;
    REQUIRE(sc_timeline_load(ef, &t, &err) == SC_OK);
    CHECK_EQ_INT(t->n_kernels, 0);
    CHECK(!strcmp(t->operands, "zeros"));
    sc_timeline_free(t);
}

/* A backward-only kernel (`model gen llama --eager`'s sums of the q, k, v
 * data gradients) runs in the backward and not the forward, and the eager
 * kernels are timed under their own names. */
TEST(exec_kernel_profile_eager_llama)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("%s model gen llama --layers 2 --hidden 64 --heads 4 --kv_heads 2 --ffn 128 "
               "--seq 32 --vocab 256 --dtype fp32 --eager -o %s/eager.json",
               sc_test_bin(), d) == 0);
    char ef[512];
    sc_timeline *t =
        profile_kernels(d, "eager.json", "--dp 2 --microbatches 1 --attn flash", ef, sizeof ef);
    REQUIRE(t);
    int sum_bwd = 0, sum_fwd = 0, rotary = 0;
    for (int i = 0; i < t->n_kernels; i++) {
        const sc_tl_kernel *k = &t->kernels[i];
        if (!strcmp(k->name, "qkv_grad_sum")) {
            sum_bwd += strcmp(k->pass, "F") && k->bytes > 0;
            sum_fwd += !strcmp(k->pass, "F");
        }
        rotary += !strncmp(k->name, "rotary_", 7);
        /* a memory kernel is timed only in a pass where it ran: a third of its
         * bytes of at least 4 (a backward-only sum has no forward row, a
         * forward-only kernel no backward one) */
        if (!strcmp(k->op, "mem") && k->bytes < 12)
            sc_test_fail(__FILE__, __LINE__, "%s %s: a row of %g bytes, which nothing ran",
                         k->name, k->pass, k->bytes);
    }
    CHECK(sum_bwd > 0);
    CHECK_EQ_INT(sum_fwd, 0);
    CHECK(rotary >= 4);
    sc_timeline_free(t);
}

/* Under TE's tp overlap (tp_comm_overlap with sp) the executor runs a
 * layer's tp GEMMs in the chunks the cost model prices
 * (sc_cost_kernel_splits): the forward of a column-parallel GEMM (qkv, fc1)
 * in tp chunks, of a row-parallel one (out_proj, fc2) in 4, the
 * row-parallel data gradient in tp; the weight gradients and the LM head
 * whole. The timeline says so per kernel, and compare prices the chunks. */
TEST(exec_kernel_profile_tp_overlap_chunks)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    char ef[512], cf[512];
    sc_timeline *t =
        profile_kernels(d, "tiny.json", "--tp 2 --sp --tp-comm-overlap 1 --microbatches 2", ef,
                        sizeof ef);
    REQUIRE(t);
    snprintf(cf, sizeof cf, "%s/cpu8.json", d);
    sc_error err;
    sc_cluster c;
    REQUIRE(sc_cluster_load(cf, &c, &err) == SC_OK);
    int seen = 0, bad = 0;
    for (int i = 0; i < t->n_kernels; i++) {
        const sc_tl_kernel *k = &t->kernels[i];
        if (strcmp(k->op, "wgemm"))
            continue;
        int col = !strcmp(k->name, "qkv") || !strcmp(k->name, "fc1");
        int row = !strcmp(k->name, "out_proj") || !strcmp(k->name, "fc2");
        int f = !strcmp(k->pass, "F"), w = !strcmp(k->pass, "W");
        int want = !(col || row) || w ? 1 : f ? (col ? 2 : 4) : (row ? 2 : 1);
        int got = k->splits > 1 ? k->splits : 1;
        if (got != want) {
            bad++;
            sc_test_fail(__FILE__, __LINE__, "%s %s: %d chunks, want %d", k->name, k->pass, got,
                         want);
        }
        seen += col || row;
    }
    CHECK(seen >= 8); /* four tp GEMMs, forward and backward */
    CHECK_EQ_INT(bad, 0);
    /* compare prices each chunk as its own GEMM: qkv's forward, 64 rows in 2 */
    int rc = SC("%s compare %s/plan.json %s --json", sc_test_bin(), d, ef);
    CHECK_EQ_INT(rc, 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j != NULL);
    const cJSON *o, *each = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "kernels"), "each");
    int priced = 0;
    cJSON_ArrayForEach(o, each)
    {
        const char *name = cJSON_GetObjectItem(o, "name")->valuestring;
        const char *pass = cJSON_GetObjectItem(o, "pass")->valuestring;
        if (strcmp(name, "qkv") || strcmp(pass, "F"))
            continue;
        const cJSON *sp = cJSON_GetObjectItem(o, "splits");
        REQUIRE(sp && sp->valueint == 2);
        double B = cJSON_GetObjectItem(o, "batch")->valuedouble;
        double M = cJSON_GetObjectItem(o, "m")->valuedouble;
        double N = cJSON_GetObjectItem(o, "n")->valuedouble;
        double K = cJSON_GetObjectItem(o, "k")->valuedouble;
        double pred = cJSON_GetObjectItem(o, "predicted_s")->valuedouble;
        double whole = sc_cost_gemm_time(&c, SC_FP32, B, M, N, K, 1);
        double half = sc_cost_gemm_time(&c, SC_FP32, B, ceil(M / 2), N, K, 1);
        CHECK_NEAR(pred, 2 * half, 1e-12);
        CHECK(fabs(pred - whole) > 1e-9); /* the chunks cost more than the whole */
        priced++;
    }
    CHECK_EQ_INT(priced, 1);
    cJSON_Delete(j);
    sc_timeline_free(t);
}

/* A hung rank: every other rank gives up within the timeout with one line
 * naming what it waited for, the job exits non-zero, nothing is written. */
TEST(exec_fault_hang_times_out)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(pp2_plan(d, 4) == 0);
    int rc = SC("SC_EXEC_FAULT=1:2:hang timeout 60 %s -x SC_EXEC_FAULT -np 2 %s exec %s/plan.json "
                "--backend cpu --steps 3 --warmup 1 --timeout 1.5 -o %s/m.json",
                MPIRUN, sc_test_bin(), d, d);
    CHECK(rc != 0 && rc != 124);
    CHECK_STR_HAS(out, "stagecraft exec: rank 0: timed out after 1.5 s waiting for recv_b "
                       "(stage 0, mb 0) from rank 1");
    CHECK(!sc_test_exists(strcat(strcpy(out, d), "/m.json")));
}

/* A rank that dies: the job ends non-zero with nothing written. */
TEST(exec_fault_kill)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(setup(d, "") == 0);
    REQUIRE(SC("%s sim --model %s/tiny.json --cluster %s/cpu8.json --dp 1 --tp 2 --pp 2 "
               "--microbatches 4 --mbs 1 --schedule 1f1b -o %s/plan.json",
               sc_test_bin(), d, d, d) == 0);
    int rc = SC("SC_EXEC_FAULT=2:1:kill timeout 60 %s -x SC_EXEC_FAULT -np 4 %s exec "
                "%s/plan.json --backend cpu --steps 3 --warmup 1 --timeout 2 -o %s/m.json",
                MPIRUN, sc_test_bin(), d, d);
    CHECK(rc != 0 && rc != 124);
    CHECK(!sc_test_exists(strcat(strcpy(out, d), "/m.json")));
}

/* Corrupted activations (the test hook makes rank 0 fill its sends with the
 * wrong pattern) are caught by checksum on receipt. */
TEST(exec_checksum_mismatch_fails_loudly)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(pp2_plan(d, 2) == 0);
    int rc = SC("SC_EXEC_FAULT=0:0:corrupt timeout 60 %s -x SC_EXEC_FAULT -np 2 %s exec "
                "%s/plan.json --backend cpu --steps 1 --warmup 1 --timeout 5 -o %s/m.json",
                MPIRUN, sc_test_bin(), d, d);
    CHECK(rc != 0 && rc != 124);
    CHECK_STR_HAS(out, "rank 1: checksum mismatch on recv_f (stage 1, mb 0) from rank 0, step 0");
    CHECK(!sc_test_exists(strcat(strcpy(out, d), "/m.json")));
}

/* Measured until stable: without a tolerance exactly --steps steps; with one
 * at least twice as many (the last window against the one before), at most
 * --max-steps, and the file says how it went (steps.runs, spread, drift,
 * tolerance, stable) and what ran it (provenance). */
TEST(exec_until_stable)
{
    if (!have_mpi())
        return;
    const char *d = sc_test_tmpdir();
    REQUIRE(setup(d, "") == 0);
    REQUIRE(SC("%s sim --model %s/tiny.json --cluster %s/cpu8.json --pp 2 --microbatches 2 "
               "-o %s/plan.json", sc_test_bin(), d, d, d) == 0);
    char f[600];
    snprintf(f, sizeof f, "%s/m.json", d);
    REQUIRE(SC("%s -np 2 %s exec %s/plan.json --backend cpu --steps 3 --warmup 1 --tolerance 0.5 "
               "--max-steps 9 -o %s", MPIRUN, sc_test_bin(), d, f) == 0);
    sc_timeline *t = NULL;
    sc_error err;
    REQUIRE(sc_timeline_load(f, &t, &err) == SC_OK);
    CHECK_EQ_INT(t->n_steps, 3);
    CHECK(t->step_runs >= 6 && t->step_runs <= 9);
    CHECK(t->step_spread >= 0);
    CHECK(t->step_drift >= 0 && t->step_tolerance == 0.5);
    CHECK(t->step_stable == (t->step_drift <= 0.5));
    CHECK(t->step_min_s <= t->step_median_s && t->step_median_s <= t->step_max_s);
    CHECK(t->prov.present && t->prov.blas_core[0]);
    /* the speed probe, by default a 256^3 fp32 GEMM on every rank before each
     * step: times a GEMM of that size takes on a core (10 us to 2 s), the
     * median over the window of 3 */
    CHECK_EQ_INT(t->probe_m, 256);
    CHECK_EQ_INT(t->probe_k, 256);
    CHECK_EQ_INT(t->probe_reps, 3);
    CHECK_EQ_INT(t->probe_steps, 3);
    CHECK(!strcmp(t->probe_dtype, "fp32"));
    for (int r = 0; r < t->n_ranks; r++)
        CHECK(t->ranks[r].probe_s > 1e-5 && t->ranks[r].probe_s < 2);
    CHECK_STR_HAS(out, "probe: a 256^3 GEMM before each step, median ");
    sc_timeline_free(t);
    /* --tolerance 0: the old way, exactly N steps, nothing judged; --probe
     * sets the probe's size, 0 none */
    REQUIRE(SC("%s -np 2 %s exec %s/plan.json --backend cpu --steps 3 --warmup 1 --tolerance 0 "
               "--probe 64 -o %s", MPIRUN, sc_test_bin(), d, f) == 0);
    REQUIRE(sc_timeline_load(f, &t, &err) == SC_OK);
    CHECK_EQ_INT(t->step_runs, 3);
    CHECK(t->step_drift < 0 && t->step_tolerance < 0 && t->step_stable < 0);
    CHECK_EQ_INT(t->probe_n, 64);
    sc_timeline_free(t);
    REQUIRE(SC("%s -np 2 %s exec %s/plan.json --backend cpu --steps 3 --warmup 1 --tolerance 0 "
               "--probe 0 -o %s", MPIRUN, sc_test_bin(), d, f) == 0);
    CHECK(!strstr(out, "probe:"));
    REQUIRE(sc_timeline_load(f, &t, &err) == SC_OK);
    CHECK_EQ_INT(t->probe_m, 0);
    CHECK(t->ranks[0].probe_s == 0);
    sc_timeline_free(t);
    CHECK(SC("%s exec %s/plan.json --backend cpu --probe -1", sc_test_bin(), d) == 2);
    CHECK_STR_HAS(out, "--probe");
    /* a window that can never be judged: said plainly, file written */
    REQUIRE(SC("%s -np 2 %s exec %s/plan.json --backend cpu --steps 3 --warmup 0 --max-steps 4 "
               "-o %s 2>&1", MPIRUN, sc_test_bin(), d, f) == 0);
    CHECK_STR_HAS(out, "too noisy");
    CHECK(SC("%s exec %s/plan.json --backend cpu --steps 5 --max-steps 4", sc_test_bin(), d) == 2);
    CHECK_STR_HAS(out, "--max-steps 4 is below --steps 5");
}
