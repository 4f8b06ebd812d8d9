/* presets.c - built-in cluster descriptions from public figures.
 *
 * GPU peaks are dense (no structured sparsity) tensor-core rates from the
 * vendor data sheets:
 *   V100 SXM2:  NVIDIA Tesla V100 data sheet (2018): 15.7 TFLOP/s fp32,
 *               125 TFLOP/s fp16 tensor; 900 GB/s HBM2; NVLink 2.0 300 GB/s
 *               bidirectional per GPU (150 GB/s per direction).
 *   A100 SXM4:  NVIDIA A100 data sheet (2021): 19.5 fp32, 156 tf32,
 *               312 fp16/bf16 TFLOP/s; 40 GB: 1,555 GB/s, 80 GB: 2,039 GB/s;
 *               NVLink 3 / NVSwitch 600 GB/s bidirectional (300 per direction).
 *   H100 SXM5:  NVIDIA H100 data sheet (2023): 67 fp32, 494.7 tf32,
 *               989.4 fp16/bf16, 1,978.9 fp8 TFLOP/s; 3.35 TB/s HBM3;
 *               NVLink 4 900 GB/s bidirectional (450 per direction).
 *   H200 SXM:   NVIDIA H200 data sheet (2024): H100 compute, 141 GB HBM3e at
 *               4.8 TB/s.
 * Instances and systems:
 *   p3.16xlarge, p4d.24xlarge, p4de.24xlarge, p5.48xlarge: AWS EC2
 *     accelerated-computing instance pages (network 25 Gb/s; 4 x 100 Gb/s EFA;
 *     4 x 100 Gb/s EFA; 32 x 100 Gb/s EFAv2 = 3,200 Gb/s). On-demand prices:
 *     AWS list prices, us-east-1, Linux, 2024 (p3.16xlarge $24.48,
 *     p4d.24xlarge $32.7726, p4de.24xlarge $40.9657, p5.48xlarge $98.32; AWS
 *     lowered P4/P5 prices in 2025, so edit a cluster file for current
 *     figures). Spot prices are APPROXIMATE (typical us-east-1 spot history,
 *     they move daily) and interruption rates are rough assumptions in the
 *     spirit of the AWS Spot Instance Advisor buckets, to be replaced with
 *     observed figures.
 *   dgx-a100-80g: NVIDIA DGX A100 user guide: 8 x A100-80GB, NVSwitch,
 *     8 x 200 Gb/s HDR InfiniBand (ConnectX-6) for compute traffic.
 *   dgx-h100: NVIDIA DGX H100 user guide: 8 x H100-80GB, NVSwitch,
 *     8 x 400 Gb/s NDR InfiniBand (ConnectX-7).
 *   DGX systems are bought, not rented: the hourly prices given are the
 *   public on-demand rates of an equivalent 8-GPU cloud node (Lambda Cloud,
 *   2024: $1.79 per A100-80GB-hour, $2.99 per H100-hour), approximate; no spot.
 *   h200-sxm-1: one H200; price approximate ($3.50 per GPU-hour, typical 2025
 *     cloud on-demand); its network (one 400 Gb/s NIC) is an assumption.
 *
 * Efficiency defaults (to be replaced by calibration; "preset" provenance):
 *   eff_max 0.75 on tensor-core dtypes, 0.85 on fp32 (CUDA cores);
 *   f_half = peak x 10 us (a call needing 10 us at peak reaches half of
 *   eff_max: small kernels are launch and tail bound);
 *   memory_bw 0.8 of HBM; bw_eff 0.8 intra (NVLink, NCCL busbw ~ 80% of
 *   link rate), 0.9 inter; alpha: intra 5 us, inter 10 us (InfiniBand),
 *   15 us (EFA), 30 us (TCP); op overhead 10 us; workspace 2 GiB per GPU.
 *   Storage bandwidth for checkpoints: 1 GB/s assumed (FSx/NVMe vary widely).
 *
 * Kernel-level GEMM model (efficiency.gemm, cost_kernel.c) for the A100,
 * H100 and H200 presets, fitted once to public GEMM measurements:
 *   sms: A100 108, H100/H200 132 (NVIDIA A100 and H100 architecture white
 *     papers); largest tile 256 x 128 (the example tile of NVIDIA's "Matrix
 *     Multiplication Background User's Guide", Deep Learning Performance
 *     documentation); k_half 128 (assumed: two 64-deep K-steps of prologue and
 *     epilogue per tile).
 *   eff_max: from the "Maximum Achievable Matmul FLOPS" table of S. Bekman,
 *     ml-engineering, compute/accelerator/README.md (mamf-finder.py, BF16,
 *     CUDA 12.1/12.5): A100 SXM 267.9 TFLOP/s at 6912x16384x2048, H100 SXM
 *     792.1 at 6144x17920x2816, GH200 821.0 at 11264x19712x1536 (the H200
 *     preset uses the GH200 figure: the same 132-SM H100 die with HBM3e; an
 *     assumption). eff_max is what makes the model give exactly that rate at
 *     that shape (tests/test_kernel.c checks it): A100 0.9123, H100 0.8552,
 *     H200 0.9109. One point per GPU fits one parameter: the shape
 *     dependence is the tile-and-wave rule, not fitted.
 *   flash_fwd/flash_bwd (fractions of peak): A100 0.70/0.55 (FlashAttention-2,
 *     Dao 2023: 50-73% of A100 peak forward and backward); H100/H200
 *     0.60/0.45 (FlashAttention-3, Shah et al. 2024: BF16 forward up to ~740
 *     TFLOP/s, backward ~1.5-1.75x FlashAttention-2's; taken at head size 128,
 *     sequence 2-8k, below the peak figures).
 *   kernel_s 2 us per kernel (assumed: back-to-back launches from a host that
 *     runs ahead leave ~1-2 us gaps plus a tail).
 *   sustained: MAMF is a burst (the clock at boost, the board below its power
 *     limit); a training run holds the GPU at its power limit, where the
 *     clock settles lower. A100: 1305/1410 = 0.926, the clock NVIDIA uses for
 *     the A100's HPL Rpeak, sustainable at the power limit under dense math,
 *     against the 1410 MHz boost behind the 312 TFLOP/s peak (G. Lockwood,
 *     "Peak FLOPS", glennklockwood.com). H100, H200: 698.6/828.0 = 0.844, the
 *     H200's sustained matmul rate with all 8 GPUs of a node busy (MSMF)
 *     against its burst MAMF, both BF16 (Bekman, ml-engineering,
 *     compute/accelerator/benchmarks/README.md, 2026 revision: "What we
 *     measured: alone vs all-8 concurrent"); the H100 has the same die and
 *     700 W limit, an assumption.
 *
 * cpu-local: this machine's cores as devices (sysconf), ~50 GFLOP/s fp32 per
 * core (AVX2 FMA at ~3 GHz, OpenBLAS reaches most of it), ~10 GB/s memory
 * bandwidth per core, shared memory as the "intra" link (5 GB/s, 1 us),
 * loopback TCP as the "inter" network (2 GB/s, 20 us): all modest defaults
 * for calibration to replace.
 */
