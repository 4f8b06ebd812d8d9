/* sched.c - the schedule registry, communication insertion, the symbolic
 * deadlock checker and the in-flight activation walk (see sched.h). */
#include "schedule.h"

#include <stdio.h>
#include <string.h>

struct sc_sched_sink {
    sc_sched_op *ops;
    int n, cap;
};

const sc_sched_impl *const sc_sched_all[] = {&sc_sched_gpipe, &sc_sched_1f1b,
                                             &sc_sched_interleaved, &sc_sched_zbh1, NULL};

const sc_sched_impl *sc_sched_find(const char *name)
{
    for (int i = 0; name && sc_sched_all[i]; i++)
        if (!strcmp(sc_sched_all[i]->name, name))
            return sc_sched_all[i];
    return NULL;
}

static int valid_kind(int k)
{
    return k == SC_OP_F || k == SC_OP_B || k == SC_OP_W || k == SC_OP_SEND_F ||
           k == SC_OP_RECV_F || k == SC_OP_SEND_B || k == SC_OP_RECV_B;
}

static int push_op(sc_sched_sink *s, int kind, int mb, int chunk, int peer)
{
    if (s->n == s->cap) {
        int nc = s->cap ? s->cap * 2 : 64;
        sc_sched_op *o = sc_realloc(s->ops, (size_t)nc * sizeof *o);
        if (!o)
            return -1;
        s->ops = o;
        s->cap = nc;
    }
    s->ops[s->n++] = (sc_sched_op){mb, peer, (int16_t)chunk, (uint8_t)kind, 0};
    return 0;
}

sc_status sc_sched_emit(sc_sched_sink *sink, sc_op_kind kind, int mb, int chunk)
{
    return push_op(sink, kind, mb, chunk, -1) ? SC_ENOMEM : SC_OK;
}

void sc_sched_free(sc_sched *s)
{
    if (!s)
        return;
    sc_free(s->off);
    sc_free(s->ops);
    sc_free(s);
}

const sc_sched_op *sc_sched_rank_ops(const sc_sched *s, int rank, int *n)
{
    *n = s->off[rank + 1] - s->off[rank];
    return s->ops + s->off[rank];
}

/* Token slices (TeraPipe, Li et al. 2021): the m·k units u = mb·k + j
 * (slice j of microbatch mb) of gpipe or 1f1b. Forwards run in unit order
 * (slice j after j-1 of the same sequence: it reads their keys and values);
 * backwards in microbatch order with the slices of each reversed (slice j's
 * key and value gradients come from the later slices). gpipe: every
 * forward, then every backward. 1f1b: before its i-th backward rank r has
 * run i + k - 1 + p - r forwards: 1F1B's warm-up (p - r - 1, then one
 * forward per backward) plus k - 1, because a sequence's last slice goes
 * back first; with k = 1 it is 1f1b. Both idle (p - 1)/(m·k + p - 1) of a
 * step with equal slice costs (tests/test_slices.c). */
typedef struct sliced_gen {
    int k;
    int gpipe;
} sliced_gen;

static int bwd_unit(int i, int k)
{
    return (i / k) * k + (k - 1 - i % k);
}

static sc_status gen_sliced(int p, int M, int v, int rank, sc_sched_sink *sink,
                            const sliced_gen *g)
{
    (void)v;
    int fi = 0, bi = 0;
    if (g->gpipe) {
        for (; fi < M; fi++)
            if (sc_sched_emit(sink, SC_OP_F, fi, 0))
                return SC_ENOMEM;
        for (; bi < M; bi++)
            if (sc_sched_emit(sink, SC_OP_B, bwd_unit(bi, g->k), 0))
                return SC_ENOMEM;
        return SC_OK;
    }
    /* 1F1B's rule over units, warmed up k - 1 units more (see above) */
    for (; bi < M; bi++) {
        int u = bwd_unit(bi, g->k);
        int a = bi + g->k - 1 + p - rank; /* forwards run before the bi-th backward */
        int need = a < M ? a : M;
        for (; fi < need; fi++)
            if (sc_sched_emit(sink, SC_OP_F, fi, 0))
                return SC_ENOMEM;
        if (sc_sched_emit(sink, SC_OP_B, u, 0))
            return SC_ENOMEM;
    }
    return SC_OK;
}

static sc_status generate_any(const char *name, int p, int m, int v, const sliced_gen *g,
                              sc_sched **out, sc_error *err);

sc_status sc_sched_generate(const char *name, int p, int m, int v, sc_sched **out,
                            sc_error *err)
{
    return generate_any(name, p, m, v, NULL, out, err);
}

