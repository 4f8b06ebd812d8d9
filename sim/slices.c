/* slices.c - TeraPipe's dynamic programme over token slices (slices.h). */
#include "slices.h"

#include <math.h>
#include <string.h>

#include "cost.h"
#include "partition.h"

#define GRID_MAX 32

/* The slowest stage's forward + backward (+ recompute) of the slice of
 * tokens [y, x) of a sequence of n grains. */
static sc_status slice_cost(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                            const sc_partition *part, sc_stage_info *info, int y, int x, int n,
                            double *t, sc_error *err)
{
    /* a framework's gradient work (fsdp) is each slice's whole, as the
     * lowering charges it (every slice's backward reduce-scatters) */
    sc_stage_cfg sc = sc_step_stage_cfg(m, cfg);
    sc.q_frac = (double)(x - y) / n;
    sc.kv_frac = (double)x / n;
    sc_status st = sc_cost_stage(c, m, part, &sc, info, err);
    if (st)
        return st;
    double worst = 0;
    for (int s = 0; s < part->n_stages; s++) {
        double v = info[s].fwd_s + info[s].bwd_s + info[s].recompute_s;
        worst = v > worst ? v : worst;
    }
    *t = worst;
    return SC_OK;
}

static double simulate(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg, int k,
                       const int *len, sc_error *err, sc_status *st)
{
    sc_step_cfg x = *cfg;
    x.slices = k;
    x.slice_len = len;
    x.want_timeline = 0;
    sc_step_result *r = NULL;
    *st = sc_step_simulate(m, c, &x, &r, err);
    double t = *st ? 0 : r->step_time_s;
    sc_step_result_free(r);
    return t;
}

sc_status sc_slices_auto(const sc_model *m, const sc_cluster *c, const sc_step_cfg *cfg,
                         sc_slicing *out, sc_error *err)
{
    memset(out, 0, sizeof *out);
    int s = m->seq_len;
    /* the grain: the most positions (<= GRID_MAX) that divide the sequence */
    int n = 1;
    for (int d = GRID_MAX < s ? GRID_MAX : s; d >= 1; d--)
        if (s % d == 0) {
            n = d;
            break;
        }
    sc_step_cfg probe = *cfg;
    probe.slices = n > 1 ? n : 2;
    probe.slice_len = NULL;
    sc_status st = n > 1 ? sc_step_check_slices(m, &probe, err)
                         : sc_err(err, SC_EINVAL, "--slices auto: a sequence of %d token "
                                  "cannot be sliced", s);
    if (st)
        return st;
    sc_partition own = {0};
    const sc_partition *part = cfg->partition;
    if (!part) {
        if ((st = sc_partition_uniform(m, cfg->pp * cfg->v, &own, err)))
            return st;
        part = &own;
    }
    double t[GRID_MAX + 1][GRID_MAX + 1];
    sc_stage_info *info = sc_calloc((size_t)part->n_stages, sizeof *info);
    if (!info)
        st = sc_err(err, SC_ENOMEM, "slices: out of memory");
    for (int y = 0; !st && y < n; y++)
        for (int x = y + 1; !st && x <= n; x++)
            st = slice_cost(m, c, cfg, part, info, y, x, n, &t[y][x], err);
    sc_free(info);
    if (own.first)
        sc_partition_free(&own);
    if (st)
        return st;
    /* every candidate bound on the largest slice */
    double best_T = HUGE_VAL;
    int best_cut[GRID_MAX + 1], best_k = 0;
    for (int by = 0; by < n; by++)
        for (int bx = by + 1; bx <= n; bx++) {
            double bound = t[by][bx], f[GRID_MAX + 1];
            int from[GRID_MAX + 1];
            f[0] = 0;
            for (int x = 1; x <= n; x++) {
                f[x] = HUGE_VAL;
                from[x] = -1;
                for (int y = 0; y < x; y++)
                    if (t[y][x] <= bound && f[y] + t[y][x] < f[x]) {
                        f[x] = f[y] + t[y][x];
                        from[x] = y;
                    }
            }
            if (!isfinite(f[n]))
                continue;
            double T = cfg->m * f[n] + (cfg->pp - 1) * bound;
            if (T < best_T) {
                int cut[GRID_MAX + 1], k = 0;
                for (int x = n; x > 0; x = from[x])
                    cut[k++] = x;
                if (k > SC_SLICES_MAX)
                    continue;
                best_T = T;
                best_k = k;
                for (int i = 0; i < k; i++) /* ascending ends */
                    best_cut[i] = cut[k - 1 - i];
            }
        }
    int g = s / n;
    out->k = best_k;
    for (int i = 0, prev = 0; i < best_k; i++) {
        out->len[i] = (best_cut[i] - prev) * g;
        prev = best_cut[i];
    }
    out->model_s = best_T;
    /* the best equal slicing by the same formula, then both simulated */
    double eq_T = HUGE_VAL;
    int eq_k = 1;
    for (int k = 1; k <= n; k++) {
        if (n % k)
            continue;
        int w = n / k;
        double sum = 0, mx = 0;
        for (int j = 0; j < k; j++) {
            double v = t[j * w][(j + 1) * w];
            sum += v;
            mx = v > mx ? v : mx;
        }
        double T = cfg->m * sum + (cfg->pp - 1) * mx;
        if (T < eq_T) {
            eq_T = T;
            eq_k = k;
        }
    }
    out->equal_k = eq_k;
    out->step_s = simulate(m, c, cfg, out->k, out->len, err, &st);
    if (st)
        return st;
    out->equal_step_s = out->step_s;
    int eq[SC_SLICES_MAX];
    int same = eq_k == out->k;
    for (int j = 0; j < eq_k && eq_k <= SC_SLICES_MAX; j++) {
        eq[j] = s / eq_k;
        same = same && eq[j] == out->len[j];
    }
    if (!same && eq_k <= SC_SLICES_MAX) {
        out->equal_step_s = simulate(m, c, cfg, eq_k, eq, err, &st);
        if (st)
            return st;
        if (out->equal_step_s < out->step_s) {
            out->k = eq_k;
            memcpy(out->len, eq, sizeof(int) * (size_t)eq_k);
            out->step_s = out->equal_step_s;
            out->equal = 1;
        }
    } else {
        out->equal = same;
    }
    return SC_OK;
}
