/* overhead.c - the framework overheads (overhead.h). */
#include "overhead.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Fitted by `stagecraft validate --fit-overhead` on the shipped suites (the
 * even rows of each framework, overhead.h); tests/test_validate.c
 * (validate_overhead_fit) refits them and fails when a value here differs
 * from the fit by more than 0.002, so a change to the cost model that moves
 * the fit must refit the table. */
#define SC_OVERHEAD_DEEPSPEED 0.3463
#define SC_OVERHEAD_TORCH 0.0589

static const sc_overhead table[] = {
    {"megatron", 0.0, 0, "none: Megatron-LM's own rows check the kernel model"},
    {"deepspeed", SC_OVERHEAD_DEEPSPEED, 2,
     "rows 0 and 2 of the deepspeed rows: bloom-176b-384gpu, mtnlg2022/530b-350-nodes"},
    {"torch", SC_OVERHEAD_TORCH, 16,
     "the even rows of the torch rows: 2 of fms_fsdp2024's 4 (IBM's fms-fsdp, PyTorch "
     "FSDP), 9 of mpt_llmfoundry's 17 (LLM Foundry on PyTorch FSDP), 2 of "
     "tridao_flashattn2022's 5 and 3 of tridao_flashattn2_2023's 6 (the flash-attention "
     "repository's training code, PyTorch DDP)"},
};

const sc_overhead *sc_overheads(int *n)
{
    *n = (int)(sizeof table / sizeof table[0]);
    return table;
}

const sc_overhead *sc_overhead_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].framework, name))
            return &table[i];
    return NULL;
}

sc_status sc_overhead_set(sc_cluster *c, const char *name, double frac, sc_error *err)
{
    if (!(frac >= 0 && frac < 10))
        return sc_err(err, SC_EINVAL, "framework overhead %g must be in [0, 10)", frac);
    if (!name || !strcmp(name, "any")) {
        c->framework[0] = '\0';
        c->framework_overhead = frac;
        return SC_OK;
    }
    if (strlen(name) >= sizeof c->framework)
        return sc_err(err, SC_EINVAL, "framework \"%.32s\" is too long", name);
    snprintf(c->framework, sizeof c->framework, "%s", name);
    c->framework_overhead = frac;
    return SC_OK;
}

sc_status sc_overhead_apply(sc_cluster *c, const char *name, const char *what, sc_error *err)
{
    if (!name || !strcmp(name, "any"))
        return sc_overhead_set(c, NULL, 0, err);
    const sc_overhead *o = sc_overhead_find(name);
    if (!o)
        return sc_err(err, SC_EINVAL, "%s: \"%.32s\" is not a framework (megatron, deepspeed, "
                                      "torch or any)", what, name);
    return sc_overhead_set(c, o->framework, o->compute, err);
}
