/* kernel.h - the kernels a leaf module runs (the optional "kernels" key of
 * stagecraft.model/1).
 *
 * Owner: traces/ (kernel.c). Read by cost_models/ (cost_kernel.c), written by
 * the generators (gen.c) and the tracer.
 *
 * A leaf's forward is the list of kernels a framework launches for it, in
 * order; its backward is derived from the same list. Shapes are for ONE
 * sample at tp 1; the cost model scales them by the microbatch and shards
 * them by tensor parallelism as each kernel's fields say. Kinds ("op"):
 *
 *   gemm   C[batch][m][n] = A[batch][m][k] B[batch][k][n]: 2·batch·m·n·k
 *          FLOPs forward. Backward: the data-gradient GEMM (batch, m, k, n)
 *          and the weight- (or second operand-) gradient GEMM (batch, k, n, m),
 *          each with the forward's FLOPs (so backward = 2 x forward).
 *   mem    a memory-bound kernel (norm, softmax, dropout, bias + GeLU,
 *          residual add, rotary, embedding gather, cross-entropy): `bytes`
 *          read plus written forward, `bwd_bytes` backward (default 2 x bytes),
 *          no FLOPs counted (the GEMM-only convention of the model's FLOPs),
 *          except `flops` (default 0): the counted FLOPs of an op no library
 *          runs as a GEMM (a depthwise convolution, a stencil on CUDA cores),
 *          run at the fp32 (vector) peak; backward 2 x (data and weight
 *          gradients).
 *   flash  fused attention (FlashAttention, Dao et al. 2022/2023): batch =
 *          heads, m = query tokens, n = key tokens, k = head size. Counted
 *          FLOPs 4·batch·m·n·k (the two GEMMs of unfused attention, so the
 *          leaf's totals are the same whichever implementation runs); a
 *          causal kernel executes half of them. Its backward recomputes the
 *          scores: 2.5 x the forward's executed FLOPs (five GEMMs to two).
 *          No s² traffic: reads Q, K, V, writes O (forward).
 *
 * Fields (JSON key: meaning, default):
 *   name     what the kernel computes ("qkv", "softmax"), 1..31 characters
 *   op       "gemm" | "mem" | "flash"
 *   batch, m, n, k   shape (gemm, flash), integers >= 1; batch default 1
 *   bytes, bwd_bytes, flops (mem) >= 0
 *   samples  which dimension a microbatch of b samples multiplies: "m"
 *            (tokens: linear layers; default for gemm) or "batch" (default for
 *            flash; batched attention GEMMs)
 *   tp       which dimension tensor parallelism of degree t divides:
 *            "none" (replicated; default), "n" (column-parallel), "k"
 *            (row-parallel), "batch" (heads), "shard" (a mem kernel's bytes),
 *            "seq" (whole under plain tp, divided under sequence parallelism:
 *            norms, dropout + residual adds; Korthikanti et al. 2022)
 *   attn     "any" (default), "unfused" or "flash": the kernel runs only with
 *            that attention implementation (a plan setting)
 *   causal   (flash) true when the mask is causal, default false
 *   kv       (gemm) "n" or "k": that dimension runs over the keys of a
 *            self-attention (scores: n; context: k), so token slices
 *            (TeraPipe) scale it by the context a slice sees; default none
 *   per      (mem) "tokens" (default) or "scores": the bytes scale with the
 *            tokens, or with query x key pairs (softmax, attention dropout)
 *   kv_heads (flash) the key and value heads, dividing batch (grouped-query
 *            attention: fewer than the query heads); default batch. What a
 *            context-parallel group passes around is sized by it.
 *
 * The loader checks that, for each attention implementation the list has,
 * the counted FLOPs of its kernels equal the leaf's flops_fwd within 0.5%.
 */
#ifndef SC_KERNEL_H
#define SC_KERNEL_H

#include <cjson/cJSON.h>
#include "sc.h"