#include "cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T 1e12
#define GB 1e9
#define GIB 1073741824.0
#define GBIT (1e9 / 8)
#define US 1e-6

typedef struct spec {
    const char *name, *description, *gpu;
    int gpus_per_node;
    double fp32, tf32, fp16, bf16, fp8; /* FLOP/s */
    double mem, hbm;                    /* bytes, bytes/s */
    const char *fabric;
    double intra_bw, intra_lat;
    double nic_bw;
    int nics;
    double inter_lat, inter_alpha;
    double on_demand, spot, interruptions;
    const char *sources;
    int sms;                 /* 0: no kernel-level GEMM model */
    double gemm_eff, flash_fwd, flash_bwd, sustained;
} spec;

/* sms, GEMM eff_max, flash forward and backward, sustained (see the top of
 * this file) */
#define A100_GEMM 108, 0.9123, 0.70, 0.55, 1305.0 / 1410
#define H100_GEMM 132, 0.8552, 0.60, 0.45, 698.6 / 828.0
#define H200_GEMM 132, 0.9109, 0.60, 0.45, 698.6 / 828.0
#define GEMM_A100 "GEMM model: MAMF A100 SXM 267.9 TFLOP/s (Bekman, ml-engineering), FA2"
#define GEMM_H100 "GEMM model: MAMF H100 SXM 792.1 TFLOP/s (Bekman, ml-engineering), FA3"
#define GEMM_H200 "GEMM model: MAMF GH200 821.0 TFLOP/s (Bekman, ml-engineering), FA3"

