/* cmd_cluster.c - `stagecraft cluster list|show`. */
#include "cli.h"
#include "cli_outputs.h"
#include "cluster.h"
#include "json.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static int is_help(const char *s) { return !strcmp(s, "--help") || !strcmp(s, "-h"); }

static void usage(FILE *f)
{
    fprintf(f, "usage: stagecraft cluster list\n"
               "       stagecraft cluster show NAME|FILE [--nodes N] [--flash K] [--json]\n"
               "                               [-o FILE]\n\n"
               "Lists the cluster presets, or shows a preset or a cluster file\n"
               "(stagecraft.cluster/1): GPUs, links, prices and efficiency parameters.\n\n"
               "  --nodes N   override the node count\n"
               "  --flash K   fused attention at kernel K's published rates on this GPU,\n"
               "              slower on short sequences as benchmarked (Dao 2023,\n"
               "              Shah et al. 2024): fa1 (FlashAttention, 2022), fa2\n"
               "              (FlashAttention-2, Ampere's instructions on Hopper too),\n"
               "              fa3 (FlashAttention-3, Hopper only), triton\n"
               "              (FlashAttention in Triton, 2022-23) or cudnn (cuDNN's\n"
               "              fused attention as of mid-2024, Transformer Engine's\n"
               "              NVTE_FUSED_ATTN=1; Hopper only); a preset has its GPU's\n"
               "              newest (A100 fa2, H100 and H200 fa3); with -o, a cluster\n"
               "              file to plan with\n"
               "  --json      print the cluster JSON instead of the summary\n"
               "  -o FILE     save the cluster JSON to FILE (e.g. a preset to edit)\n");
}

static int cluster_list(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            printf("usage: stagecraft cluster list [--json]\nLists the built-in cluster "
                   "presets (--json: each one's nodes, GPU, memory and prices too).\n");
            return 0;
        }
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else
            return cli_usage("cluster list", "unexpected argument '%s'", argv[i]);
    }
    int n;
    const sc_cluster_preset *p = sc_cluster_presets(&n);
    if (!json) {
        for (int i = 0; i < n; i++)
            printf("%-14s %s\n", p[i].name, p[i].description);
        return 0;
    }
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        sc_cluster c;
        sc_error err = {0};
        if (sc_cluster_preset_get(p[i].name, &c, &err)) {
            cJSON_Delete(arr);
            return cli_fail(&err);
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "name", p[i].name);
        cJSON_AddStringToObject(o, "description", p[i].description);
        cJSON_AddNumberToObject(o, "nodes", c.nodes);
        cJSON_AddNumberToObject(o, "gpus_per_node", c.gpus_per_node);
        cJSON_AddStringToObject(o, "gpu", c.gpu.name);
        cJSON_AddNumberToObject(o, "gpu_memory_bytes", c.gpu.memory_bytes);
        cJSON_AddNumberToObject(o, "on_demand_per_hour", c.price.on_demand_per_hour);
        cJSON_AddNumberToObject(o, "spot_per_hour", c.price.spot_per_hour);
    }
    return cli_print_json(arr);
}

/* "1.56 TB/s" (decimal prefixes, as link and memory rates are quoted) */
static char *rate(double bytes_per_s, char *buf)
{
    static const char *pre[] = {"", "k", "M", "G", "T", "P"};
    int i = 0;
    while (bytes_per_s >= 1000 && i < 5) {
        bytes_per_s /= 1000;
        i++;
    }
    snprintf(buf, 48, "%.4g %sB/s", bytes_per_s, pre[i]);
    return buf;
}

