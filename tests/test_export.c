/* test_export.c - `stagecraft export`: each target on gpt-1.3b and t5-3b
 * plans (written by `sim -o`), checked field by field (the Megatron-LM flags
 * line by line, DeepSpeed's config through cJSON, the Python files through
 * /usr/bin/python3 -m py_compile, the shell scripts through bash -n); the
 * refusals; -o writing every file or none; --help. */
#include "check.h"
#include "export.h"
#include "json.h"
#include "model.h"
#include "plan.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char out[1 << 17];

#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)

/* A plan of MODEL on p4d.24xlarge from `sim -o`, at DIR/NAME; ARGS are sim's. */
static int make_plan(const char *name, const char *model, const char *args)
{
    return SC("%s sim --model %s --cluster p4d.24xlarge %s -o %s/%s >/dev/null", sc_test_bin(),
              model, args, sc_test_tmpdir(), name);
}

/* The script has the line "    FLAG" (a switch) or "    FLAG VALUE". */
static int has_arg(const char *script, const char *flag_value)
{
    char line[256];
    snprintf(line, sizeof line, "\n    %s\n", flag_value);
    return strstr(script, line) != NULL;
}

#define CHECK_ARG(s, fv)                                                                    \
    do {                                                                                    \
        if (!has_arg((s), (fv)))                                                            \
            sc_test_fail(__FILE__, __LINE__, "no line '    %s' in the script", (fv));       \
    } while (0)

static char *read_in(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *s = NULL;
    size_t n;
    if (sc_read_file(path, 1 << 22, &s, &n, NULL))
        return NULL;
    return s;
}

static int files_in(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static const cJSON *jget(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* The run tests' python: SC_TORCH_PYTHON, else Debian's. */
static const char *torch_python(void)
{
    const char *py = getenv("SC_TORCH_PYTHON");
    return py && *py ? py : "/usr/bin/python3";
}

/* The run tests' plan: a 4-layer GPT on one dgx-a100-80g node (ARGS are
 * sim's), exported for TARGET into the folder NAME of the test's tmpdir. */
static int tiny_export(const char *target, const char *args, const char *name)
{
    const char *d = sc_test_tmpdir();
    if (SC("test -s %s/tiny.json || %s model gen gpt --layers 4 --hidden 64 --heads 4 --seq 32 "
           "--vocab 128 --tied -o %s/tiny.json >/dev/null", d, sc_test_bin(), d) != 0)
        return -1;
    return SC("%s sim --model %s/tiny.json --cluster dgx-a100-80g --nodes 1 %s --mbs 2 "
              "--framework %s -o %s/%s.json >/dev/null && %s export %s/%s.json --to %s -o %s/%s "
              ">/dev/null", sc_test_bin(), d, args, target, d, name, sc_test_bin(), d, name, target,
              d, name);
}

/* The run tests' python when it has torch >= 2.6 (torch.distributed.
 * pipelining's schedules); else NULL, the test reported unavailable with
 * what it did not do. */
static const char *torch_2_6(const char *not_done)
{
    const char *py = torch_python();
    if (SC("%s -c 'import torch, sys; "
           "sys.exit(0 if tuple(int(x) for x in torch.__version__.split(\".\")[:2]) >= (2, 6) "
           "else 1)' 2>&1", py) == 0)
        return py;
    sc_test_unavailable("%s has no torch >= 2.6 (Debian packages 1.13; SC_TORCH_PYTHON names "
                        "another python): %s", py, not_done);
    return NULL;
}

/* Runs SCRIPT (with its arguments) on two ranks by torch.distributed.run in
 * the folder NAME of the test's tmpdir, under a 120 s limit; out keeps the
 * lines that say what it did (steps, stage bounds, errors). Its exit
 * status, the run's own. */
static int two_ranks(const char *py, const char *name, const char *script)
{
    return SC("cd %s/%s && timeout 120 %s -m torch.distributed.run --standalone "
              "--nproc-per-node 2 %s >run.log 2>&1; rc=$?; "
              "grep -E 'step [0-9]|parts|Error|^factory: |^note: ' run.log; exit $rc",
              sc_test_tmpdir(), name, py, script);
}

/* A run's output (in out) shows two steps trained: a step 0 loss and a step
 * 1 loss near ln(vocab) = 4.85 for random tokens; *loss the latter (0: none). */
static int trained(double *loss)
{
    const char *last = strstr(out, "step 1: loss ");
    *loss = last ? atof(last + strlen("step 1: loss ")) : 0;
    return strstr(out, "step 0: loss ") && *loss > 3 && *loss < 7;
}

TEST(export_help)
{
    CHECK(SC("%s export --help", sc_test_bin()) == 0);
    CHECK_STR_HAS(out, "usage: stagecraft export PLAN --to TARGET");
    CHECK_STR_HAS(out, "megatron");
    CHECK_STR_HAS(out, "deepspeed");
    CHECK_STR_HAS(out, "torch");
    REQUIRE(make_plan("p.json", "gpt-1.3b", "--pp 2 --microbatches 4") == 0);
    CHECK(SC("%s export %s/p.json 2>&1", sc_test_bin(), sc_test_tmpdir()) == 2);
    CHECK_STR_HAS(out, "missing --to TARGET");
    CHECK(SC("%s export %s/p.json --to colossal 2>&1", sc_test_bin(), sc_test_tmpdir()) == 2);
    CHECK_STR_HAS(out, "--to: 'colossal' is not one of megatron, deepspeed, torch");
    CHECK(SC("%s export --to torch 2>&1", sc_test_bin()) == 2);
    CHECK_STR_HAS(out, "missing PLAN");
    CHECK(SC("%s export %s/nope.json --to torch 2>&1", sc_test_bin(), sc_test_tmpdir()) == 2);
}

/* gpt-1.3b, dp 4 tp 2 pp 4, ZeRO 1, selective recompute: every flag. */
TEST(export_megatron_gpt_flags)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_plan("g.json", "gpt-1.3b",
                      "--nodes 4 --dp 4 --tp 2 --pp 4 --microbatches 8 --mbs 2 --schedule 1f1b "
                      "--zero 1 --recompute selective") == 0);
    REQUIRE(SC("%s export %s/g.json --to megatron", sc_test_bin(), d) == 0);
    char *s = strdup(out);
    REQUIRE(s);
    static const char *const want[] = {
        "--num-layers 24", "--hidden-size 2048", "--num-attention-heads 16",
        "--ffn-hidden-size 8192", "--seq-length 2048", "--max-position-embeddings 2048",
        "--tensor-model-parallel-size 2", "--pipeline-model-parallel-size 4",
        "--use-tp-pp-dp-mapping", "--micro-batch-size 2", "--global-batch-size 64",
        "--recompute-granularity selective", "--use-distributed-optimizer",
        "--overlap-grad-reduce", "--ddp-bucket-size 13107200", "--bf16",
        "--grad-reduce-in-bf16", "--attention-backend unfused"};
    for (size_t i = 0; i < SC_ARRAY_LEN(want); i++)
        CHECK_ARG(s, want[i]);
    /* tied embeddings (Megatron's default), even layers: no uneven flags */
    CHECK(!strstr(s, "--untie-embeddings-and-output-weights"));
    CHECK(!strstr(s, "--decoder-first-pipeline-num-layers"));
    CHECK(!strstr(s, "--pipeline-model-parallel-layout"));
    CHECK(!strstr(s, "--recompute-method"));
    CHECK_STR_HAS(s, "--mock-data --tokenizer-type NullTokenizer --vocab-size 50257)");
    CHECK_STR_HAS(s, "\"$MEGATRON/pretrain_gpt.py\"");
    CHECK_STR_HAS(s, "NNODES=4\nGPUS_PER_NODE=8\n");
    /* tp > 1 without Megatron-FSDP: validate_args wants one CUDA connection */
    CHECK_STR_HAS(s, "\nexport CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS:-1}\n");
    /* the header: the checked version and what differs */
    CHECK_STR_HAS(s, "d98e8a64ddf34856e74b24714e3bedb2f5a39553");
    CHECK_STR_HAS(s, "What Megatron-LM does differently from the plan:");
    CHECK_STR_HAS(s, "padded from 50257 to 50432");

    /* -o: both scripts, executable, valid bash; the JSON's args match */
    REQUIRE(SC("%s export %s/g.json --to megatron -o %s/m --json", sc_test_bin(), d, d) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *args = jget(jget(j, "settings"), "args");
    CHECK(cJSON_GetNumberValue(jget(args, "--num-layers")) == 24);
    CHECK(cJSON_GetNumberValue(jget(args, "--pipeline-model-parallel-size")) == 4);
    CHECK(cJSON_IsTrue(jget(args, "--use-distributed-optimizer")));
    CHECK(cJSON_GetArraySize(jget(j, "differences")) >= 3);
    CHECK(!strcmp(cJSON_GetStringValue(jget(j, "main")), "megatron_torchrun.sh"));
    cJSON_Delete(j);
    char *t = read_in(d, "m/megatron_torchrun.sh"), *b = read_in(d, "m/megatron_sbatch.sh");
    REQUIRE(t && b);
    CHECK(!strcmp(t, s));
    CHECK_STR_HAS(b, "#SBATCH --nodes=4\n");
    CHECK_STR_HAS(b, "#SBATCH --gpus-per-node=8\n");
    CHECK_STR_HAS(b, "megatron_torchrun.sh");
    CHECK_EQ_INT(files_in(d), 2); /* g.json and m/ */
    char path[1024];
    snprintf(path, sizeof path, "%s/m/megatron_torchrun.sh", d);
    struct stat stt;
    CHECK(stat(path, &stt) == 0 && (stt.st_mode & 0100));
    CHECK(SC("bash -n %s/m/megatron_torchrun.sh && bash -n %s/m/megatron_sbatch.sh 2>&1", d, d) ==
          0);
    sc_free(t);
    sc_free(b);
    free(s);
}

/* A Llama-style model exports as Megatron-LM builds Llama (its
 * examples/llama scripts): grouped-query attention, SwiGLU, RMSNorm, no
 * biases, rotary positions; the squared-ReLU MLP of `model gen llama
 * --relu2` as --squared-relu; GPT's layers get none of them (above). The
 * torch target's reference model is GPT's: it asks for the user's model. */
TEST(export_megatron_llama_flags)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_plan("l.json", "llama3-8b",
                      "--nodes 1 --dp 2 --tp 4 --microbatches 4 --recompute full --zero 1") == 0);
    REQUIRE(SC("%s export %s/l.json --to megatron", sc_test_bin(), d) == 0);
    static const char *const want[] = {
        "--num-attention-heads 32", "--group-query-attention", "--num-query-groups 8",
        "--ffn-hidden-size 14336", "--swiglu", "--normalization RMSNorm",
        "--disable-bias-linear", "--position-embedding-type rope",
        "--untie-embeddings-and-output-weights",
        /* Llama's kernels run no dropout; Megatron-LM's default is 0.1 */
        "--attention-dropout 0", "--hidden-dropout 0"};
    for (size_t i = 0; i < SC_ARRAY_LEN(want); i++)
        CHECK_ARG(out, want[i]);
    CHECK(!strstr(out, "--squared-relu"));
    CHECK(!strstr(out, "--kv-channels")); /* 32 x 128 = 4096: Megatron's default */
    CHECK_STR_HAS(out, "--rotary-base 500000");
    REQUIRE(SC("%s model gen llama --layers 4 --hidden 1024 --heads 16 --kv_heads 4 --ffn 4096 "
               "--seq 1024 --vocab 32000 --relu2 -o %s/r.json >/dev/null",
               sc_test_bin(), d) == 0);
    char model[600];
    snprintf(model, sizeof model, "%s/r.json", d);
    REQUIRE(make_plan("r.json.plan", model, "--nodes 1 --dp 4 --tp 2 --microbatches 2") == 0);
    REQUIRE(SC("%s export %s/r.json.plan --to megatron", sc_test_bin(), d) == 0);
    CHECK_ARG(out, "--squared-relu");
    CHECK_ARG(out, "--num-query-groups 4");
    CHECK(!strstr(out, "--swiglu"));
    /* the same Llama timed op by op (--eager: rotary_* kernels, q, k, v and
     * gate, up apart) is still Llama to export */
    REQUIRE(SC("%s model gen llama --layers 4 --hidden 1024 --heads 16 --kv_heads 4 --ffn 4096 "
               "--seq 1024 --vocab 32000 --eager -o %s/e.json >/dev/null",
               sc_test_bin(), d) == 0);
    snprintf(model, sizeof model, "%s/e.json", d);
    REQUIRE(make_plan("e.json.plan", model, "--nodes 1 --dp 4 --tp 2 --microbatches 2") == 0);
    REQUIRE(SC("%s export %s/e.json.plan --to megatron", sc_test_bin(), d) == 0);
    static const char *const eager_want[] = {"--swiglu", "--normalization RMSNorm",
                                             "--position-embedding-type rope",
                                             "--num-query-groups 4", "--disable-bias-linear"};
    for (size_t i = 0; i < SC_ARRAY_LEN(eager_want); i++)
        CHECK_ARG(out, eager_want[i]);
    /* GPT: none of them */
    REQUIRE(make_plan("g2.json", "gpt-1.3b", "--nodes 1 --dp 4 --tp 2 --microbatches 2") == 0);
    REQUIRE(SC("%s export %s/g2.json --to megatron", sc_test_bin(), d) == 0);
    static const char *const gpt_none[] = {"--group-query-attention", "--swiglu",
                                           "--squared-relu", "--normalization",
                                           "--disable-bias-linear", "--position-embedding-type",
                                           "--attention-dropout", "--hidden-dropout"};
    for (size_t i = 0; i < SC_ARRAY_LEN(gpt_none); i++)
        if (strstr(out, gpt_none[i]))
            sc_test_fail(__FILE__, __LINE__, "gpt-1.3b exported with %s", gpt_none[i]);
    /* torch: the reference GPT is not Llama */
    REQUIRE(make_plan("t.json", "llama3-8b",
                      "--nodes 1 --dp 8 --zero 3 --microbatches 2 --recompute full") == 0);
    REQUIRE(SC("%s export %s/t.json --to torch", sc_test_bin(), d) == 0);
    CHECK_STR_HAS(out, "Llama-style");
    CHECK_STR_HAS(out, "STAGE_UNITS = None\nGPT = None");
}