sc_status sc_sched_generate_sliced(const char *name, int p, int m, int k, int v, sc_sched **out,
                                   sc_error *err)
{
    if (k <= 1)
        return generate_any(name, p, m, v, NULL, out, err);
    *out = NULL;
    int gp = name && !strcmp(name, "gpipe"), f1 = name && !strcmp(name, "1f1b");
    if (!gp && !f1)
        return sc_err(err, SC_EINVAL,
                      "token slices run with gpipe or 1f1b, not %s (--slices %d)",
                      name ? name : "(null)", k);
    if (m < 1 || (long long)m * k > 50000000LL)
        return sc_err(err, SC_EINVAL, "slices: %d microbatches x %d slices is out of range", m,
                      k);
    sliced_gen g = {k, gp};
    sc_status st = generate_any(name, p, m * k, v, &g, out, err);
    if (!st)
        (*out)->slices = k;
    return st;
}

static sc_status generate_any(const char *name, int p, int m, int v, const sliced_gen *g,
                              sc_sched **out, sc_error *err)
{
    *out = NULL;
    const sc_sched_impl *impl = sc_sched_find(name);
    if (!impl) {
        char known[256] = "";
        for (int i = 0; sc_sched_all[i]; i++) {
            if (i)
                strncat(known, ", ", sizeof known - strlen(known) - 1);
            strncat(known, sc_sched_all[i]->name, sizeof known - strlen(known) - 1);
        }
        return sc_err(err, SC_ENOTFOUND, "unknown schedule '%s' (known: %s)",
                      name ? name : "(null)", known);
    }
    if (p < 1 || m < 1 || v < 1)
        return sc_err(err, SC_EINVAL, "%s needs pipeline stages, microbatches and chunks >= 1 "
                      "(pp=%d, m=%d, v=%d)", impl->name, p, m, v);
    if ((long long)p * m * v > 50000000LL || v > 32767)
        return sc_err(err, SC_EINVAL, "%s: pp*m*v = %lld is too large", impl->name,
                      (long long)p * m * v);
    char buf[512];
    const char *msg = impl->validate(p, m, v, buf, sizeof buf);
    if (msg)
        return sc_err(err, SC_EINVAL, "%s", msg);

    sc_sched *s = sc_calloc(1, sizeof *s);
    sc_sched_sink one = {0}, all = {0};
    if (!s || !(s->off = sc_malloc(((size_t)p + 1) * sizeof *s->off)))
        goto nomem;
    s->impl = impl;
    s->p = p, s->m = m, s->v = v;
    int S = p * v;
    for (int r = 0; r < p; r++) {
        s->off[r] = all.n;
        one.n = 0;
        sc_status st = g ? gen_sliced(p, m, v, r, &one, g) : impl->generate(p, m, v, r, &one);
        if (st == SC_ENOMEM)
            goto nomem;
        if (st != SC_OK) {
            sc_free(one.ops), sc_free(all.ops), sc_sched_free(s);
            return sc_err(err, st, "%s: generating rank %d failed", impl->name, r);
        }
        for (int i = 0; i < one.n; i++) {
            sc_sched_op o = one.ops[i];
            if (o.kind > SC_OP_W || o.mb < 0 || o.mb >= m || o.chunk < 0 || o.chunk >= v ||
                (o.kind == SC_OP_W && !impl->split_backward)) {
                sc_free(one.ops), sc_free(all.ops), sc_sched_free(s);
                return sc_err(err, SC_EINVAL, "%s: rank %d op %d is out of range (%s mb=%d "
                              "chunk=%d)", impl->name, r, i, sc_op_kind_name(o.kind), o.mb,
                              o.chunk);
            }
            int st_ = sc_sched_stage(s, r, o.chunk), bad = 0;
            if (o.kind == SC_OP_F) {
                if (st_ > 0)
                    bad |= push_op(&all, SC_OP_RECV_F, o.mb, o.chunk, (st_ - 1) % p);
                bad |= push_op(&all, SC_OP_F, o.mb, o.chunk, -1);
                if (st_ < S - 1)
                    bad |= push_op(&all, SC_OP_SEND_F, o.mb, o.chunk, (st_ + 1) % p);
            } else if (o.kind == SC_OP_B) {
                if (st_ < S - 1)
                    bad |= push_op(&all, SC_OP_RECV_B, o.mb, o.chunk, (st_ + 1) % p);
                bad |= push_op(&all, SC_OP_B, o.mb, o.chunk, -1);
                if (st_ > 0)
                    bad |= push_op(&all, SC_OP_SEND_B, o.mb, o.chunk, (st_ - 1) % p);
            } else {
                bad |= push_op(&all, SC_OP_W, o.mb, o.chunk, -1);
            }
            if (bad)
                goto nomem;
        }
    }
    s->off[p] = all.n;
    s->ops = all.ops;
    sc_free(one.ops);
    *out = s;
    return SC_OK;
nomem:
    sc_free(one.ops);
    sc_free(all.ops);
    sc_sched_free(s);
    return sc_err(err, SC_ENOMEM, "%s: out of memory generating the schedule (pp=%d, m=%d, v=%d)",
                  impl->name, p, m, v);
}