static void show_text(const sc_cluster *c)
{
    char a[48], b[48], d[48];
    printf("%s%s%s\n", c->name, c->description[0] ? ": " : "", c->description);
    printf("  nodes           %d x %d GPUs = %ld GPUs\n", c->nodes, c->gpus_per_node,
           sc_cluster_total_gpus(c));
    printf("  gpu             %s, %s, memory bandwidth %s\n", c->gpu.name,
           cli_bytes(c->gpu.memory_bytes, a), rate(c->gpu.hbm_bytes_per_s, b));
    printf("  peak FLOP/s    ");
    for (int i = 0; i < SC_DTYPE_N; i++)
        printf(" %s %s", sc_dtype_name((sc_dtype)i),
               c->gpu.peak_flops[i] > 0 ? cli_si(c->gpu.peak_flops[i], a) : "-");
    printf("\n");
    printf("  intra-node      %s, %s per GPU per direction, latency %s us\n", c->intra.kind,
           rate(c->intra.bytes_per_s, a), cli_us(c->intra.latency_s, b));
    if (c->inter.nics_per_node > 0)
        printf("  inter-node      %d x %s NICs (%s per node), latency %s us\n",
               c->inter.nics_per_node, rate(c->inter.nic_bytes_per_s, a),
               rate(c->inter.nics_per_node * c->inter.nic_bytes_per_s, b),
               cli_us(c->inter.latency_s, d));
    else
        printf("  inter-node      none\n");
    printf("  price per node  $%.4g/h on demand", c->price.on_demand_per_hour);
    if (c->price.spot_per_hour > 0)
        printf(", $%.4g/h spot (%.3g interruptions/h)", c->price.spot_per_hour,
               c->price.spot_interruptions_per_hour);
    else
        printf(", no spot");
    printf("\n  price cluster   $%.6g/h on demand\n", c->price.on_demand_per_hour * c->nodes);
    printf("  storage         %s\n", rate(c->storage_bytes_per_s, a));
    printf("  efficiency      %s\n", c->eff.provenance);
    for (int i = 0; i < SC_DTYPE_N; i++)
        if (c->gpu.peak_flops[i] > 0)
            printf("    compute %-5s eff_max %.3g, f_half %s FLOPs\n", sc_dtype_name((sc_dtype)i),
                   c->eff.eff_max[i], cli_si(c->eff.f_half[i], a));
    printf("    memory bw     %.3g of peak\n", c->eff.memory_bw);
    for (int l = 0; l < SC_LINK_N; l++) {
        printf("    %s link    alpha %s us, bw_eff %.3g", l == SC_LINK_INTRA ? "intra" : "inter",
               cli_us(c->eff.alpha_s[l], a), c->eff.bw_eff[l]);
        if (c->eff.p2p_bw_eff[l] > 0 || c->eff.ag_rs_bw_eff[l] > 0)
            printf(" (%s)", c->eff.ag_rs_bw_eff[l] > 0 ? "allreduce" : "collectives");
        if (c->eff.ag_rs_bw_eff[l] > 0)
            printf(", ag_rs_bw_eff %.3g (reduce-scatter, all-gather)", c->eff.ag_rs_bw_eff[l]);
        if (c->eff.p2p_bw_eff[l] > 0)
            printf(", p2p_bw_eff %.3g (point-to-point)", c->eff.p2p_bw_eff[l]);
        if (c->eff.s_half_bytes[l] > 0)
            printf(", size ramp s_half %.3g B exp %.3g", c->eff.s_half_bytes[l],
                   c->eff.ramp_exp[l]);
        if (c->eff.cold_bw_eff[l] > 0)
            printf("; cold (data-parallel) alpha %s us, bw_eff %.3g",
                   cli_us(c->eff.cold_alpha_s[l], a), c->eff.cold_bw_eff[l]);
        printf("\n");
        for (int k = 0; k < 2; k++) {
            const sc_size_curve *cv = k ? &c->eff.p2p_curve[l] : &c->eff.coll_curve[l];
            if (cv->n < 1)
                continue;
            printf("      %s size factors (the line's time divided by):", k ? "p2p" : "collectives");
            for (int i = 0; i < cv->n; i++)
                printf("%s %.0f B x%.3g", i ? "," : "", cv->bytes[i], cv->factor[i]);
            printf("\n");
        }
    }
    if (c->eff.gemm.sms > 0) {
        const sc_cluster_gemm *g = &c->eff.gemm;
        char f8[48] = "";
        if (g->eff_max_fp8 > 0)
            snprintf(f8, sizeof f8, " (fp8 %.4g)", g->eff_max_fp8);
        printf("    kernels       %d SMs, GEMM eff_max %.3g%s, flash attention %.3g forward, "
               "%.3g backward of peak, sustained %.3g\n",
               g->sms, g->eff_max, f8, g->flash_fwd, g->flash_bwd,
               g->sustained > 0 ? g->sustained : 1);
        if (g->flash_s0 > 0 || g->flash_s0_full > 0)
            printf("                  flash attention over s keys at s / (s + %.0f) of that "
                   "(causal), %.3g x s / (s + %.0f) without the mask\n",
                   g->flash_s0, g->flash_full > 0 ? g->flash_full : 1, g->flash_s0_full);
        if (g->flash_s0_bwd > 0 || g->flash_s0_full_bwd > 0)
            printf("                  its backward at s / (s + %.0f) (causal), s / (s + %.0f) "
                   "without the mask\n",
                   g->flash_s0_bwd > 0 ? g->flash_s0_bwd : g->flash_s0,
                   g->flash_s0_full_bwd > 0 ? g->flash_s0_full_bwd : g->flash_s0_full);
        if (g->flash_hd64 > 0 && g->flash_hd64 != 1)
            printf("                  flash attention at head size 64 %.3g x that at 128, "
                   "linear in between\n",
                   g->flash_hd64);
        if (g->n_flash_heads > 0) {
            printf("                  flash attention built for head sizes");
            for (int i = 0; i < g->n_flash_heads; i++)
                printf("%s%d", i ? ", " : " ", g->flash_heads[i]);
            printf(" (others run padded to the next)\n");
        }
    }
    if (c->eff.overlap_slowdown > 0)
        printf("    overlap       compute beside a data-parallel collective runs at 1/%.3g of "
               "its rate\n",
               1 + c->eff.overlap_slowdown);
    printf("    op overhead   %s us\n", cli_us(c->eff.op_overhead_s, a));
    printf("    workspace     %s per GPU\n", cli_bytes(c->eff.workspace_bytes, a));
}