typedef enum sc_kop { SC_KOP_GEMM = 0, SC_KOP_MEM, SC_KOP_FLASH, SC_KOP_N } sc_kop;
typedef enum sc_ktp {
    SC_KTP_NONE = 0,
    SC_KTP_N,
    SC_KTP_K,
    SC_KTP_BATCH,
    SC_KTP_SHARD,
    SC_KTP_SEQ,
    SC_KTP_COUNT
} sc_ktp;
/* The attention implementation of a plan; a kernel's `attn` is one of these
 * or SC_ATTN_ANY. */
typedef enum sc_attn { SC_ATTN_UNFUSED = 0, SC_ATTN_FLASH, SC_ATTN_N, SC_ATTN_ANY = SC_ATTN_N } sc_attn;

#define SC_KERNEL_NAME_MAX 31
#define SC_KERNELS_MAX 64 /* per leaf */

typedef struct sc_kernel {
    char name[SC_KERNEL_NAME_MAX + 1];
    unsigned char op;      /* sc_kop */
    unsigned char tp;      /* sc_ktp */
    unsigned char attn;    /* sc_attn, SC_ATTN_ANY for both */
    unsigned char grow_batch; /* 1: samples multiply batch; 0: they multiply m */
    unsigned char causal;
    unsigned char kv;      /* gemm: 0 none, 'n' or 'k' (the keys' dimension) */
    unsigned char scores;  /* mem: 1 when its bytes scale with query x key pairs */
    double batch, m, n, k;
    double bytes, bwd_bytes;
    double flops;          /* mem: counted forward FLOPs (a stencil), 0 = none */
    double kv_heads;       /* flash: key/value heads (grouped-query attention), 0 = batch */
} sc_kernel;

const char *sc_kop_name(sc_kop op);
const char *sc_ktp_name(sc_ktp tp);
const char *sc_attn_name(sc_attn a); /* "unfused", "flash", "any" */
int sc_attn_parse(const char *s);    /* SC_ATTN_UNFUSED or SC_ATTN_FLASH; -1 otherwise */

/* A flash kernel's key/value heads (kv_heads, or batch when unset). */
static inline double sc_kernel_kv_heads(const sc_kernel *k)
{
    return k->kv_heads > 0 ? k->kv_heads : k->batch;
}
/* Counted forward FLOPs of one kernel for one sample at tp 1. */
double sc_kernel_flops(const sc_kernel *k);
/* Whether k runs under attention implementation a. */
static inline int sc_kernel_runs(const sc_kernel *k, sc_attn a)
{
    return k->attn == SC_ATTN_ANY || k->attn == (unsigned char)a;
}

/* Builders (generators): a GEMM, a memory-bound kernel, a flash kernel.
 * Each returns the kernel by value with the defaults above. */
sc_kernel sc_kernel_gemm(const char *name, double batch, double m, double n, double k,
                         sc_ktp tp, int grow_batch, sc_attn attn);
sc_kernel sc_kernel_mem(const char *name, double bytes, double bwd_bytes, sc_ktp tp,
                        sc_attn attn);
sc_kernel sc_kernel_flash(const char *name, double heads, double sq, double skv, double dh,
                          int causal, sc_ktp tp);

/* Parses the "kernels" array at path (e.g. "root.children[3]") of file into
 * a new array (*out, sc_free), *n its length. One-line errors name the file,
 * the JSON path and the field. */
sc_status sc_kernels_from_json(const cJSON *arr, const char *file, const char *path,
                               sc_kernel **out, int *n, sc_error *err);
/* Appends the list as a "kernels" array to obj; *oom on allocation failure. */
void sc_kernels_to_json(cJSON *obj, const sc_kernel *k, int n, int *oom);
/* Checks a leaf's list against its counted forward FLOPs flops_fwd: for each
 * implementation the list has kernels for, their FLOPs sum to flops_fwd
 * within 0.5%. where names the module for the message. */
sc_status sc_kernels_check(const sc_kernel *k, int n, double flops_fwd, const char *file,
                           const char *where, sc_error *err);

#endif