/* Partitions, schedules, recompute, placement, ZeRO 3. */
TEST(export_megatron_variants)
{
    const char *d = sc_test_tmpdir();
    /* uneven first and last stage, equal middle ones: 5 | 6 | 6 | 7 layers */
    REQUIRE(make_plan("fl.json", "gpt-1.3b", "--pp 4 --microbatches 8 --partition 21,45,69") == 0);
    REQUIRE(SC("%s export %s/fl.json --to megatron", sc_test_bin(), d) == 0);
    CHECK_ARG(out, "--decoder-first-pipeline-num-layers 5");
    CHECK_ARG(out, "--decoder-last-pipeline-num-layers 7");
    CHECK(!strstr(out, "--pipeline-model-parallel-layout"));
    /* unequal middle stages: the layout, stage by stage */
    REQUIRE(make_plan("ly.json", "gpt-1.3b", "--pp 4 --microbatches 8 --partition 25,41,73") == 0);
    REQUIRE(SC("%s export %s/ly.json --to megatron", sc_test_bin(), d) == 0);
    CHECK_ARG(out, "--pipeline-model-parallel-layout \"Et*6|t*4|t*8|t*6L\"");
    /* the embedding alone on stage 0 */
    REQUIRE(make_plan("e0.json", "gpt-1.3b", "--pp 2 --microbatches 4 --partition 1") == 0);
    REQUIRE(SC("%s export %s/e0.json --to megatron", sc_test_bin(), d) == 0);
    CHECK_ARG(out, "--pipeline-model-parallel-layout \"E|t*24L\"");
    /* interleaved: layers per virtual stage */
    REQUIRE(make_plan("il.json", "gpt-1.3b",
                      "--pp 4 --v 2 --schedule interleaved --microbatches 8 --recompute full") ==
            0);
    REQUIRE(SC("%s export %s/il.json --to megatron", sc_test_bin(), d) == 0);
    CHECK_ARG(out, "--num-layers-per-virtual-pipeline-stage 3");
    CHECK_ARG(out, "--recompute-granularity full");
    CHECK_ARG(out, "--recompute-method uniform");
    CHECK_ARG(out, "--recompute-num-layers 1");
    /* placement tp,dp,pp is Megatron's default order; zb-h1 runs as 1F1B */
    REQUIRE(make_plan("zb.json", "gpt-1.3b",
                      "--nodes 1 --dp 2 --pp 4 --schedule zb-h1 --microbatches 8 "
                      "--placement tp,dp,pp") == 0);
    REQUIRE(SC("%s export %s/zb.json --to megatron", sc_test_bin(), d) == 0);
    CHECK(!strstr(out, "--use-tp-pp-dp-mapping"));
    CHECK_STR_HAS(out, "no zero-bubble schedule");
    /* ZeRO 3 without pipeline parallelism: Megatron-FSDP */
    REQUIRE(make_plan("z3.json", "gpt-1.3b", "--nodes 1 --dp 8 --zero 3 --microbatches 2") == 0);
    REQUIRE(SC("%s export %s/z3.json --to megatron", sc_test_bin(), d) == 0);
    CHECK_ARG(out, "--use-megatron-fsdp");
    CHECK_ARG(out, "--ckpt-format fsdp_dtensor"); /* validate_args asks for it */
    CHECK(!strstr(out, "CUDA_DEVICE_MAX_CONNECTIONS=")); /* FSDP wants it unset */
    CHECK_ARG(out, "--data-parallel-sharding-strategy optim_grads_params");
    CHECK_ARG(out, "--overlap-grad-reduce"); /* what Megatron-FSDP runs */
    CHECK_ARG(out, "--pipeline-model-parallel-size 1");
    /* ZeRO 2 without a pipeline: Megatron-FSDP's optim_grads (sharded
     * gradients reduce-scattered every microbatch, as the plan lowers them),
     * in fp32 where the plan reduces in fp32; with tp, no single connection */
    REQUIRE(make_plan("z2.json", "gpt-1.3b",
                      "--nodes 1 --dp 4 --tp 2 --zero 2 --microbatches 2 "
                      "--grad-reduce-in-fp32 1 --overlap-param-gather 1") == 0);
    REQUIRE(SC("%s export %s/z2.json --to megatron", sc_test_bin(), d) == 0);
    CHECK_ARG(out, "--use-megatron-fsdp");
    CHECK_ARG(out, "--data-parallel-sharding-strategy optim_grads");
    CHECK(!strstr(out, "optim_grads_params"));
    CHECK_ARG(out, "--ckpt-format fsdp_dtensor");
    CHECK_ARG(out, "--megatron-fsdp-main-grads-dtype fp32");
    CHECK_ARG(out, "--overlap-param-gather");
    CHECK(!strstr(out, "--use-distributed-optimizer"));
    CHECK(!strstr(out, "--grad-reduce-in-bf16"));
    CHECK(!strstr(out, "CUDA_DEVICE_MAX_CONNECTIONS="));
    CHECK_STR_HAS(out, "ZeRO-2 runs as Megatron-FSDP");
}

