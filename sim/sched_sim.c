/* sched_sim.c - a schedule as engine tasks with constant costs (see
 * sched.h). The step builder mirrors this mapping with modelled costs. */
#include "schedule.h"

#include <stdio.h>

sc_status sc_sched_to_sim(const sc_sched *s, const sc_sched_costs *c, sc_sim *sim,
                          const int *rank_resource, int32_t *task_of_op, sc_error *err)
{
    int p = s->p, S = p * s->v, m = s->m;
    if (!(c->tf >= 0 && c->tb >= 0 && c->tw >= 0 && c->t_comm >= 0))
        return sc_err(err, SC_EINVAL, "%s: op costs must be >= 0 (tf=%g tb=%g tw=%g t_comm=%g)",
                      s->impl->name, c->tf, c->tb, c->tw, c->t_comm);
    /* message task of each (direction, mb, receiving stage) */
    size_t keys = (size_t)m * S;
    int32_t *msg = sc_malloc(2 * keys * sizeof *msg);
    int *res = sc_malloc((size_t)p * sizeof *res);
    int32_t *own = task_of_op ? NULL : sc_malloc(((size_t)s->off[p] + 1) * sizeof *own);
    if (!msg || !res || (!task_of_op && !own)) {
        sc_free(msg), sc_free(res), sc_free(own);
        return sc_err(err, SC_ENOMEM, "%s: out of memory building the simulation",
                      s->impl->name);
    }
    for (size_t k = 0; k < 2 * keys; k++)
        msg[k] = -1;
    for (int r = 0; r < p; r++) {
        if (rank_resource) {
            res[r] = rank_resource[r];
        } else {
            char name[32];
            snprintf(name, sizeof name, "rank%d", r);
            res[r] = sc_sim_add_resource(sim, name);
        }
    }
    sc_sim_reserve(sim, sc_sim_task_count(sim) + s->off[p] * 3 / 2, s->off[p]);
    /* Sends first: a pass over every list creates all message tasks, so a
     * RECV can name its message whatever the rank order. */
    int32_t *task = task_of_op ? task_of_op : own;
    for (int r = 0; r < p; r++) {
        for (int i = s->off[r]; i < s->off[r + 1]; i++) {
            sc_sched_op o = s->ops[i];
            double d = 0;
            if (o.kind == SC_OP_F)
                d = c->tf;
            else if (o.kind == SC_OP_B)
                d = c->tb;
            else if (o.kind == SC_OP_W)
                d = c->tw;
            sc_sim_tag tag = {o.kind, r, sc_sched_stage(s, r, o.chunk), o.chunk, o.mb, NULL};
            int t = sc_sim_add_compute(sim, res[r], d, &tag);
            if (task)
                task[i] = t;
            if (t >= 0 && (o.kind == SC_OP_SEND_F || o.kind == SC_OP_SEND_B)) {
                int stg = sc_sched_stage(s, r, o.chunk);
                size_t k = o.kind == SC_OP_SEND_F ? (size_t)o.mb * S + stg + 1
                                                  : keys + (size_t)o.mb * S + stg - 1;
                tag.kind = -1; /* the message in flight */
                int mt = sc_sim_add_compute(sim, -1, c->t_comm, &tag);
                sc_sim_add_dep(sim, t, mt);
                msg[k] = mt;
            }
        }
    }
    sc_status st = sc_sim_status(sim, err);
    for (int r = 0; r < p && st == SC_OK; r++) {
        for (int i = s->off[r]; i < s->off[r + 1] && st == SC_OK; i++) {
            sc_sched_op o = s->ops[i];
            if (o.kind != SC_OP_RECV_F && o.kind != SC_OP_RECV_B)
                continue;
            int stg = sc_sched_stage(s, r, o.chunk);
            size_t k = (o.kind == SC_OP_RECV_F ? 0 : keys) + (size_t)o.mb * S + stg;
            if (msg[k] < 0) {
                st = sc_err(err, SC_EINVAL, "%s: rank %d %s(mb=%d, chunk=%d) has no matching send",
                            s->impl->name, r, sc_op_kind_name(o.kind), o.mb, o.chunk);
                break;
            }
            sc_sim_add_dep(sim, msg[k], task[i]);
        }
    }
    if (st == SC_OK)
        st = sc_sim_status(sim, err);
    sc_free(msg);
    sc_free(res);
    sc_free(own);
    return st;
}

sc_status sc_sched_simulate(const sc_sched *s, const sc_sched_costs *c, double *makespan,
                            sc_error *err)
{
    sc_sim *sim;
    sc_status st = sc_sim_new(&sim, err);
    if (st)
        return st;
    st = sc_sched_to_sim(s, c, sim, NULL, NULL, err);
    if (st == SC_OK)
        st = sc_sim_run(sim, err);
    if (st == SC_OK)
        *makespan = sc_sim_makespan(sim);
    sc_sim_free(sim);
    return st;
}