/* ---- checking ---------------------------------------------------------- */

static sc_status check_rank(const sc_sched *s, int r, int32_t *pos, sc_error *err)
{
    int p = s->p, m = s->m, v = s->v, S = p * v, n;
    const sc_sched_op *ops = sc_sched_rank_ops(s, r, &n);
    const char *nm = s->impl->name;
    for (int i = 0; i < 3 * m * v; i++)
        pos[i] = -1;
    for (int i = 0; i < n; i++) {
        sc_sched_op o = ops[i];
        const char *k = sc_op_kind_name(o.kind);
        if (!valid_kind(o.kind) || o.mb < 0 || o.mb >= m || o.chunk < 0 || o.chunk >= v)
            return sc_err(err, SC_EINVAL, "%s: rank %d op %d (%s mb=%d chunk=%d) is out of "
                          "range", nm, r, i, k, o.mb, o.chunk);
        int st = sc_sched_stage(s, r, o.chunk);
        int comp = o.kind <= SC_OP_W;
        if (comp) {
            int32_t *slot = &pos[(o.kind * v + o.chunk) * m + o.mb];
            if (*slot >= 0)
                return sc_err(err, SC_EINVAL, "%s: rank %d runs %s(mb=%d, chunk=%d) twice (ops "
                              "%d and %d)", nm, r, k, o.mb, o.chunk, *slot, i);
            *slot = i;
            if (o.peer != -1)
                return sc_err(err, SC_EINVAL, "%s: rank %d op %d: compute op with a peer", nm,
                              r, i);
        }
        /* where communication must sit, from both sides */
        int want_before = -1, want_after = -1; /* comm kinds expected around compute */
        if (o.kind == SC_OP_F) {
            want_before = st > 0 ? SC_OP_RECV_F : -1;
            want_after = st < S - 1 ? SC_OP_SEND_F : -1;
        } else if (o.kind == SC_OP_B) {
            want_before = st < S - 1 ? SC_OP_RECV_B : -1;
            want_after = st > 0 ? SC_OP_SEND_B : -1;
        }
        if (comp) {
            int has_before = i > 0 && (ops[i - 1].kind == SC_OP_RECV_F ||
                                       ops[i - 1].kind == SC_OP_RECV_B);
            int has_after = i + 1 < n && (ops[i + 1].kind == SC_OP_SEND_F ||
                                          ops[i + 1].kind == SC_OP_SEND_B);
            if ((want_before >= 0) != has_before || (want_after >= 0) != has_after)
                return sc_err(err, SC_EINVAL, "%s: rank %d op %d %s(mb=%d, chunk=%d, stage %d): "
                              "receive/send not placed right before/after it", nm, r, i, k,
                              o.mb, o.chunk, st);
            continue;
        }
        int target = o.kind == SC_OP_RECV_F || o.kind == SC_OP_SEND_F ? SC_OP_F : SC_OP_B;
        int j = o.kind == SC_OP_RECV_F || o.kind == SC_OP_RECV_B ? i + 1 : i - 1;
        int peer_stage = o.kind == SC_OP_RECV_F || o.kind == SC_OP_SEND_B ? st - 1 : st + 1;
        if (j < 0 || j >= n || ops[j].kind != target || ops[j].mb != o.mb ||
            ops[j].chunk != o.chunk)
            return sc_err(err, SC_EINVAL, "%s: rank %d op %d %s(mb=%d, chunk=%d) is not next to "
                          "the %s it serves", nm, r, i, k, o.mb, o.chunk,
                          sc_op_kind_name(target));
        if (peer_stage < 0 || peer_stage >= S || o.peer != peer_stage % p)
            return sc_err(err, SC_EINVAL, "%s: rank %d op %d %s(mb=%d, chunk=%d): peer %d, "
                          "expected the rank of stage %d", nm, r, i, k, o.mb, o.chunk, o.peer,
                          peer_stage);
    }
    for (int c = 0; c < v; c++)
        for (int mb = 0; mb < m; mb++) {
            int f = pos[(SC_OP_F * v + c) * m + mb], b = pos[(SC_OP_B * v + c) * m + mb];
            int w = pos[(SC_OP_W * v + c) * m + mb];
            if (f < 0 || b < 0)
                return sc_err(err, SC_EINVAL, "%s: rank %d never runs %s(mb=%d, chunk=%d)", nm,
                              r, f < 0 ? "F" : "B", mb, c);
            if (b < f)
                return sc_err(err, SC_EINVAL, "%s: rank %d runs B(mb=%d, chunk=%d) before its F",
                              nm, r, mb, c);
            if (s->impl->split_backward && w < 0)
                return sc_err(err, SC_EINVAL, "%s: rank %d never runs W(mb=%d, chunk=%d)", nm,
                              r, mb, c);
            if (w >= 0 && w < b)
                return sc_err(err, SC_EINVAL, "%s: rank %d runs W(mb=%d, chunk=%d) before its B",
                              nm, r, mb, c);
        }
    return SC_OK;
}