/* One line on stderr naming the plan and the feature, exit 2, nothing
 * written (DIR is not created). */
static void check_refusal(const char *plan, const char *target, const char *needle, int line)
{
    const char *d = sc_test_tmpdir();
    int rc = SC("%s export %s/%s --to %s -o %s/never 2>&1", sc_test_bin(), d, plan, target, d);
    char want[600];
    snprintf(want, sizeof want, "stagecraft: %s/%s: ", d, plan);
    if (rc != 2 || !strstr(out, want) || !strstr(out, needle) ||
        strchr(out, '\n') != out + strlen(out) - 1)
        sc_test_fail(__FILE__, line, "export %s --to %s: rc %d, '%s' (wanted '%s')", plan, target,
                     rc, out, needle);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/never", d);
    if (sc_test_exists(dir))
        sc_test_fail(__FILE__, line, "export %s --to %s refused but created %s", plan, target,
                     dir);
}

TEST(export_refusals)
{
    REQUIRE(make_plan("cut.json", "gpt-1.3b", "--pp 4 --microbatches 8 --partition 2,45,73") == 0);
    check_refusal("cut.json", "megatron",
                  "Megatron-LM cannot run this plan: stage 2 begins at blocks.0.attn, inside the "
                  "layer blocks.0",
                  __LINE__);
    check_refusal("cut.json", "deepspeed", "stage 2 begins at blocks.0.attn", __LINE__);
    REQUIRE(make_plan("il.json", "gpt-1.3b", "--pp 4 --v 2 --schedule interleaved "
                                             "--microbatches 8") == 0);
    check_refusal("il.json", "deepspeed",
                  "DeepSpeed cannot run this plan: the interleaved schedule (v=2 chunks per rank)",
                  __LINE__);
    REQUIRE(make_plan("z2.json", "gpt-1.3b",
                      "--nodes 1 --dp 2 --pp 4 --zero 2 --microbatches 8") == 0);
    check_refusal("z2.json", "deepspeed", "ZeRO-2 with pipeline parallelism (pp=4)", __LINE__);
    check_refusal("z2.json", "torch", "does not write ZeRO-2", __LINE__);
    /* Megatron's distributed optimizer keeps the whole gradient buffer (ZeRO 1),
     * and Megatron-FSDP takes no pipeline */
    check_refusal("z2.json", "megatron", "ZeRO-2 with pipeline parallelism (pp=4)", __LINE__);
    REQUIRE(make_plan("z3.json", "gpt-1.3b",
                      "--nodes 1 --dp 2 --pp 4 --zero 3 --microbatches 8") == 0);
    check_refusal("z3.json", "megatron", "ZeRO-3 with pipeline parallelism (pp=4)", __LINE__);
    REQUIRE(make_plan("pl.json", "gpt-1.3b",
                      "--nodes 1 --dp 2 --tp 2 --pp 2 --microbatches 4 --placement pp,tp,dp") ==
            0);
    check_refusal("pl.json", "megatron", "placement pp,tp,dp", __LINE__);
    check_refusal("pl.json", "torch", "does not write tensor parallelism (tp=2)", __LINE__);
    REQUIRE(make_plan("t5.json", "t5-3b", "--pp 4 --microbatches 8") == 0);
    check_refusal("t5.json", "megatron",
                  "Megatron-LM cannot run this plan: t5-3b is an encoder-decoder", __LINE__);
    REQUIRE(make_plan("vit.json", "vit-huge", "--pp 2 --microbatches 4") == 0);
    check_refusal("vit.json", "megatron", "no token embedding with a vocabulary", __LINE__);
}

/* DeepSpeed on gpt-1.3b: the config field by field, the PipelineModule
 * arguments, a Python file that compiles. */
TEST(export_deepspeed_gpt)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_plan("g.json", "gpt-1.3b",
                      "--nodes 4 --dp 4 --tp 2 --pp 4 --microbatches 8 --mbs 2 --schedule gpipe "
                      "--zero 1 --recompute full") == 0);
    REQUIRE(SC("%s export %s/g.json --to deepspeed -o %s/ds 2>&1", sc_test_bin(), d, d) == 0);
    CHECK_STR_HAS(out, "deepspeed_pipeline.py ds_config.json");
    char *cfg = read_in(d, "ds/ds_config.json"), *py = read_in(d, "ds/deepspeed_pipeline.py");
    REQUIRE(cfg && py);
    cJSON *c = cJSON_Parse(cfg);
    REQUIRE(c);
    CHECK(cJSON_GetNumberValue(jget(c, "train_batch_size")) == 64);
    CHECK(cJSON_GetNumberValue(jget(c, "train_micro_batch_size_per_gpu")) == 2);
    CHECK(cJSON_GetNumberValue(jget(c, "gradient_accumulation_steps")) == 8);
    CHECK(cJSON_IsTrue(jget(jget(c, "bf16"), "enabled")));
    CHECK(!jget(c, "fp16"));
    const cJSON *z = jget(c, "zero_optimization");
    CHECK(cJSON_GetNumberValue(jget(z, "stage")) == 1);
    CHECK(cJSON_GetNumberValue(jget(z, "reduce_bucket_size")) == 13107200);
    CHECK(jget(c, "activation_checkpointing") != NULL);
    /* an optimizer, without which DeepSpeed's engine refuses backward */
    CHECK(!strcmp(cJSON_GetStringValue(jget(jget(c, "optimizer"), "type")), "AdamW"));
    cJSON_Delete(c);
    CHECK_STR_HAS(py, "def planned_pipeline_module(");
    CHECK_STR_HAS(py, "deepspeed.checkpointing.non_reentrant_checkpoint");
    CHECK(!strstr(py, "def planned_module("));
    CHECK_STR_HAS(py, "NUM_STAGES = 4\n");
    CHECK_STR_HAS(py, "PARTS = [0, 7, 13, 19, 27]\n");
    CHECK_STR_HAS(py, "TOPOLOGY_AXES = [\"data\", \"pipe\", \"model\"]\n");
    CHECK_STR_HAS(py, "TOPOLOGY_DIMS = [4, 4, 2]\n");
    CHECK_STR_HAS(py, "\"wte\": [\"embed\", \"head\"],\n");
    CHECK_STR_HAS(py, "ACTIVATION_CHECKPOINT_INTERVAL = 1\n");
    CHECK_STR_HAS(py, "    \"blocks.23\",\n    \"ln_f\",\n    \"head\",\n]");
    CHECK_STR_HAS(py, "38327e07f6cd39b63418f60cedd1651b0be3e7c3");
    CHECK(SC("/usr/bin/python3 -m py_compile %s/ds/deepspeed_pipeline.py 2>&1", d) == 0);
    /* the Python file's config is the JSON file's */
    CHECK(SC("cd %s/ds && /usr/bin/python3 -c 'import json, deepspeed_pipeline as m; "
             "assert m.DS_CONFIG == json.load(open(\"ds_config.json\")); "
             "assert m.PARTS[-1] == len(m.LAYERS)' 2>&1",
             d) == 0);
    /* --json carries the same */
    REQUIRE(SC("%s export %s/g.json --to deepspeed --json", sc_test_bin(), d) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    const cJSON *pm = jget(jget(j, "settings"), "pipeline_module");
    CHECK(cJSON_GetNumberValue(jget(pm, "num_stages")) == 4);
    CHECK_EQ_INT(cJSON_GetArraySize(jget(pm, "parts")), 5);
    CHECK_EQ_INT(cJSON_GetArraySize(jget(pm, "layers")), 27);
    CHECK(cJSON_GetNumberValue(
              jget(jget(jget(j, "settings"), "ds_config"), "train_batch_size")) == 64);
    /* the schedule DeepSpeed runs instead of the plan's GPipe */
    char *diffs = cJSON_PrintUnformatted(jget(j, "differences"));
    CHECK_STR_HAS(diffs, "1F1B-style TrainSchedule, not GPipe");
    CHECK_STR_HAS(diffs, "reduced after the last microbatch's backward");
    cJSON_free(diffs);
    cJSON_Delete(j);
    sc_free(cfg);
    sc_free(py);

    /* without a pipeline: a plain module for DeepSpeed's engine (its pipeline
     * engine refuses ZeRO 2 and 3), and the step's loop */
    REQUIRE(make_plan("g3.json", "gpt-1.3b", "--nodes 1 --dp 8 --microbatches 4 --zero 3") == 0);
    REQUIRE(SC("%s export %s/g3.json --to deepspeed -o %s/ds3 2>&1", sc_test_bin(), d, d) == 0);
    py = read_in(d, "ds3/deepspeed_pipeline.py");
    REQUIRE(py);
    CHECK_STR_HAS(py, "def planned_module(layers, loss_fn):");
    CHECK_STR_HAS(py, "def train_batch(engine, data_iter):");
    CHECK_STR_HAS(py, "#   loss = train_batch(engine, data_iter)  # one step: 4 microbatches");
    CHECK_STR_HAS(py, "deepspeed.zero.register_external_parameter(self, p)");
    CHECK(!strstr(py, "def planned_pipeline_module("));
    CHECK(SC("/usr/bin/python3 -m py_compile %s/ds3/deepspeed_pipeline.py 2>&1", d) == 0);
    sc_free(py);
}