static const spec specs[] = {
    {"p3.16xlarge", "AWS, 8 x V100-SXM2-16GB, NVLink 2.0, 25 Gb/s network", "V100-SXM2-16GB", 8,
     15.7 * T, 0, 125 * T, 0, 0, 16 * GIB, 900 * GB, "nvlink", 150 * GB, 1 * US, 25 * GBIT, 1,
     30 * US, 30 * US, 24.48, 7.35, 0.005,
     "preset: NVIDIA V100 data sheet; AWS EC2 P3 page and price list (us-east-1, 2024); spot "
     "approximate", 0, 0, 0, 0, 0},
    {"p4d.24xlarge", "AWS, 8 x A100-SXM4-40GB, NVSwitch 600 GB/s, 4 x 100 Gb/s EFA",
     "A100-SXM4-40GB", 8, 19.5 * T, 156 * T, 312 * T, 312 * T, 0, 40 * GIB, 1555 * GB,
     "nvswitch", 300 * GB, 1 * US, 100 * GBIT, 4, 15 * US, 15 * US, 32.7726, 11.57, 0.01,
     "preset: NVIDIA A100 data sheet; AWS EC2 P4 page and price list (us-east-1, 2024); spot "
     "approximate; " GEMM_A100, A100_GEMM},
    {"p4de.24xlarge", "AWS, 8 x A100-SXM4-80GB, NVSwitch 600 GB/s, 4 x 100 Gb/s EFA",
     "A100-SXM4-80GB", 8, 19.5 * T, 156 * T, 312 * T, 312 * T, 0, 80 * GIB, 2039 * GB,
     "nvswitch", 300 * GB, 1 * US, 100 * GBIT, 4, 15 * US, 15 * US, 40.9657, 14.5, 0.01,
     "preset: NVIDIA A100 data sheet; AWS EC2 P4 page and price list (us-east-1, 2024); spot "
     "approximate; " GEMM_A100, A100_GEMM},
    {"p5.48xlarge", "AWS, 8 x H100-SXM5-80GB, NVSwitch 900 GB/s, 3200 Gb/s EFA",
     "H100-SXM5-80GB", 8, 67 * T, 494.7 * T, 989.4 * T, 989.4 * T, 1978.9 * T, 80 * GIB,
     3350 * GB, "nvswitch", 450 * GB, 1 * US, 100 * GBIT, 32, 15 * US, 15 * US, 98.32, 35.0,
     0.01,
     "preset: NVIDIA H100 data sheet; AWS EC2 P5 page and price list (us-east-1, 2024); spot "
     "approximate; " GEMM_H100, H100_GEMM},
    {"dgx-a100-80g", "NVIDIA DGX A100, 8 x A100-SXM4-80GB, NVSwitch, 8 x 200 Gb/s InfiniBand",
     "A100-SXM4-80GB", 8, 19.5 * T, 156 * T, 312 * T, 312 * T, 0, 80 * GIB, 2039 * GB,
     "nvswitch", 300 * GB, 1 * US, 200 * GBIT, 8, 2 * US, 10 * US, 14.32, 0, 0,
     "preset: NVIDIA A100 data sheet; DGX A100 user guide; price of an equivalent cloud node "
     "(Lambda, 2024), approximate; " GEMM_A100, A100_GEMM},
    {"dgx-h100", "NVIDIA DGX H100, 8 x H100-SXM5-80GB, NVSwitch, 8 x 400 Gb/s InfiniBand",
     "H100-SXM5-80GB", 8, 67 * T, 494.7 * T, 989.4 * T, 989.4 * T, 1978.9 * T, 80 * GIB,
     3350 * GB, "nvswitch", 450 * GB, 1 * US, 400 * GBIT, 8, 2 * US, 10 * US, 23.92, 0, 0,
     "preset: NVIDIA H100 data sheet; DGX H100 user guide; price of an equivalent cloud node "
     "(Lambda, 2024), approximate; " GEMM_H100, H100_GEMM},
    {"h200-sxm-1", "one H200-SXM-141GB, 4.8 TB/s HBM3e", "H200-SXM-141GB", 1, 67 * T,
     494.7 * T, 989.4 * T, 989.4 * T, 1978.9 * T, 141 * GB, 4800 * GB, "nvlink", 450 * GB,
     1 * US, 400 * GBIT, 1, 2 * US, 10 * US, 3.50, 0, 0,
     "preset: NVIDIA H200 data sheet; network assumed; price approximate; " GEMM_H200,
     H200_GEMM},
};