sc_status sc_sched_check(const sc_sched *s, sc_error *err)
{
    int p = s->p, m = s->m, v = s->v, S = p * v;
    size_t keys = (size_t)m * S;
    int32_t *pos = sc_malloc((size_t)3 * m * v * sizeof *pos);
    /* per message key (mb, receiving stage), for F and B directions: 1 sent,
     * 2 received */
    uint8_t *msgF = sc_calloc(keys, 1), *msgB = sc_calloc(keys, 1);
    int32_t *ptr = sc_malloc((size_t)p * sizeof *ptr);
    sc_status st = SC_OK;
    if (!pos || !msgF || !msgB || !ptr) {
        st = sc_err(err, SC_ENOMEM, "%s: out of memory checking the schedule", s->impl->name);
        goto out;
    }
    for (int r = 0; r < p && st == SC_OK; r++)
        st = check_rank(s, r, pos, err);
    if (st)
        goto out;
    /* Symbolic run: each pass lets every rank run until it reaches a RECV
     * whose SEND has not been posted; no progress in a pass = deadlock. */
    long left = s->off[p];
    for (int r = 0; r < p; r++)
        ptr[r] = s->off[r];
    while (left > 0) {
        long progress = 0;
        for (int r = 0; r < p; r++) {
            while (ptr[r] < s->off[r + 1]) {
                sc_sched_op o = s->ops[ptr[r]];
                int stg = sc_sched_stage(s, r, o.chunk);
                if (o.kind == SC_OP_RECV_F || o.kind == SC_OP_RECV_B) {
                    uint8_t *k = o.kind == SC_OP_RECV_F ? &msgF[(size_t)o.mb * S + stg]
                                                        : &msgB[(size_t)o.mb * S + stg];
                    if (*k == 0)
                        break; /* blocked */
                    if (*k == 2) {
                        st = sc_err(err, SC_EINVAL, "%s: rank %d receives %s(mb=%d, chunk=%d) "
                                    "twice", s->impl->name, r, sc_op_kind_name(o.kind), o.mb,
                                    o.chunk);
                        goto out;
                    }
                    *k = 2;
                } else if (o.kind == SC_OP_SEND_F || o.kind == SC_OP_SEND_B) {
                    uint8_t *k = o.kind == SC_OP_SEND_F ? &msgF[(size_t)o.mb * S + stg + 1]
                                                        : &msgB[(size_t)o.mb * S + stg - 1];
                    if (*k) {
                        st = sc_err(err, SC_EINVAL, "%s: rank %d sends %s(mb=%d, chunk=%d) "
                                    "twice", s->impl->name, r, sc_op_kind_name(o.kind), o.mb,
                                    o.chunk);
                        goto out;
                    }
                    *k = 1;
                }
                ptr[r]++;
                left--;
                progress++;
            }
        }
        if (!progress) {
            for (int r = 0; r < p; r++)
                if (ptr[r] < s->off[r + 1]) {
                    sc_sched_op o = s->ops[ptr[r]];
                    st = sc_err(err, SC_EINVAL, "%s: deadlock: rank %d waits forever at op %d "
                                "%s(mb=%d, chunk=%d) from rank %d", s->impl->name, r,
                                ptr[r] - s->off[r], sc_op_kind_name(o.kind), o.mb, o.chunk,
                                o.peer);
                    break;
                }
            goto out;
        }
    }
    for (size_t k = 0; k < keys; k++)
        if (msgF[k] == 1 || msgB[k] == 1) {
            st = sc_err(err, SC_EINVAL, "%s: a %s message (mb=%d, to stage %d) is never received",
                        s->impl->name, msgF[k] == 1 ? "forward" : "backward", (int)(k / S),
                        (int)(k % S));
            break;
        }
out:
    sc_free(pos), sc_free(msgF), sc_free(msgB), sc_free(ptr);
    return st;
}

sc_status sc_sched_peak_inflight(const sc_sched *s, int *peak)
{
    for (int r = 0; r < s->p; r++) {
        int n, held = 0, best = 0;
        const sc_sched_op *ops = sc_sched_rank_ops(s, r, &n);
        for (int i = 0; i < n; i++) {
            if (ops[i].kind == SC_OP_F) {
                if (++held > best)
                    best = held;
            } else if (ops[i].kind == (s->impl->split_backward ? SC_OP_W : SC_OP_B)) {
                held--;
            }
        }
        peak[r] = best;
    }
    return SC_OK;
}