/* The DeepSpeed files train, where DeepSpeed is installed: SC_TORCH_PYTHON
 * names its python (default /usr/bin/python3; Debian packages no
 * DeepSpeed). tests/export/ds_train.py builds the 4-layer GPT's layers as the
 * header says and trains two steps over gloo on two ranks: a pipeline of 2
 * stages with full recompute (the plan's stage bounds, DeepSpeed's
 * non-reentrant checkpoint under the embedding), and ZeRO 3 at dp 2 (the
 * plain engine, the tied head's weight registered as external). */
TEST(export_deepspeed_runs)
{
    const char *py = torch_python();
    if (SC("%s -c 'import deepspeed' 2>&1", py) != 0) {
        sc_test_unavailable("%s cannot import deepspeed (Debian does not package it; "
                            "SC_TORCH_PYTHON names another python): the files were only compiled",
                            py);
        return;
    }
    const char *d = sc_test_tmpdir();
    char *fixture = realpath("tests/export/ds_train.py", NULL);
    REQUIRE(fixture);
    static const char *const cases[] = {
        "--pp 2 --microbatches 4 --recompute full",
        "--dp 2 --microbatches 2 --zero 3",
    };
    for (size_t i = 0; i < SC_ARRAY_LEN(cases); i++) {
        char name[16];
        snprintf(name, sizeof name, "d%zu", i);
        REQUIRE(tiny_export("deepspeed", cases[i], name) == 0);
        REQUIRE(SC("cp %s %s/%s/", fixture, d, name) == 0);
        int rc = two_ranks(py, name, "ds_train.py");
        double loss = NAN; /* printed when the run failed before reporting one */
        if (rc != 0 || !trained(&loss) || (i == 0 && !strstr(out, "rank 1: parts [0, 3, 7]")))
            sc_test_fail(__FILE__, __LINE__, "%s: exit %d, loss %g: %.2000s", cases[i], rc, loss,
                         out);
    }
    free(fixture);
}

/* torch on gpt-1.3b: the schedule class per schedule, split points, the
 * reference model's stages; valid Python. */
TEST(export_torch_gpt)
{
    const char *d = sc_test_tmpdir();
    static const struct {
        const char *args, *cls;
    } cases[] = {
        {"--dp 2 --pp 4 --microbatches 8 --schedule 1f1b --zero 1", "Schedule1F1B"},
        {"--pp 4 --microbatches 8 --schedule gpipe", "ScheduleGPipe"},
        {"--pp 4 --v 2 --microbatches 8 --schedule interleaved", "ScheduleInterleaved1F1B"},
        {"--pp 4 --microbatches 8 --schedule zb-h1", "ScheduleInterleavedZeroBubble"},
        {"--dp 8 --zero 3 --microbatches 8", NULL},
        {"--dp 8 --zero 2 --microbatches 8", NULL},
    };
    for (size_t i = 0; i < SC_ARRAY_LEN(cases); i++) {
        char args[256];
        snprintf(args, sizeof args, "--nodes 1 %s", cases[i].args);
        REQUIRE(make_plan("g.json", "gpt-1.3b", args) == 0);
        REQUIRE(SC("%s export %s/g.json --to torch -o %s/t%zu", sc_test_bin(), d, d, i) == 0);
        char name[64], want[128];
        snprintf(name, sizeof name, "t%zu/torch_pipeline.py", i);
        char *py = read_in(d, name);
        REQUIRE(py);
        if (cases[i].cls)
            snprintf(want, sizeof want, "SCHEDULE = \"%s\"\n", cases[i].cls);
        else
            snprintf(want, sizeof want, "SCHEDULE = None  #");
        CHECK_STR_HAS(py, want);
        /* FSDP2 units: every layer under ZeRO 2-3, none otherwise */
        if (i < 4) {
            CHECK_STR_HAS(py, "FSDP_UNITS = []\n");
        } else {
            CHECK_STR_HAS(py, "FSDP_UNITS = [\"blocks.0\", \"blocks.1\", ");
            CHECK_STR_HAS(py, "\"blocks.22\", \"blocks.23\"]\n");
            CHECK_STR_HAS(py, i == 4 ? "ZERO = 3\n" : "ZERO = 2\n");
            CHECK_STR_HAS(py, "fully_shard(module.get_submodule(name), **kw)");
            CHECK_STR_HAS(py, i == 4 ? "ZeRO-3 runs as FSDP2 (fully_shard, parameters resharded"
                                     : "ZeRO-2 runs as FSDP2 (fully_shard, parameters kept whole");
            CHECK(!strstr(py, "no fp32 master copy"));
            CHECK_STR_HAS(py, "set_reduce_scatter_max_input_buffers"); /* its one in flight */
        }
        CHECK_STR_HAS(py, "N_MICROBATCHES = 8\n");
        CHECK_STR_HAS(py, "torchrun --nnodes 1 --nproc-per-node");
        CHECK_STR_HAS(py, "00722e648b740f91d0e71494baa17891749fd291");
        if (i == 0) {
            CHECK_STR_HAS(py, "DP, TP, PP, V = 2, 1, 4, 1\n");
            CHECK_STR_HAS(py, "SPLIT_POINTS = [\"blocks.6\", \"blocks.12\", \"blocks.18\"]\n");
            CHECK_STR_HAS(py, "[\"blocks.18\", \"blocks.19\", \"blocks.20\", \"blocks.21\", "
                              "\"blocks.22\", \"blocks.23\", \"ln_f\", \"head\"],\n");
            CHECK_STR_HAS(py, "\"tied\": True");
            CHECK_STR_HAS(py, "ZERO = 1\n");
            CHECK_STR_HAS(py, "ZeroRedundancyOptimizer");
        }
        if (i == 2)
            CHECK_STR_HAS(py, "DP, TP, PP, V = 1, 1, 4, 2\n");
        if (i == 3)
            CHECK_STR_HAS(py, "ScheduleInterleavedZeroBubble with one stage per rank");
        sc_free(py);
        if (SC("/usr/bin/python3 -m py_compile %s/%s 2>&1", d, name) != 0)
            sc_test_fail(__FILE__, __LINE__, "%s does not compile: %s", name, out);
    }
}

/* The model the tracer makes of tests/tracer/fixtures.py:concat_towers,
 * written to the test's tmpdir as own.json: LLaVA's pattern, an image
 * tower and a text embedding whose outputs the model's own code joins
 * (top#self) before a layer. Its path, or NULL. */