static const sc_cluster_preset presets[] = {
    {"p3.16xlarge", "AWS, 8 x V100-SXM2-16GB, NVLink 2.0, 25 Gb/s network"},
    {"p4d.24xlarge", "AWS, 8 x A100-SXM4-40GB, NVSwitch 600 GB/s, 4 x 100 Gb/s EFA"},
    {"p4de.24xlarge", "AWS, 8 x A100-SXM4-80GB, NVSwitch 600 GB/s, 4 x 100 Gb/s EFA"},
    {"p5.48xlarge", "AWS, 8 x H100-SXM5-80GB, NVSwitch 900 GB/s, 3200 Gb/s EFA"},
    {"dgx-a100-80g", "NVIDIA DGX A100, 8 x A100-SXM4-80GB, NVSwitch, 8 x 200 Gb/s InfiniBand"},
    {"dgx-h100", "NVIDIA DGX H100, 8 x H100-SXM5-80GB, NVSwitch, 8 x 400 Gb/s InfiniBand"},
    {"h200-sxm-1", "one H200-SXM-141GB, 4.8 TB/s HBM3e"},
    {"cpu-local", "this machine's CPU cores as devices (shared memory, loopback TCP)"},
};

const sc_cluster_preset *sc_cluster_presets(int *n)
{
    *n = (int)SC_ARRAY_LEN(presets);
    return presets;
}

static void set_eff(sc_cluster *c, double tc_eff, double fp32_eff, double alpha_intra,
                    double alpha_inter, double workspace)
{
    for (int d = 0; d < SC_DTYPE_N; d++) {
        if (c->gpu.peak_flops[d] <= 0)
            continue;
        c->eff.eff_max[d] = d == SC_FP32 ? fp32_eff : tc_eff;
        c->eff.f_half[d] = c->gpu.peak_flops[d] * 10 * US;
    }
    c->eff.memory_bw = 0.8;
    c->eff.alpha_s[SC_LINK_INTRA] = alpha_intra;
    c->eff.alpha_s[SC_LINK_INTER] = alpha_inter;
    c->eff.bw_eff[SC_LINK_INTRA] = 0.8;
    c->eff.bw_eff[SC_LINK_INTER] = 0.9;
    c->eff.op_overhead_s = 10 * US;
    c->eff.workspace_bytes = workspace;
    c->eff.bwd_factor = 1;
}

static void from_spec(const spec *s, sc_cluster *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", s->name);
    snprintf(c->description, sizeof c->description, "%s", s->description);
    c->nodes = 1;
    c->gpus_per_node = s->gpus_per_node;
    snprintf(c->gpu.name, sizeof c->gpu.name, "%s", s->gpu);
    c->gpu.peak_flops[SC_FP32] = s->fp32;
    c->gpu.peak_flops[SC_TF32] = s->tf32;
    c->gpu.peak_flops[SC_FP16] = s->fp16;
    c->gpu.peak_flops[SC_BF16] = s->bf16;
    c->gpu.peak_flops[SC_FP8] = s->fp8;
    c->gpu.memory_bytes = s->mem;
    c->gpu.hbm_bytes_per_s = s->hbm;
    snprintf(c->intra.kind, sizeof c->intra.kind, "%s", s->fabric);
    c->intra.bytes_per_s = s->intra_bw;
    c->intra.latency_s = s->intra_lat;
    c->inter.nic_bytes_per_s = s->nic_bw;
    c->inter.nics_per_node = s->nics;
    c->inter.latency_s = s->inter_lat;
    c->price.on_demand_per_hour = s->on_demand;
    c->price.spot_per_hour = s->spot;
    c->price.spot_interruptions_per_hour = s->interruptions;
    c->storage_bytes_per_s = 1 * GB;
    /* alpha per ring step inside a node: ~1 us (NCCL's LL protocol over
     * NVLink; an 8-GPU allreduce of a few KiB takes ~10-15 us = 14 steps). */
    set_eff(c, 0.75, 0.85, 1 * US, s->inter_alpha, 2 * GIB);
    snprintf(c->eff.provenance, sizeof c->eff.provenance, "%s", s->sources);
    if (s->sms > 0)
        c->eff.gemm = (sc_cluster_gemm){.sms = s->sms,
                                        .eff_max = s->gemm_eff,
                                        .tile_m = 256,
                                        .tile_n = 128,
                                        .k_half = 128,
                                        .kernel_s = 2 * US,
                                        .flash_fwd = s->flash_fwd,
                                        .flash_bwd = s->flash_bwd,
                                        .sustained = s->sustained};
}

