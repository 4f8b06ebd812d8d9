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
 *   eff_max_fp8 (fp8 GEMMs, a plan's fp8): the 16-bit eff_max times the
 *     ratio of the fp8 and BF16 MAMF efficiencies of one GPU in one revision
 *     of the same table (compute/accelerator/README.md of
 *     stas00/ml-engineering at 744d01e, 2026: FP8 float8_e4m3fn and BF16
 *     rows): H100 SXM 1402.6 of 1978.9 against 794.5 of 989.4 (torch
 *     2.7.0+cu126 both): 0.8552 x 0.7088 / 0.8030 = 0.7548; the H200 preset
 *     as its 16-bit fit, from GH200 (1535.0 against 828.6, torch 2.6.0+cu126
 *     both): 0.9109 x 0.7757 / 0.8375 = 0.8437. Not fitted at the fp8 best
 *     shapes themselves: 1024x9216x14336 is 288 tiles of 256 x 128 on 132
 *     SMs, 3 waves under the tile rule, which would need 0.946 (and H200's
 *     1280x4096x12032 more than 1): cuBLAS's fp8 kernels there do not
 *     quantise as the rule says, and a ceiling fitted to them would put
 *     large fp8 GEMMs above every published rate. The A100 has no fp8.
 *   flash_fwd/flash_bwd (fractions of peak, causal, long sequences) and
 *     their fall at short sequences (flash_s0): each GPU's newest kernel,
 *     FlashAttention-2 on A100 (Dao 2023's measured rates by sequence
 *     length, fitted in scripts/fit_flash.py: 0.741/0.582, s0 484 tokens) and
 *     FlashAttention-3 on H100/H200 (Shah et al. 2024's forward rates by
 *     sequence, fitted likewise: 0.662/0.496, s0 604; see flash_rates at
 *     the end of this file, where sc_cluster_flash_kernel switches a cluster
 *     to another generation's published rates: FA1, FA2 on Hopper, Triton).
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
 *     700 W limit, an assumption. Checked on one H200 (docs/accuracy.md, "The
 *     seventh run"): through gpt steps on random operands it held 1500-1590
 *     of 1980 MHz at ~690 W, and its GEMMs, timed alone, fit 0.852 of the
 *     burst rule (2.9 us a kernel).
 *
 * Collectives (the size ramp of cost.h: alpha_s, bw_eff, s_half_bytes, ramp_exp per
 * link class), fitted once by scripts/fit_nccl.py (least squares on log busbw,
 * Nelder-Mead; it prints each fit and its residuals)
 * to public nccl-tests all_reduce_perf curves, busbw by size:
 *   [N1] Azure/AI-benchmarking-guide, Azure_Results/ND_A100_v4_results.md, "NCCL
 *        Bandwidth" table: 8 x A100-SXM4-80GB in one node, NCCL 2.18.5, in-place
 *        busbw 1 KiB .. 8 GiB (24 sizes; e.g. 36.22 GB/s at 1 MiB, 109.22 at
 *        16 MiB, 213.87 at 256 MiB, 231.58 at 8 GiB).
 *   [N2] the same repository, "Azure Results/ND_H100_v5_results.md": 8 x H100
 *        80GB HBM3, NCCL 2.18.5 (NVLS), 1 KiB .. 8 GiB (43.70 GB/s at 1 MiB,
 *        234.45 at 16 MiB, 423.38 at 256 MiB, 478.87 at 8 GiB).
 *   [N3] the same repository, Azure_Results/ND_H200_v5_results.md: 8 x H200,
 *        NCCL 2.20.5 (NVLS), 1 KiB .. 8 GiB (52.96 GB/s at 1 MiB, 240.41 at
 *        16 MiB, 432.24 at 256 MiB, 479.98 at 8 GiB).
 *   [N4] NVIDIA/nccl-tests issue #119 (2022-11-17): 3 nodes x 8 A100-SXM4-40GB,
 *        4 x 200 Gb/s HDR InfiniBand per node, 24 ranks, all_reduce_perf 8 B ..
 *        128 MiB in 1 MiB steps: out-of-place busbw 86.20 GB/s at 75,497,480 B,
 *        85.71 at 80,740,360, 85.50 at 84,934,664, 93.76 at 85,983,240, 95.75 at
 *        127,926,280, 95.74 at 133,169,160; "Avg bus bandwidth 84.8558" over the
 *        128 sizes; S. Jeaugey's answer there: 24 GB/s is the peak per 200 Gb/s
 *        NIC (bw_eff 0.96 of 25 GB/s).
 *   [N6] NVIDIA/nccl-tests issue #290, D. Addison's answer (2025-03-03): 46-48 GB/s
 *        per 400 Gb/s NDR NIC (bw_eff 0.94 of 50 GB/s).
 *   [N5] NVIDIA/nccl-tests issue #212, S. Jeaugey's answer (2024-05-06): NVLink 4
 *        reaches about 370 of its 450 GB/s per direction through NCCL (protocol
 *        overhead ~20%), the busbw of every collective but the allreduce (which
 *        NVLink SHARP runs in the switch) and of the allreduce's ring: the H100
 *        and H200 point-to-point share p2p_bw_eff 0.82, and the reduce-scatters'
 *        and all-gathers' share ag_rs_bw_eff 0.82 (370/450), at the allreduce's
 *        size ramp (no public size sweep of those on NVLink 4 found; an
 *        assumption). The A100's allreduce is itself a ring: no separate share.
 * Intra (n = 8): A100 [N1] alpha 2.97 us, bw_eff 0.9034, s_half 7.10 MB, exp 0.25;
 *   H100 [N2] alpha 2 us (held), bw_eff 1 (held: NVLS in-switch reduction reaches
 *   a busbw of 479 GB/s, above the 450 GB/s link, which a share of the link cannot
 *   express; large allreduces come out 6% slow), s_half 4.93 MB, exp 0.715;
 *   H200 [N3] alpha 2.11 us, bw_eff 1 (held, as H100), s_half 0.908 MB, exp 0.487.
 *   Every point of [N1]-[N3] from 1 KiB is within 25% (tests/test_cost.c).
 * Inter, InfiniBand (dgx-a100-80g, dgx-h100): [N4] with bw_eff held at 0.96 (its
 *   own peak), the ring over 3 nodes: alpha 2 us (held; [N4] has no small sizes),
 *   s_half 10.2 kB, exp 0.538: the six points within 6%, the average 83.6 GB/s
 *   against 84.86 (NCCL's step at 85 MB, a protocol switch, is smoothed over).
 *   dgx-h100 takes the same ramp with bw_eff 0.94 [N6] (no public NDR size sweep
 *   found). EFA (p4d, p4de, p5): [N7] and [N8], aws-samples/awsome-distributed-
 *   training, micro-benchmarks/nccl-tests/README.md (commit 0162aacd): all_reduce_perf
 *   over 2 x p4de.24xlarge and 2 x p5.48xlarge (16 ranks). Their busbw passes the
 *   NICs' rate (78 GB/s on p4de's 50): NCCL ran its tree, which moves S through a
 *   node's NICs where a ring moves 2(n-1)/n S. Fitted (scripts/fit_nccl.py) to the
 *   model's "auto" (coll_tree.c: the tree wins at every size there), the intra link
 *   held at the A100 and H100 fits above: p4d, p4de alpha 59.73 us, bw_eff 0.9671 (of
 *   the node's NICs), s_half 37.03 MB, exp 0.558 (every point within 12.7%; 8 MiB 732
 *   us against 763 measured); p5 18.67 us, 0.6394, 54.16 MB, 0.734 (within 25.3%; 8
 *   MiB 227 us against 205). The plain alpha-beta model these presets had before
 *   (alpha 15 us, bw_eff 0.9) gave 800 and 494 us. A 2 x 8 H100 GCP A3 Mega sweep
 *   (GPUDirect-TCPXO; lessizzmore/create-a3mega-ztan-fork, ztan-NCCL-test-result)
 *   was considered and not used: that network ramps far slower (32 GB/s busbw at
 *   16 MiB against a 339 GB/s plateau) than [N4]'s InfiniBand. V100 and cpu-local
 *   keep the plain model. Presets are never fitted to the validation suite.
 *
 * Compute beside communication (efficiency.overlap_slowdown) on the A100, H100
 * and H200 presets: 0.189 [C1], S. Lee et al., "Characterizing Compute-
 * Communication Overlap in GPU-Accelerated Distributed Deep Learning:
 * Performance and Power Implications", arXiv 2507.03114 (2025), abstract:
 * overlapping compute with communication slows the compute by 18.9% on
 * average (40.0% at most) against the same compute alone, measured on 4 x
 * A100, H100, MI250 and MI210 running GPT and Llama layers. The mechanism:
 * NCCL's kernels run one block per channel on SMs the compute kernels then
 * lack (an H100 allgather took 24 of 132 SMs and pushed a one-wave GEMM into a
 * second wave: NVIDIA developer forum, "Compute-communication overlap causes
 * severe GEMM performance degradation because of tail effect", 2025) and share
 * HBM bandwidth with them. The average is taken as it is, not fitted here;
 * V100 and cpu-local keep 0 (no measurement).
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
#define SC_OVERLAP_SLOWDOWN 0.189 /* [C1] */

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
    double gemm_eff, sustained;
    const char *flash; /* the GPU's newest fused attention kernel (flash_rates) */
    double gemm_eff_fp8; /* 0: no fp8 GEMMs (the GPU has none) */
} spec;

/* sms, GEMM eff_max, sustained, fused attention kernel, fp8 eff_max (see the
 * top of this file and flash_rates below) */
#define A100_GEMM 108, 0.9123, 1305.0 / 1410, "fa2", 0
#define H100_GEMM 132, 0.8552, 698.6 / 828.0, "fa3", 0.7548
#define H200_GEMM 132, 0.9109, 698.6 / 828.0, "fa3", 0.8437
#define OVERLAP_SOURCE "; compute beside collectives 18.9% slower (Lee et al., arXiv 2507.03114)"
#define GEMM_A100                                                                          \
    "GEMM model: MAMF A100 SXM 267.9 TFLOP/s (Bekman, ml-engineering), FA2" OVERLAP_SOURCE
#define GEMM_H100                                                                          \
    "GEMM model: MAMF H100 SXM 792.1 TFLOP/s (Bekman, ml-engineering), fp8 by its FP8/BF16 "   \
    "MAMF ratio, FA3" OVERLAP_SOURCE
#define GEMM_H200                                                                          \
    "GEMM model: MAMF GH200 821.0 TFLOP/s (Bekman, ml-engineering), fp8 by its FP8/BF16 "      \
    "MAMF ratio, FA3" OVERLAP_SOURCE

static const spec specs[] = {
    {"p3.16xlarge", "AWS, 8 x V100-SXM2-16GB, NVLink 2.0, 25 Gb/s network", "V100-SXM2-16GB", 8,
     15.7 * T, 0, 125 * T, 0, 0, 16 * GIB, 900 * GB, "nvlink", 150 * GB, 1 * US, 25 * GBIT, 1,
     30 * US, 30 * US, 24.48, 7.35, 0.005,
     "preset: NVIDIA V100 data sheet; AWS EC2 P3 page and price list (us-east-1, 2024); spot "
     "approximate", 0, 0, 0, NULL, 0},
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
    c->eff.ramp_exp[SC_LINK_INTRA] = c->eff.ramp_exp[SC_LINK_INTER] = 1; /* no ramp yet */
}

/* ---- collectives fitted to nccl-tests curves (header comment, [N1]-[N5]) ---- */

typedef struct comm_fit {
    const char *gpu; /* substring of the GPU name */
    double alpha_intra, bw_intra, s_half_intra, exp_intra, p2p_intra;
    double ag_rs_intra; /* 0: bw_intra applies to reduce-scatters and all-gathers too */
    const char *source;
} comm_fit;

static const comm_fit comm_fits[] = {
    {"A100", 2.97e-6, 0.9034, 7.099e6, 0.25, 0.8, 0,
     "; collectives fitted to nccl-tests allreduce busbw: intra Azure AI-benchmarking-guide "
     "ND_A100_v4 NCCL table (1K-8G; 231.58 GB/s at 8G)"},
    {"H100", 2e-6, 1.0, 4.934e6, 0.715, 0.82, 0.82,
     "; collectives fitted to nccl-tests allreduce busbw: intra Azure AI-benchmarking-guide "
     "ND_H100_v5 NCCL table (1K-8G; 478.87 GB/s at 8G), p2p, reduce-scatter and all-gather "
     "nccl-tests#212"},
    {"H200", 2.11e-6, 1.0, 9.078e5, 0.487, 0.82, 0.82,
     "; collectives fitted to nccl-tests allreduce busbw: intra Azure AI-benchmarking-guide "
     "ND_H200_v5 NCCL table (1K-8G; 479.98 GB/s at 8G), p2p, reduce-scatter and all-gather "
     "nccl-tests#212"},
};
/* Inter-node collectives: InfiniBand ([N4], [N6]; the ring over 3 nodes, alpha held)
 * and EFA ([N7], [N8]; the model's "auto" over 2 nodes, where NCCL's tree runs) */
typedef struct inter_fit {
    const char *preset;
    double alpha, bw_eff, s_half, exp;
    const char *source;
} inter_fit;

#define IB_ALPHA 2e-6
#define IB_S_HALF 1.022e4
#define IB_EXP 0.538
#define EFA_A100 5.973e-5, 0.9671, 3.703e7, 0.558
#define EFA_A100_SOURCE                                                                    \
    "; inter fitted to aws-samples awsome-distributed-training nccl-tests (2x p4de, 16 "  \
    "ranks, NCCL's tree: 763 us at 8M, 78.33 GB/s busbw at 2G)"
static const inter_fit inter_fits[] = {
    {"dgx-a100-80g", IB_ALPHA, 0.96, IB_S_HALF, IB_EXP,
     "; inter fitted to nccl-tests#119 (3x8 A100, 4x HDR: 95.75 GB/s at 128M, avg 84.86)"},
    {"dgx-h100", IB_ALPHA, 0.94, IB_S_HALF, IB_EXP,
     "; inter ramp of nccl-tests#119 (3x8 A100, 4x HDR), NDR plateau per nccl-tests#290"},
    {"p4d.24xlarge", EFA_A100, EFA_A100_SOURCE},
    {"p4de.24xlarge", EFA_A100, EFA_A100_SOURCE},
    {"p5.48xlarge", 1.867e-5, 0.6394, 5.416e7, 0.734,
     "; inter fitted to aws-samples awsome-distributed-training nccl-tests (2x p5, 16 "
     "ranks, NCCL's tree: 205 us at 8M, 487.09 GB/s busbw at 16G)"},
};

static void set_comm_fit(sc_cluster *c)
{
    for (size_t i = 0; i < SC_ARRAY_LEN(comm_fits); i++) {
        const comm_fit *f = &comm_fits[i];
        if (!strstr(c->gpu.name, f->gpu))
            continue;
        c->eff.alpha_s[SC_LINK_INTRA] = f->alpha_intra;
        c->eff.bw_eff[SC_LINK_INTRA] = f->bw_intra;
        c->eff.s_half_bytes[SC_LINK_INTRA] = f->s_half_intra;
        c->eff.ramp_exp[SC_LINK_INTRA] = f->exp_intra;
        c->eff.p2p_bw_eff[SC_LINK_INTRA] = f->p2p_intra;
        c->eff.ag_rs_bw_eff[SC_LINK_INTRA] = f->ag_rs_intra;
        size_t n = strlen(c->eff.provenance);
        snprintf(c->eff.provenance + n, sizeof c->eff.provenance - n, "%s", f->source);
        for (size_t k = 0; k < SC_ARRAY_LEN(inter_fits); k++) {
            const inter_fit *x = &inter_fits[k];
            if (strcmp(c->name, x->preset))
                continue;
            c->eff.alpha_s[SC_LINK_INTER] = x->alpha;
            c->eff.bw_eff[SC_LINK_INTER] = x->bw_eff;
            c->eff.s_half_bytes[SC_LINK_INTER] = x->s_half;
            c->eff.ramp_exp[SC_LINK_INTER] = x->exp;
            n = strlen(c->eff.provenance);
            snprintf(c->eff.provenance + n, sizeof c->eff.provenance - n, "%s", x->source);
        }
        return;
    }
}

typedef struct flash_rate flash_rate;
static const flash_rate *set_flash(sc_cluster *c, const char *kernel);

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
    set_comm_fit(c);
    if (s->sms > 0) {
        c->eff.overlap_slowdown = SC_OVERLAP_SLOWDOWN; /* the GPUs [C1] measured */
        c->eff.gemm = (sc_cluster_gemm){.sms = s->sms,
                                        .eff_max = s->gemm_eff,
                                        .eff_max_fp8 = s->gemm_eff_fp8,
                                        .tile_m = 256,
                                        .tile_n = 128,
                                        .k_half = 128,
                                        .kernel_s = 2 * US,
                                        .sustained = s->sustained};
        set_flash(c, s->flash);
    }
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

/* ---- fused attention kernels by generation (cluster.h) ---- */

struct flash_rate {
    const char *gpu;    /* substring of the GPU name */
    const char *kernel; /* "fa1", "fa2", "fa3", "triton", "cudnn" */
    double fwd, bwd;    /* causal, long sequences: fractions of the dense bf16 peak */
    double s0, s0_full; /* tokens: the rate's fall at short sequences (cluster.h) */
    double full;        /* the rate without the mask over the causal one */
    double hd64;        /* the rate at head size 64 over that at 128 (at 2k, causal) */
    const char *source;
    const int *heads;   /* the head sizes it is built for (NULL: it runs any as it is) */
};

/* The head sizes a kernel is built for, where it pads the others
 * (efficiency.gemm.flash_head_sizes). FlashAttention v1 (csrc/flash_attn/
 * fmha_api.cpp at 4a6eaa9f, the commit of the flash-attention trainer's
 * table) launches its d <= 32, <= 64 or <= 128 kernel, whose tile loads
 * the head columns beyond d as zeros (gmem_tile.h's col_predicate) and
 * multiplies them: head size 96 runs the 128 kernel's FLOPs at its rate.
 * LLM Foundry's FlashAttention in Triton (llmfoundry/models/layers/
 * flash_attn_triton.py at 061f2c7) takes BLOCK_HEADDIM = max(next power of
 * two of d, 16), masked loads with other=0.0. Both refuse d > 128.
 * FlashAttention-2 (csrc/flash_attn/src/static_switch.h, HEADDIM_SWITCH, the
 * same from v2.0 to v2.5.8) launches the kernel of the next multiple of 32
 * up to 256. FA3 (hopper/flash_api.cpp, round_up_headdim, since the
 * refactor of 2025-01-07; its first release, 7f67966c, took 64, 128 and 256
 * only and refused the rest) pads to 64, 96, 128, 192 or 256. Until
 * 2026-12-05 FA2 and FA3 had no list because one changed the default
 * presets' digests, which every recorded H200 run carried; a plan now
 * replays against a saved copy of its preset (docs/gpu_check/clusters/).
 * cuDNN: none published here. Ends with 0. */
static const int FA1_HEADS[] = {32, 64, 128, 0};
static const int TRITON_HEADS[] = {16, 32, 64, 128, 0};
static const int FA2_HEADS[] = {32, 64, 96, 128, 160, 192, 224, 256, 0};
static const int FA3_HEADS[] = {64, 96, 128, 192, 256, 0};

/* Measured by sequence length (scripts/fit_flash.py): Dao 2023
 * (FlashAttention-2, Fig. 4; the bars of assets/flash2_{a100,h100}_fwd_bwd_
 * benchmark.png in Dao-AILab/flash-attention at 4f285b35): forward +
 * backward TFLOP/s of FlashAttention (v1), FlashAttention in Triton (A100
 * only; see TRITON below) and FlashAttention-2 at sequences 512-16k, head size 64 and 128,
 * with and without the causal mask, on A100 80GB SXM4 and H100 80GB SXM5.
 * Each series fits R s / (s + s0) within 0.3-1.6% rms for FA2 and 1.3-5.5%
 * for the others; the presets take head size 128, and the rate at 64 over it
 * (both fits at s = 2048, causal: FA2 0.90 on A100 and 0.87 on H100, FA1
 * 1.13-1.14, Triton 1.09 on A100, on Hopper assumed the same).
 *
 * A benchmark gives forward + backward together; the split keeps the ratio
 * the kernels had before (FA2 0.70 : 0.55 of peak, Dao 2023's 50-73%;
 * Triton FA2's / 1.4 : / 2, Dao 2023, section 4.1: "around 1.3-1.5x faster
 * ... in the forward pass and around 2x faster in the backward pass"; FA1
 * FA2's ratio, an assumption). FROM_FWD_BWD(R, peak, f, b): the fractions
 * f k and b k of peak whose forward + backward (2.5 times the forward's
 * FLOPs) runs at R. */
#define FLASH_K(R, peak, f, b) ((R) / (peak) * (1 / (f) + 2.5 / (b)) / 3.5)
#define FROM_FWD_BWD_(R, peak, f, b) (f) * FLASH_K(R, peak, f, b), (b) * FLASH_K(R, peak, f, b)
#define FROM_FWD_BWD(...) FROM_FWD_BWD_(__VA_ARGS__)
#define FA2_SPLIT 0.70, 0.55
#define TRITON_SPLIT 0.70 / 1.4, 0.55 / 2.0

/* A100 (312 TFLOP/s bf16): causal R and s0, unmasked s0, unmasked R / causal
 * R, head size 64 / 128 (the fits' rates at s = 2048, causal) */
#define FA2_A100 FROM_FWD_BWD(193.5, 312.0, FA2_SPLIT), 484, 184, 204.8 / 193.5, 0.900
#define FA1_A100 FROM_FWD_BWD(81.4, 312.0, FA2_SPLIT), 274, 56, 80.7 / 81.4, 1.130
#define TRITON_A100 FROM_FWD_BWD(80.4, 312.0, TRITON_SPLIT), 320, 120, 95.7 / 80.4, 1.087

/* TRITON: the kernel Fig. 4 calls FlashAttention in Triton is the Triton
 * package's own (triton.ops.flash_attention, OpenAI's tutorial kernel in the
 * MLIR Triton of mid-2023: benchmarks/benchmark_flash_attention.py at
 * 60499abc imports it), whose backward at head size 128 was slow
 * (triton-lang/triton#1975). LLM Foundry ran another: the flash-attention
 * repository's flash_attn_triton.py, written on that kernel for the Triton
 * before MLIR, its head-128 backward made "much faster by reducing register
 * spilling" (its docstring). No benchmark of that one was found, so the
 * Fig. 4 kernel stands in for it. The MPT tables' runs beyond the suite
 * (scripts/mpt_table.py; docs/accuracy.md, "The MPT tables beyond the
 * suite") say the kernel ran faster than the stand-in: at 16k-64k tokens,
 * where attention is most of a step, they are predicted 12-44% too slow.
 * What was published of the kernel does not say so (its docstring: forward +
 * backward slightly slower than FlashAttention's; LLM Foundry's TUTORIAL.md:
 * slightly faster than flash-attn 1.0.9; both about FA1's rate below, which
 * is about the stand-in's). Not fitted to the runs (end-to-end; the rule of
 * docs/accuracy.md). */

/* H100 (989.4). FA2 on Hopper runs Ampere's instructions (mma.sync, no
 * wgmma or TMA). Its level is Shah et al. 2024 (FlashAttention-3), Figs. 5
 * and 6, BF16, head size 128, sequence 2k, causal: 298 TFLOP/s forward and
 * 291 backward, a newer FA2 than the figure above (265 forward + backward
 * there), taken as the rate at s = 2048 of the fitted fall (s0 532). FA3:
 * below. FlashAttention
 * in Triton was not measured on H100: the A100's Triton : FA2 ratio (80.4 :
 * 193.5) times FA2's H100 rate of the same figure (333.4), with the A100's
 * fall (an assumption: both emit Ampere's instructions there). The H200 has
 * the H100's SMs and clocks, and attention at these sizes is compute-bound:
 * it takes the H100's rates (an assumption). */
#define FA2_H100_AT_2K (2048.0 + 532) / 2048
#define FA2_HOPPER 298.0 / 989.4 * FA2_H100_AT_2K, 291.0 / 989.4 * FA2_H100_AT_2K, 532, 190, \
                   343.9 / 333.4, 0.873
#define FA1_HOPPER FROM_FWD_BWD(132.0, 989.4, FA2_SPLIT), 206, 42, 134.8 / 132.0, 1.136
#define TRITON_HOPPER                                                                      \
    FROM_FWD_BWD(333.4 * 80.4 / 193.5, 989.4, TRITON_SPLIT), 320, 120, 95.7 / 80.4, 1.087
/* FA3: Shah et al. 2024, Fig. 5 (assets/flash3_fp16_fwd.png at 7ef24848,
 * scripts/fit_flash.py), forward, head size 128: R 654.8 TFLOP/s causal, s0
 * 604, unmasked 1.022 times that with s0 210 (FP16 bars, BF16 taken the
 * same). The backward keeps the 0.45 : 0.60 of the forward the flat preset
 * had (Shah et al.: 1.5-1.75x FA2's backward) and the forward's fall. Head
 * size 64: the same figure's panel b (causal, 197 to 473 TFLOP/s from 512 to
 * 16k) gives 0.709 of the head-128 rate at s = 2048 (scripts/fit_flash.py);
 * until 2026-12-05 the presets took 1 here, for the recorded runs' digests
 * (above).
 *
 * cuDNN's fused attention (Transformer Engine's NVTE_FUSED_ATTN=1 backend),
 * the same figure's cuDNN bars: causal R 561.0, s0 388, unmasked 1.104
 * times that with s0 110, head size 64 0.708 at 2k. Its backward is FA3's as
 * above times cuDNN's backward over FA3's in Shah et al. 2024, Fig. 6 (head
 * size 128, fits of the two series' bars: R 541.5 and 591.2): the two
 * kernels' ratio is what the figures give; FA3's own backward level is the
 * assumption above. The cuDNN of that figure (mid-2024) is assumed for
 * later releases. */
#define FA3_FWD (654.8 / 989.4)
#define FA3_BWD (FA3_FWD * 0.45 / 0.60)
#define FA3_HOPPER FA3_FWD, FA3_BWD, 604, 210, 1.022, 0.709
#define CUDNN_HOPPER 561.0 / 989.4, FA3_BWD * 541.5 / 591.2, 388, 110, 619.3 / 561.0, 0.708

#define FA_FIG "Dao 2023, Fig. 4, by sequence"
static const flash_rate flash_rates[] = {
    {"A100", "fa2", FA2_A100, "FA2 (" FA_FIG ")", FA2_HEADS},
    {"A100", "fa1", FA1_A100, "FA1 (" FA_FIG ")", FA1_HEADS},
    {"A100", "triton", TRITON_A100,
     "FlashAttention in Triton: Triton's own kernel for LLM Foundry's, a stand-in (" FA_FIG ")",
     TRITON_HEADS},
    {"H100", "fa2", FA2_HOPPER, "FA2 on H100 (Shah et al. 2024, Figs. 5-6; " FA_FIG ")",
     FA2_HEADS},
    {"H100", "fa1", FA1_HOPPER, "FA1 on H100 (" FA_FIG ")", FA1_HEADS},
    {"H100", "fa3", FA3_HOPPER, "FA3 (Shah et al. 2024, Fig. 5, by sequence)", FA3_HEADS},
    {"H100", "triton", TRITON_HOPPER,
     "FlashAttention in Triton: the A100 stand-in's ratio to FA2 times FA2 on H100, assumed "
     "(" FA_FIG ")",
     TRITON_HEADS},
    {"H100", "cudnn", CUDNN_HOPPER, "cuDNN fused attention (Shah et al. 2024, Figs. 5-6)", NULL},
    {"H200", "fa2", FA2_HOPPER, "FA2 on H100, assumed (Shah et al. 2024; " FA_FIG ")",
     FA2_HEADS},
    {"H200", "fa1", FA1_HOPPER, "FA1 on H100, assumed (" FA_FIG ")", FA1_HEADS},
    {"H200", "fa3", FA3_HOPPER, "FA3 on H100, assumed (Shah et al. 2024, Fig. 5, by sequence)",
     FA3_HEADS},
    {"H200", "triton", TRITON_HOPPER,
     "FlashAttention in Triton: the A100 stand-in's ratio to FA2 times FA2 on H100, assumed "
     "(" FA_FIG ")",
     TRITON_HEADS},
    {"H200", "cudnn", CUDNN_HOPPER,
     "cuDNN fused attention on H100, assumed (Shah et al. 2024, Figs. 5-6)", NULL},
};

/* c and k carry the same fused-attention rates. */
static int same_flash(const sc_cluster *c, const sc_cluster *k)
{
    const sc_cluster_gemm *a = &c->eff.gemm, *b = &k->eff.gemm;
    if (a->flash_fwd != b->flash_fwd || a->flash_bwd != b->flash_bwd ||
        a->flash_s0 != b->flash_s0 || a->flash_s0_full != b->flash_s0_full ||
        a->flash_full != b->flash_full || a->flash_hd64 != b->flash_hd64 ||
        a->flash_s0_bwd != b->flash_s0_bwd || a->flash_s0_full_bwd != b->flash_s0_full_bwd ||
        a->n_flash_heads != b->n_flash_heads)
        return 0;
    for (int i = 0; i < a->n_flash_heads; i++)
        if (a->flash_heads[i] != b->flash_heads[i])
            return 0;
    return 1;
}

const char *sc_cluster_flash_kernel_of(const sc_cluster *c)
{
    const char *k;
    for (int i = 0; (k = sc_cluster_flash_kernel_name(i)); i++) {
        sc_cluster x = *c;
        if (sc_cluster_flash_kernel(&x, k, NULL) == SC_OK && same_flash(c, &x))
            return k;
    }
    return NULL;
}

/* Sets c's fused attention to kernel's rates on c's GPU; the table's entry,
 * or NULL (c unchanged) where none is published. */
static const flash_rate *set_flash(sc_cluster *c, const char *kernel)
{
    const flash_rate *f = NULL;
    for (size_t i = 0; !f && i < SC_ARRAY_LEN(flash_rates); i++)
        if (!strcmp(flash_rates[i].kernel, kernel) && strstr(c->gpu.name, flash_rates[i].gpu))
            f = &flash_rates[i];
    if (!f)
        return NULL;
    c->eff.gemm.flash_fwd = f->fwd;
    c->eff.gemm.flash_bwd = f->bwd;
    c->eff.gemm.flash_s0 = f->s0;
    c->eff.gemm.flash_s0_full = f->s0_full;
    c->eff.gemm.flash_full = f->full;
    c->eff.gemm.flash_hd64 = f->hd64;
    c->eff.gemm.n_flash_heads = 0;
    for (const int *h = f->heads; h && *h && c->eff.gemm.n_flash_heads < SC_FLASH_HEADS_MAX; h++)
        c->eff.gemm.flash_heads[c->eff.gemm.n_flash_heads++] = *h;
    return f;
}

/* The kernels' names, how a table of runs shows them, and what a GPU
 * without their rates is told (where the kernel has rates only on some): one
 * list, which makes the table, the names listed in messages and the
 * refusals. */
#define FLASH_KERNELS(X)                                                                   \
    X("fa1", "flash1", "") X("fa2", "flash2", "")                                          \
    X("fa3", "flash3", " (FlashAttention-3 runs on Hopper GPUs only)")                     \
    X("triton", "triton", "")                                                              \
    X("cudnn", "cudnn", " (cuDNN's fused attention is published for Hopper only)")
#define FLASH_ENTRY(name, label, where) {name, label, where},
#define FLASH_LISTED(name, label, where) ", " name
static const struct {
    const char *name, *label, *where;
} flash_names[] = {FLASH_KERNELS(FLASH_ENTRY)};

const char *sc_cluster_flash_kernel_name(int i)
{
    return i >= 0 && i < (int)SC_ARRAY_LEN(flash_names) ? flash_names[i].name : NULL;
}

static int flash_index(const char *kernel)
{
    for (size_t i = 0; kernel && i < SC_ARRAY_LEN(flash_names); i++)
        if (!strcmp(kernel, flash_names[i].name))
            return (int)i;
    return -1;
}

const char *sc_cluster_flash_kernel_label(const char *kernel)
{
    int i = flash_index(kernel);
    return i < 0 ? NULL : flash_names[i].label;
}

int sc_cluster_flash_kernel_known(const char *kernel)
{
    return sc_cluster_flash_kernel_label(kernel) != NULL;
}

/* "fa1, fa2, fa3, triton, cudnn": the names, each after ", ", less the first ", " */
const char *sc_cluster_flash_kernels(void) { return &FLASH_KERNELS(FLASH_LISTED)[2]; }

sc_status sc_cluster_flash_kernel(sc_cluster *c, const char *kernel, sc_error *err)
{
    if (!sc_cluster_flash_kernel_known(kernel))
        return sc_err(err, SC_EINVAL, "\"%.32s\" is not a fused attention kernel (%s)",
                      kernel ? kernel : "(null)", sc_cluster_flash_kernels());
    if (c->eff.gemm.sms <= 0)
        return sc_err(err, SC_EINVAL,
                      "cluster %s has no kernel-level model (efficiency.gemm): its attention "
                      "is timed whole, not as a %s kernel", c->name, kernel);
    const flash_rate *f = set_flash(c, kernel);
    if (f) {
        /* a kernel set before is replaced, not listed twice */
        char *prior = strstr(c->eff.provenance, "; attention: ");
        if (prior)
            *prior = '\0';
        size_t n = strlen(c->eff.provenance);
        snprintf(c->eff.provenance + n, sizeof c->eff.provenance - n, "; attention: %s",
                 f->source);
        return SC_OK;
    }
    return sc_err(err, SC_EINVAL, "no published %s rate for %s%s", kernel, c->gpu.name,
                  flash_names[flash_index(kernel)].where);
}