static const char *own_code_model(void)
{
    static char path[600];
    snprintf(path, sizeof path, "%s/own.json", sc_test_tmpdir());
    FILE *f = fopen(path, "w");
    if (!f)
        return NULL;
    fputs("{\"format\": \"stagecraft.model/1\", \"name\": \"top\", \"dtype\": \"bf16\", "
          "\"seq_len\": 16, \"root\": {\"name\": \"top\", \"kind\": \"top\", \"params\": 0, "
          "\"flops_fwd\": 0, \"act_out_bytes\": 4096, \"act_saved_bytes\": 0, \"children\": ["
          "{\"name\": \"vision\", \"kind\": \"linear\", \"params\": 4096, \"flops_fwd\": 131072, "
          "\"act_out_bytes\": 2048, \"act_saved_bytes\": 2048},"
          "{\"name\": \"embed\", \"kind\": \"embedding\", \"params\": 4096, \"flops_fwd\": 0, "
          "\"act_out_bytes\": 2048, \"act_saved_bytes\": 64},"
          "{\"name\": \"top#self\", \"kind\": \"self\", \"params\": 0, \"flops_fwd\": 0, "
          "\"act_out_bytes\": 4096, \"act_saved_bytes\": 0, \"inputs\": [\"vision\"]},"
          "{\"name\": \"layer\", \"kind\": \"linear\", \"params\": 4096, \"flops_fwd\": 262144, "
          "\"act_out_bytes\": 4096, \"act_saved_bytes\": 4096}]}}\n",
          f);
    return fclose(f) == 0 ? path : NULL;
}

/* A stage that begins at a module's own code (a traced #self leaf) cannot
 * begin there in pipeline(), which splits at modules: the split moves to
 * the next module, and the file says so; a stage of nothing but such code
 * is refused. It wrote "top#self" as a split point, a name no module has. */
TEST(export_torch_split_at_own_code)
{
    const char *d = sc_test_tmpdir(), *path = own_code_model();
    REQUIRE(path);
    REQUIRE(make_plan("own2.json", path, "--nodes 1 --pp 2 --microbatches 4 --partition 2") == 0);
    REQUIRE(SC("%s export %s/own2.json --to torch -o %s/own2", sc_test_bin(), d, d) == 0);
    char *py = read_in(d, "own2/torch_pipeline.py");
    REQUIRE(py);
    CHECK_STR_HAS(py, "SPLIT_POINTS = [\"layer\"]\n");
    CHECK_STR_HAS(py, "stage 1 begins at top#self, a module's own code, where pipeline()");
    sc_free(py);
    REQUIRE(make_plan("own3.json", path, "--nodes 1 --pp 3 --microbatches 4 --partition 2,3") ==
            0);
    CHECK(SC("%s export %s/own3.json --to torch -o %s/own3", sc_test_bin(), d, d) == 2);
    CHECK_STR_HAS(out, "stage 1 holds only a module's own code (from top#self), which "
                       "pipeline() cannot split off");
    CHECK(SC("test -e %s/own3", d) != 0); /* nothing written */
}

/* Where torch >= 2.6 is (SC_TORCH_PYTHON), that file trains the fixture on
 * two CPU ranks, its floating inputs cast to the plan's bf16 with the model
 * (the old split point stopped it: "'ConcatTowers' object has no attribute
 * 'top#self'"; uncast inputs: "mat1 and mat2 must have the same dtype"). */
TEST(export_torch_split_at_own_code_runs)
{
    const char *py = torch_2_6("the file was not run");
    if (!py)
        return;
    char fx[PATH_MAX];
    const char *d = sc_test_tmpdir(), *path = own_code_model();
    REQUIRE(path && realpath("tests/tracer/fixtures.py", fx));
    REQUIRE(make_plan("ownr.json", path, "--nodes 1 --pp 2 --microbatches 4 --partition 2") == 0);
    REQUIRE(SC("%s export %s/ownr.json --to torch -o %s/ownr >/dev/null", sc_test_bin(), d, d) ==
            0);
    char script[PATH_MAX + 64];
    snprintf(script, sizeof script, "torch_pipeline.py --steps 2 --factory %s:concat_towers", fx);
    int rc = two_ranks(py, "ownr", script);
    if (rc != 0 || !strstr(out, "step 1: loss "))
        sc_test_fail(__FILE__, __LINE__, "exit %d: %.2000s", rc, out);
}

/* t5-3b: Megatron refuses (export_refusals); DeepSpeed cuts its 53 layers
 * with the shared embedding tied three ways; torch needs --factory. */
TEST(export_t5)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_plan("t5.json", "t5-3b", "--nodes 1 --dp 2 --pp 4 --microbatches 8 --mbs 2") ==
            0);
    REQUIRE(SC("%s export %s/t5.json --to deepspeed -o %s/ds 2>&1", sc_test_bin(), d, d) == 0);
    char *cfg = read_in(d, "ds/ds_config.json"), *py = read_in(d, "ds/deepspeed_pipeline.py");
    REQUIRE(cfg && py);
    cJSON *c = cJSON_Parse(cfg);
    REQUIRE(c);
    CHECK(cJSON_GetNumberValue(jget(c, "train_batch_size")) == 32);
    CHECK(cJSON_GetNumberValue(jget(c, "gradient_accumulation_steps")) == 8);
    CHECK(cJSON_GetNumberValue(jget(jget(c, "zero_optimization"), "stage")) == 0);
    cJSON_Delete(c);
    CHECK_STR_HAS(py, "PARTS = [0, 13, 27, 39, 53]\n");
    CHECK_STR_HAS(py, "\"embed\": [\"encoder.embed\", \"decoder.embed\", \"head\"],\n");
    CHECK_STR_HAS(py, "decoder.blocks.0.xattn consumes encoder.ln_f's output");
    CHECK(SC("/usr/bin/python3 -m py_compile %s/ds/deepspeed_pipeline.py 2>&1", d) == 0);
    sc_free(cfg);
    sc_free(py);

    REQUIRE(SC("%s export %s/t5.json --to torch", sc_test_bin(), d) == 0);
    CHECK_STR_HAS(out, "SPLIT_POINTS = [\"encoder.blocks.12\", \"decoder.blocks.0\", "
                       "\"decoder.blocks.12\"]\n");
    CHECK_STR_HAS(out, "STAGE_UNITS = None\nGPT = None\n");
    CHECK_STR_HAS(out, "--factory FILE.py:FUNC");
    /* the factory path's loss is a stand-in: said, with what the plan priced */
    CHECK_STR_HAS(out, "with --factory, the loss is a stand-in, the mean of the last");
    CHECK_STR_HAS(out, "plan priced a\n#    cross-entropy over head's logits");
    REQUIRE(SC("%s export %s/t5.json --to torch -o %s/t", sc_test_bin(), d, d) == 0);
    CHECK(SC("/usr/bin/python3 -m py_compile %s/t/torch_pipeline.py 2>&1", d) == 0);
    REQUIRE(SC("%s export %s/t5.json --to torch --json", sc_test_bin(), d) == 0);
    cJSON *j = cJSON_Parse(out);
    REQUIRE(j);
    CHECK(cJSON_IsFalse(jget(jget(j, "settings"), "reference_model")));
    CHECK(!strcmp(cJSON_GetStringValue(jget(jget(j, "settings"), "schedule_class")),
                  "Schedule1F1B"));
    cJSON_Delete(j);
}

/* The torch file runs, where a torch new enough to run it on CPU is
 * installed: SC_TORCH_PYTHON names its python (default /usr/bin/python3,
 * whose Debian torch 1.13 has neither torch.distributed.pipelining nor
 * FSDP2). On a 4-layer GPT over gloo, two ranks, two steps each: an
 * interleaved pipeline (pp 2, v 2), ZeRO 3 as FSDP2 with full recompute
 * (dp 2), the unfused attention under selective recompute (dp 2), and a
 * pipeline with flash attention (pp 2); each prints its losses, near
 * ln(vocab) = 4.85 for random tokens. */
TEST(export_torch_runs)
{
    const char *py = torch_2_6("the torch file was only compiled");
    if (!py)
        return;
    const char *d = sc_test_tmpdir();
    static const char *const cases[] = {
        "--pp 2 --v 2 --schedule interleaved --microbatches 4",
        "--dp 2 --zero 3 --recompute full --microbatches 2",
        /* the unfused attention checkpointed, then the fused kernel */
        "--dp 2 --recompute selective --microbatches 2",
        "--pp 2 --microbatches 2 --attn flash",
    };
    for (size_t i = 0; i < SC_ARRAY_LEN(cases); i++) {
        char name[16];
        snprintf(name, sizeof name, "r%zu", i);
        REQUIRE(tiny_export("torch", cases[i], name) == 0);
        if (i == 0)
            CHECK(SC("cd %s/r0 && %s -c 'import torch_pipeline as m; "
                     "import torch.distributed.pipelining as p; assert hasattr(p, m.SCHEDULE)' 2>&1",
                     d, py) == 0);
        int rc = two_ranks(py, name, "torch_pipeline.py --steps 2");
        double loss = NAN; /* printed when the run failed before reporting one */
        if (rc != 0 || !trained(&loss))
            sc_test_fail(__FILE__, __LINE__, "%s: exit %d, loss %g: %.2000s", cases[i], rc, loss,
                         out);
    }
}