/* fp32 FLOP/s of one core: FMA lanes x 2 FLOP x 2 FMA units per cycle
 * (64 with AVX-512, 32 with AVX2, 16 otherwise) times the clock that
 * /proc/cpuinfo reports (2 GHz when it says nothing). An upper bound that
 * calibration scales with eff_max. */
static double cpu_core_peak(void)
{
    double mhz = 0, per_cycle = 16;
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        if (!mhz && !strncmp(line, "cpu MHz", 7)) {
            const char *colon = strchr(line, ':');
            if (colon)
                mhz = atof(colon + 1);
        }
        if (!strncmp(line, "flags", 5)) {
            if (strstr(line, " avx512f"))
                per_cycle = 64;
            else if (strstr(line, " avx2") && per_cycle < 32)
                per_cycle = 32;
        }
    }
    if (f)
        fclose(f);
    if (!(mhz >= 500 && mhz <= 10000))
        mhz = 2000;
    return mhz * 1e6 * per_cycle;
}

static void cpu_local(sc_cluster *c)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (cores < 1)
        cores = 1;
    if (cores > SC_CLUSTER_MAX_GPUS_PER_NODE)
        cores = SC_CLUSTER_MAX_GPUS_PER_NODE;
    double mem = pages > 0 && psize > 0 ? (double)pages * (double)psize : 8 * GIB;
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "cpu-local");
    snprintf(c->description, sizeof c->description, "%s",
             "this machine's CPU cores as devices (shared memory, loopback TCP)");
    c->nodes = 1;
    c->gpus_per_node = (int)cores;
    snprintf(c->gpu.name, sizeof c->gpu.name, "cpu-core");
    c->gpu.peak_flops[SC_FP32] = cpu_core_peak();
    c->gpu.memory_bytes = mem / (double)cores;
    c->gpu.hbm_bytes_per_s = 20 * GB; /* one core streaming from DRAM */
    snprintf(c->intra.kind, sizeof c->intra.kind, "shm");
    c->intra.bytes_per_s = 5 * GB;
    c->intra.latency_s = 1 * US;
    c->inter.nic_bytes_per_s = 2 * GB;
    c->inter.nics_per_node = 1;
    c->inter.latency_s = 20 * US;
    c->storage_bytes_per_s = 1 * GB;
    set_eff(c, 0.75, 0.6, 5 * US, 20 * US, 0.25 * GIB);
    /* a core is not launch-bound like a GPU: half efficiency at 1 us of work */
    c->eff.f_half[SC_FP32] = c->gpu.peak_flops[SC_FP32] * 1 * US;
    c->eff.op_overhead_s = 1 * US;
    snprintf(c->eff.provenance, sizeof c->eff.provenance,
             "preset: sysconf cores and memory; modest defaults, not yet calibrated");
}

sc_status sc_cluster_preset_get(const char *name, sc_cluster *out, sc_error *err)
{
    sc_cluster c;
    if (!name)
        return sc_err(err, SC_ENOTFOUND, "no cluster preset named (null)");
    if (strcmp(name, "cpu-local") == 0) {
        cpu_local(&c);
        *out = c;
        return SC_OK;
    }
    for (size_t i = 0; i < SC_ARRAY_LEN(specs); i++)
        if (strcmp(specs[i].name, name) == 0) {
            from_spec(&specs[i], &c);
            *out = c;
            return SC_OK;
        }
    return sc_err(err, SC_ENOTFOUND,
                  "no cluster preset named \"%.64s\" (try 'stagecraft cluster list')", name);
}