static int cluster_show(int argc, char **argv)
{
    static const struct option opts[] = {{"nodes", required_argument, NULL, 'n'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"flash", required_argument, NULL, 'f'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    long nodes = 0;
    int json = 0, ch;
    const char *out = NULL, *flash = NULL;
    if (cli_exact_longopts("cluster show", argc, argv, "ho:", opts))
        return 2;
    optind = 0; /* GNU: reinitialise; options and NAME may come in any order */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (ch) {
        case 'n':
            if (cli_long("cluster show", "--nodes", optarg, 1, SC_CLUSTER_MAX_NODES, &nodes))
                return 2;
            break;
        case 'j':
            json = 1;
            break;
        case 'f':
            if (!sc_cluster_flash_kernel_known(optarg))
                return cli_usage("cluster show", "--flash: '%s' is not one of %s", optarg,
                                 sc_cluster_flash_kernels());
            flash = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return cli_usage("cluster show", "unknown option or missing value '%s'",
                             argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage("cluster show", "missing NAME|FILE (see 'stagecraft cluster list')");
    const char *name = argv[optind++];
    if (optind < argc)
        return cli_usage("cluster show", "unexpected argument '%s'", argv[optind]);
    sc_cluster c;
    sc_error err = {0};
    if (sc_cluster_open(name, &c, &err) || (nodes && sc_cluster_set_nodes(&c, nodes, &err)) ||
        (flash && sc_cluster_flash_kernel(&c, flash, &err)))
        return cli_fail(&err);
    if (out) {
        if (sc_cluster_save(&c, out, &err))
            return cli_fail(&err);
        if (!cli_is_stdout(out))
            fprintf(stderr, "wrote %s: %s, %ld GPUs\n", out, c.name, sc_cluster_total_gpus(&c));
        return 0;
    }
    if (json) {
        cJSON *j = sc_cluster_to_json(&c);
        if (j && sc_json_exact(j)) {
            cJSON_Delete(j);
            j = NULL;
        }
        return cli_print_json(j);
    }
    show_text(&c);
    return 0;
}

int cmd_cluster(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (is_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "list"))
        return cluster_list(argc - 1, argv + 1);
    if (!strcmp(argv[1], "show"))
        return cluster_show(argc - 1, argv + 1);
    return cli_usage("cluster", "unknown subcommand '%s' (list, show)", argv[1]);
}