/* Each export runs attention as the plan priced it, where the model's
 * kernels price it: Megatron-LM with --attention-backend unfused for an
 * unfused plan and its default (Transformer Engine's fused kernels) for a
 * flash one, the torch file by its ATTENTION constant, DeepSpeed (whose
 * layers are the user's) in a note; the headers name it. A model without
 * kernels is priced the same either way: nothing is written. */
TEST(export_attention_as_planned)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    REQUIRE(make_plan("u.json", "gpt-1.3b", "--nodes 1 --pp 2 --microbatches 4") == 0);
    REQUIRE(make_plan("f.json", "gpt-1.3b", "--nodes 1 --pp 2 --microbatches 4 --attn flash") == 0);
    REQUIRE(SC("%s export %s/u.json --to megatron | tr -s '\\n#' ' '", bin, d) == 0);
    CHECK_STR_HAS(out, "placement tp,pp,dp, bf16, attention unfused ");
    CHECK_STR_HAS(out, "runs Transformer Engine's unfused attention as planned");
    REQUIRE(SC("%s export %s/u.json --to megatron", bin, d) == 0);
    CHECK_ARG(out, "--attention-backend unfused");
    REQUIRE(SC("%s export %s/f.json --to megatron | tr -s '\\n#' ' '", bin, d) == 0);
    CHECK(!strstr(out, "--attention-backend"));
    CHECK_STR_HAS(out, "placement tp,pp,dp, bf16, attention flash ");

    REQUIRE(SC("%s export %s/u.json --to torch | tr -s '\\n#' ' '", bin, d) == 0);
    CHECK_STR_HAS(out, " ATTENTION = \"unfused\" DTYPE");
    CHECK_STR_HAS(out, "the file's GPT has no dropout"); /* gpt-1.3b's kernels have some */
    CHECK_STR_HAS(out, "attention runs unfused, as the plan priced it");
    REQUIRE(SC("%s export %s/f.json --to torch | tr -s '\\n#' ' '", bin, d) == 0);
    CHECK_STR_HAS(out, " ATTENTION = \"flash\" DTYPE");
    CHECK(!strstr(out, "attention runs unfused"));
    /* selective recompute with the fused kernel: the plan re-runs its forward */
    REQUIRE(make_plan("fs.json", "gpt-1.3b",
                      "--nodes 1 --pp 2 --microbatches 4 --attn flash --recompute selective") == 0);
    REQUIRE(SC("%s export %s/fs.json --to torch | tr -s '\\n#' ' '", bin, d) == 0);
    CHECK_STR_HAS(out, "re-runs the fused kernel's forward in the backward");

    REQUIRE(SC("%s export %s/u.json --to deepspeed | tr -s '\\n#' ' '", bin, d) == 0);
    CHECK_STR_HAS(out, "the plan priced their attention unfused");
    REQUIRE(SC("%s export %s/f.json --to deepspeed | tr -s '\\n#' ' '", bin, d) == 0);
    CHECK_STR_HAS(out, "the plan priced their attention flash");

    /* a model without kernel lists: its leaves' totals, whatever --attn says */
    REQUIRE(sc_test_model_without_kernels("gpt-1.3b", "nk.json"));
    REQUIRE(SC("cd %s && ! grep -q kernels nk.json && %s sim --model nk.json --cluster "
               "dgx-a100-80g --nodes 1 --pp 2 --microbatches 4 -o nk_plan.json >/dev/null", d,
               bin) == 0);
    REQUIRE(SC("%s export %s/nk_plan.json --to megatron | tr -s '\\n#' ' '", bin, d) == 0);
    CHECK(!strstr(out, "--attention-backend"));
    CHECK_STR_HAS(out, "placement tp,pp,dp, bf16 ");
    CHECK(!strstr(out, ", attention "));
}

/* Learned positions: the table's rows, when more than the sequence (a model
 * traced at a shorter sequence than it was built for), become
 * --max-position-embeddings, so Megatron-LM builds the plan's parameters. */
TEST(export_megatron_position_rows)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    /* sc_test_small_gpt: vocabulary 256, sequence 32, h 64; its embedding
     * holds the tokens' and the positions' rows */
    sc_model *m = sc_test_small_gpt("pe.json");
    REQUIRE(m);
    sc_module *e = sc_model_find(m, "embed");
    REQUIRE(e && e->params == (256 + 32) * 64);
    e->params = (256 + 64) * 64; /* 64 position rows for 32 tokens */
    char model[600];
    snprintf(model, sizeof model, "%s/pe2.json", d);
    sc_error err = {0};
    sc_status st = sc_model_save(m, model, &err);
    sc_model_free(m);
    REQUIRE(st == SC_OK);
    snprintf(model, sizeof model, "%s/pe.json", d);
    REQUIRE(make_plan("pe.plan", model, "--nodes 1 --dp 2 --microbatches 1") == 0);
    REQUIRE(SC("%s export %s/pe.plan --to megatron", bin, d) == 0);
    CHECK_ARG(out, "--max-position-embeddings 32");
    snprintf(model, sizeof model, "%s/pe2.json", d);
    REQUIRE(make_plan("pe2.plan", model, "--nodes 1 --dp 2 --microbatches 1") == 0);
    REQUIRE(SC("%s export %s/pe2.plan --to megatron", bin, d) == 0);
    CHECK_ARG(out, "--seq-length 32");
    CHECK_ARG(out, "--max-position-embeddings 64");
    CHECK(!strstr(out, "--position-embedding-type"));
}

/* Dropout as the model's kernels run it: a GPT without dropout (gpt
 * --no_dropout, as MPT trains) gets --attention-dropout 0 --hidden-dropout 0
 * from the Megatron-LM export (whose default is 0.1) and no note from the
 * torch one, whose GPT has none; with dropout, Megatron's default stands. */
TEST(export_dropout_as_planned)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    REQUIRE(SC("%s model gen gpt --layers 4 --hidden 256 --heads 4 --seq 128 --vocab 512 "
               "--no_dropout -o %s/nd.json >/dev/null && %s model gen gpt --layers 4 --hidden "
               "256 --heads 4 --seq 128 --vocab 512 -o %s/wd.json >/dev/null",
               bin, d, bin, d) == 0);
    char model[600];
    snprintf(model, sizeof model, "%s/nd.json", d);
    REQUIRE(make_plan("nd.plan", model, "--nodes 1 --pp 2 --microbatches 4") == 0);
    snprintf(model, sizeof model, "%s/wd.json", d);
    REQUIRE(make_plan("wd.plan", model, "--nodes 1 --pp 2 --microbatches 4") == 0);
    REQUIRE(SC("%s export %s/nd.plan --to megatron", bin, d) == 0);
    CHECK_ARG(out, "--attention-dropout 0");
    CHECK_ARG(out, "--hidden-dropout 0");
    REQUIRE(SC("%s export %s/wd.plan --to megatron", bin, d) == 0);
    CHECK(!strstr(out, "-dropout"));
    REQUIRE(SC("%s export %s/nd.plan --to torch | tr -s '\\n#' ' '", bin, d) == 0);
    CHECK(!strstr(out, "has no dropout"));
    REQUIRE(SC("%s export %s/wd.plan --to torch | tr -s '\\n#' ' '", bin, d) == 0);
    CHECK_STR_HAS(out, "the file's GPT has no dropout");
}

/* The loss as the model prices it (model gen --cross_entropy): Megatron's
 * fused loss for megatron-fused, the same with a note for apex's xentropy
 * (Megatron-LM has none), nothing for the default; the torch file, whose
 * loss is F.cross_entropy, notes the fused ones. */
TEST(export_cross_entropy_as_planned)
{
    const char *d = sc_test_tmpdir(), *bin = sc_test_bin();
    static const struct {
        const char *ce;
        int fused, note;
    } cases[] = {{"megatron", 0, 0}, {"megatron-fused", 1, 0}, {"xentropy", 1, 1}};
    for (size_t i = 0; i < SC_ARRAY_LEN(cases); i++) {
        char model[600], plan[64];
        snprintf(model, sizeof model, "%s/ce%zu.json", d, i);
        snprintf(plan, sizeof plan, "ce%zu.plan", i);
        REQUIRE(SC("%s model gen gpt --layers 4 --hidden 256 --heads 4 --seq 128 --vocab 512 "
                   "--cross_entropy %s -o %s >/dev/null", bin, cases[i].ce, model) == 0);
        REQUIRE(make_plan(plan, model, "--nodes 1 --pp 2 --microbatches 4") == 0);
        REQUIRE(SC("%s export %s/%s --to megatron | tr -s '\\n#' ' '", bin, d, plan) == 0);
        CHECK(!!strstr(out, " --cross-entropy-loss-fusion ") == cases[i].fused);
        CHECK(!!strstr(out, "apex's one-kernel cross-entropy") == cases[i].note);
        REQUIRE(SC("%s export %s/%s --to torch | tr -s '\\n#' ' '", bin, d, plan) == 0);
        CHECK(!!strstr(out, "the file's loss is PyTorch's F.cross_entropy") == cases[i].fused);
    }
}

/* The Megatron-LM scripts pass arguments Megatron-LM itself accepts, where
 * SC_MEGATRON names a checkout (the checked commit's) and SC_TORCH_PYTHON a
 * python that imports it: tests/export/torchrun stands in for torchrun and
 * runs Megatron's parse_args and validate_args (tests/export/megatron_args.py)
 * over what the script passes to pretrain_gpt.py, with the script's own
 * environment. Six plans: tp 2 x pp 2 x dp 4 with full recompute;
 * interleaved with sequence parallelism and the distributed optimizer;
 * Llama 3 8B under Megatron-FSDP with tp 4, with context parallelism 2, and
 * at ZeRO 2 (Megatron-FSDP's optim_grads) with tp 2. */
TEST(export_megatron_accepted)
{
    const char *mg = getenv("SC_MEGATRON"), *py = torch_python();
    char probe[1024];
    snprintf(probe, sizeof probe, "%s/megatron/training/arguments.py", mg ? mg : "");
    if (!mg || !*mg || access(probe, R_OK) != 0 ||
        SC("cd %s && %s -c 'import torch' 2>&1", mg, py) != 0) {
        sc_test_unavailable("SC_MEGATRON names no Megatron-LM checkout with a python that imports "
                            "torch (SC_TORCH_PYTHON): the scripts were only checked as text");
        return;
    }
    const char *d = sc_test_tmpdir();
    char *stand_in = realpath("tests/export", NULL);
    REQUIRE(stand_in);
    static const struct {
        const char *model, *cluster, *args, *want;
    } cases[] = {
        {"gpt-1.3b", "p4d.24xlarge", "--nodes 2 --dp 4 --tp 2 --pp 2 --microbatches 8 "
         "--recompute full", "megatron accepted: world 16 tp 2 pp 2 dp 4 vp None gbs 32 mbs 1"},
        {"gpt-13b", "dgx-a100-80g", "--nodes 4 --dp 2 --tp 4 --pp 4 --v 2 --schedule "
         "interleaved --microbatches 8 --sp --recompute selective --zero 1",
         "megatron accepted: world 32 tp 4 pp 4 dp 2 vp 2 gbs 16 mbs 1"},
        {"llama3-8b", "dgx-h100", "--nodes 2 --dp 4 --tp 4 --microbatches 4 --zero 3",
         "megatron accepted: world 16 tp 4 pp 1 dp 4 vp None gbs 16 mbs 1"},
        /* context parallelism: Megatron's dp is world / (tp·pp·cp), as the plan's */
        {"llama3-8b", "dgx-h100", "--nodes 2 --dp 4 --cp 2 --tp 2 --microbatches 4 --zero 1 "
         "--attn flash", "megatron accepted: world 16 tp 2 pp 1 dp 4 vp None gbs 16 mbs 1"},
        /* ZeRO 2 without a pipeline: Megatron-FSDP's optim_grads, reducing in fp32 */
        {"llama3-8b", "dgx-h100", "--nodes 2 --dp 8 --tp 2 --microbatches 4 --zero 2 --attn flash "
         "--grad-reduce-in-fp32 1 --overlap-param-gather 1",
         "megatron accepted: world 16 tp 2 pp 1 dp 8 vp None gbs 32 mbs 1"},
        /* a small Llama with Megatron's fused loss (below): --cross-entropy-loss-fusion */
        {NULL, "dgx-h100", "--nodes 1 --dp 4 --tp 2 --microbatches 2 --zero 1",
         "megatron accepted: world 8 tp 2 pp 1 dp 4 vp None gbs 8 mbs 1"},
    };
    char fused[600];
    snprintf(fused, sizeof fused, "%s/fused.json", d);
    REQUIRE(SC("%s model gen llama --layers 4 --hidden 1024 --heads 16 --kv_heads 4 --ffn 4096 "
               "--seq 1024 --vocab 32000 --cross_entropy megatron-fused -o %s >/dev/null",
               sc_test_bin(), fused) == 0);
    for (size_t i = 0; i < SC_ARRAY_LEN(cases); i++) {
        REQUIRE(SC("%s sim --model %s --cluster %s %s -o %s/m%zu.json >/dev/null && "
                   "%s export %s/m%zu.json --to megatron -o %s/m%zu >/dev/null", sc_test_bin(),
                   cases[i].model ? cases[i].model : fused, cases[i].cluster, cases[i].args, d, i,
                   sc_test_bin(), d, i, d, i) == 0);
        if (!cases[i].model)
            CHECK(SC("grep -q -- '--cross-entropy-loss-fusion' %s/m%zu/megatron_torchrun.sh", d,
                     i) == 0);
        int rc = SC("env -u CUDA_DEVICE_MAX_CONNECTIONS PATH=%s:$PATH MEGATRON=%s "
                    "SC_TORCH_PYTHON=%s timeout 120 bash %s/m%zu/megatron_torchrun.sh 2>&1 | "
                    "grep -E 'accepted|Error'", stand_in, mg, py, d, i);
        if (!strstr(out, cases[i].want))
            sc_test_fail(__FILE__, __LINE__, "%s %s: exit %d: %.2000s", cases[i].model,
                         cases[i].args, rc, out);
    }
    free(stand_in);
}

/* -o writes every file or none: a failed allocation at every point of the
 * write leaves the folder as it was; an existing file is replaced whole. */
TEST(export_outdir_all_or_none)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_plan("g.json", "gpt-1.3b", "--nodes 1 --pp 2 --microbatches 4") == 0);
    char plan[600], dir[600];
    snprintf(plan, sizeof plan, "%s/g.json", d);
    snprintf(dir, sizeof dir, "%s/out", d);
    sc_error err = {0};
    sc_plan *p = NULL;
    sc_model *m = NULL;
    sc_cluster c;
    REQUIRE(sc_plan_load(plan, &p, &err) == SC_OK);
    REQUIRE(sc_plan_open(p, plan, &m, &c, &err) == SC_OK);
    sc_export *e = NULL;
    REQUIRE(sc_export_make(p, m, plan, "megatron", &e, &err) == SC_OK);
    REQUIRE(e->n_files == 2);
    int ok = 0;
    for (long n = 1; n < 200 && !ok; n++) {
        sc_alloc_fail_at(n);
        sc_status st = sc_export_write(e, dir, &err);
        sc_alloc_fail_at(0);
        int k = files_in(dir);
        if (st == SC_OK) {
            ok = 1;
            CHECK_EQ_INT(k, 2);
        } else if (k > 0) {
            sc_test_fail(__FILE__, __LINE__, "allocation %ld failed (%s) and left %d entries", n,
                         err.msg, k);
            break;
        }
    }
    CHECK(ok);
    /* an old file of the same name is replaced, whole */
    char old[700];
    snprintf(old, sizeof old, "%s/megatron_sbatch.sh", dir);
    REQUIRE(sc_write_file_atomic(old, "old\n", 4, &err) == SC_OK);
    REQUIRE(sc_export_write(e, dir, &err) == SC_OK);
    char *t = read_in(dir, "megatron_sbatch.sh");
    REQUIRE(t);
    CHECK_STR_HAS(t, "#SBATCH --nodes=1");
    sc_free(t);
    CHECK_EQ_INT(files_in(dir), 2);
    /* a refused target writes nothing and leaves what is there */
    sc_export *e2 = NULL;
    REQUIRE(sc_export_make(p, m, plan, "nope", &e2, &err) == SC_EINVAL);
    CHECK(e2 == NULL);
    sc_export_free(e);
    sc_model_free(m);
    sc_plan_free(p);
}

/* Failed allocations anywhere in sc_export_make return SC_ENOMEM (or the
 * export) and leak nothing the sanitizer build would see. */
TEST(export_make_oom)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_plan("g.json", "gpt-1.3b", "--nodes 1 --dp 2 --pp 2 --microbatches 4") == 0);
    char plan[600];
    snprintf(plan, sizeof plan, "%s/g.json", d);
    sc_error err = {0};
    sc_plan *p = NULL;
    sc_model *m = NULL;
    sc_cluster c;
    REQUIRE(sc_plan_load(plan, &p, &err) == SC_OK);
    REQUIRE(sc_plan_open(p, plan, &m, &c, &err) == SC_OK);
    static const char *const targets[] = {"megatron", "deepspeed", "torch"};
    for (size_t t = 0; t < SC_ARRAY_LEN(targets); t++) {
        int done = 0;
        for (long n = 1; n < 5000 && !done; n++) {
            sc_export *e = NULL;
            sc_error e2 = {0};
            sc_alloc_fail_at(n);
            sc_status st = sc_export_make(p, m, plan, targets[t], &e, &e2);
            sc_alloc_fail_at(0);
            if (st == SC_OK) {
                done = 1;
                CHECK(e && e->n_files > 0);
            } else if (st != SC_ENOMEM || e) {
                sc_test_fail(__FILE__, __LINE__, "%s: allocation %ld: %s", targets[t], n,
                             e2.msg);
                break;
            }
            sc_export_free(e);
        }
        CHECK(done);
    }
    sc_model_free(m);
    sc_plan_free(p);
}

/* A plan with sequence parallelism exports --sequence-parallel; without it
 * the flag is absent and the header says so. */
TEST(export_megatron_sequence_parallel)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(make_plan("sp.json", "gpt-1.3b", "--tp 4 --pp 2 --microbatches 4 --sp") == 0);
    REQUIRE(SC("%s export %s/sp.json --to megatron", sc_test_bin(), d) == 0);
    CHECK_ARG(out, "--tensor-model-parallel-size 4");
    CHECK_ARG(out, "--sequence-parallel");
    REQUIRE(make_plan("nosp.json", "gpt-1.3b", "--tp 4 --pp 2 --microbatches 4") == 0);
    REQUIRE(SC("%s export %s/nosp.json --to megatron", sc_test_bin(), d) == 0);
    CHECK(!strstr(out, "\n    --sequence-parallel\n"));
    CHECK_STR_HAS(out, "--sequence-parallel is off, as in the plan");
}

/* A small GPT whose own code past its embedding reads the embedding's output
 * (inputs: ["embed"]), as a traced nanoGPT's token + position add does:
 * inserted after root child `after`, with a position table when after is
 * "embed". Returns the model's path, or NULL. */
static const char *gpt_with_sum(const char *name, const char *after)
{
    static char path[600];
    const char *d = sc_test_tmpdir();
    if (SC("%s model gen gpt --layers 2 --hidden 64 --heads 2 --seq 32 --vocab 256 --dtype fp32 "
           "-o %s/%s.gen.json",
           sc_test_bin(), d, name) != 0)
        return NULL;
    snprintf(path, sizeof path, "%s/%s.gen.json", d, name);
    cJSON *j = NULL;
    sc_error err = {0};
    if (sc_json_load(path, &j, &err) != SC_OK)
        return NULL;
    cJSON *kids = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "root"), "children");
    int at = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, kids)
    {
        at++;
        if (!strcmp(cJSON_GetObjectItem(c, "name")->valuestring, after))
            break;
    }
    /* the children after `after` come off and go back after the new ones
     * (Debian 12's cJSON 1.7.15 inserts nothing with cJSON_InsertItemInArray) */
    cJSON *tail = cJSON_CreateArray();
    while (cJSON_GetArraySize(kids) > at)
        cJSON_AddItemToArray(tail, cJSON_DetachItemFromArray(kids, at));
    if (!strcmp(after, "embed"))
        cJSON_AddItemToArray(kids, cJSON_Parse("{\"name\": \"wpe\", \"kind\": \"embedding\", "
                                               "\"params\": 2048, \"flops_fwd\": 0, "
                                               "\"act_out_bytes\": 8192, \"act_saved_bytes\": 0}"));
    cJSON_AddItemToArray(kids, cJSON_Parse("{\"name\": \"gpt#self\", \"kind\": \"self\", "
                                           "\"params\": 0, \"flops_fwd\": 0, "
                                           "\"act_out_bytes\": 8192, \"act_saved_bytes\": 0, "
                                           "\"inputs\": [\"embed\"]}"));
    while (cJSON_GetArraySize(tail) > 0)
        cJSON_AddItemToArray(kids, cJSON_DetachItemFromArray(tail, 0));
    cJSON_Delete(tail);
    char *s = cJSON_Print(j);
    cJSON_Delete(j);
    snprintf(path, sizeof path, "%s/%s.json", d, name);
    FILE *f = fopen(path, "w");
    int ok = f && s && fputs(s, f) >= 0;
    ok = f && fclose(f) == 0 && ok;
    free(s);
    return ok ? path : NULL;
}

/* Megatron-LM's embedding sums the token and position lookups itself: a
 * model whose own code adds them before its first layer (the token
 * embedding read past the position one, an `inputs` edge) is its GPT and is
 * exported; one that reads an earlier output later on is not (a traced
 * nanoGPT was refused for its embeddings' sum once the tracer put that sum
 * where it runs). */
TEST(export_megatron_embedding_sum)
{
    const char *d = sc_test_tmpdir(), *path = gpt_with_sum("sum", "embed");
    REQUIRE(path);
    REQUIRE(make_plan("sum.plan", path, "--nodes 1 --dp 2 --microbatches 1") == 0);
    CHECK(SC("%s export %s/sum.plan --to megatron", sc_test_bin(), d) == 0);
    CHECK_ARG(out, "--num-layers 2");
    path = gpt_with_sum("late", "blocks.1");
    REQUIRE(path);
    REQUIRE(make_plan("late.plan", path, "--nodes 1 --dp 2 --microbatches 1") == 0);
    check_refusal("late.plan", "megatron",
                  "Megatron-LM cannot run this plan: gpt has non-sequential dataflow (gpt#self "
                  "consumes embed's output)",
                  __LINE__);
}

/* --factory takes the tracer's spec, FILE.py:FUNC[:k=v,...], and offers the
 * plan's microbatch and sequence as the tracer offers --batch and --seq: a
 * traced nanoGPT (gpt2.py, two layers, vocabulary 512, sequence 64) trains
 * on two CPU ranks from the very spec it was traced with, built at batch 2
 * (the plan's mbs) and seq 64, not at make()'s defaults (batch 2, seq 1024),
 * with the loss the plan priced, a cross-entropy over its logits.
 * The spec's k=v once stopped the run ("has no attribute
 * 'make:attn=sdpa,...'"). Needs torch >= 2.6 (SC_TORCH_PYTHON). */
TEST(export_torch_factory_spec_runs)
{
    const char *py = torch_2_6("the file was not run");
    if (!py)
        return;
    char g[PATH_MAX], model[PATH_MAX + 16], script[2 * PATH_MAX];
    const char *d = sc_test_tmpdir();
    REQUIRE(realpath("tests/tracer/gpt2.py", g));
    snprintf(model, sizeof model, "%s/g.json", d);
    REQUIRE(SC("%s traces/torch_trace.py %s:make:attn=sdpa,layers=2,vocab=512 --batch 2 --seq 64 "
               "--dtype fp32 -o %s 2>&1",
               py, g, model) == 0);
    REQUIRE(make_plan("gs.json", model, "--nodes 1 --pp 2 --microbatches 4 --mbs 2") == 0);
    REQUIRE(SC("%s export %s/gs.json --to torch -o %s/gs >/dev/null", sc_test_bin(), d, d) == 0);
    snprintf(script, sizeof script,
             "torch_pipeline.py --steps 2 --factory %s:make:attn=sdpa,layers=2,vocab=512", g);
    int rc = two_ranks(py, "gs", script);
    if (rc != 0 || !strstr(out, "step 1: loss "))
        sc_test_fail(__FILE__, __LINE__, "exit %d: %.2000s", rc, out);
    CHECK_STR_HAS(out, "factory: make(attn='sdpa', layers=2, vocab=512, batch=2, seq=64)\n");
    CHECK(!strstr(out, "note: "));
    /* the plan priced a cross-entropy over lm_head's 512 logits, and the run
     * trains that loss against the next tokens: near ln 512 = 6.24 at first
     * (the stand-in, the output's mean, gave -0.07) */
    double loss;
    CHECK(trained(&loss));
    char *py_file = read_in(d, "gs/torch_pipeline.py");
    REQUIRE(py_file);
    CHECK_STR_HAS(py_file, "PRICED_LOSS = \"cross_entropy\"\n");
    CHECK_STR_HAS(py_file, "with --factory, the loss is F.cross_entropy of the last stage's");
    sc_free(py_file);
    /* a spec that is not one: refused before anything runs */
    snprintf(script, sizeof script, "torch_pipeline.py --steps 1 --factory %s:make:layers", g);
    CHECK(two_ranks(py, "gs", script) != 0);
    CHECK(SC("grep -c \"make:layers: 'layers' is not KEY=VALUE\" %s/gs/run.log", d) == 0);
}

/* DeepSpeed's layer list names the modules the user builds its layers from;
 * a traced #self leaf is no module (it stood there as "top#self", a name
 * the user could not find), so its line says what it stands for. */
TEST(export_deepspeed_own_code)
{
    const char *d = sc_test_tmpdir(), *path = own_code_model();
    REQUIRE(path);
    REQUIRE(make_plan("ownd.json", path, "--nodes 1 --pp 2 --microbatches 4 --partition 2") == 0);
    REQUIRE(SC("%s export %s/ownd.json --to deepspeed -o %s/ownd", sc_test_bin(), d, d) == 0);
    char *py = read_in(d, "ownd/deepspeed_pipeline.py");
    REQUIRE(py);
    CHECK_STR_HAS(py, "    \"embed\",\n    \"top#self\",  # no module: what top's forward runs "
                      "besides its children\n    \"layer\",\n");
    sc_free(py);
}
