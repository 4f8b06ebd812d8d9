/* partition.h - which leaves of the model each (virtual) stage holds.
 *
 * A partition of S stages splits the model's leaves, in execution order, into
 * S contiguous non-empty ranges: stage s holds leaves [first[s], first[s+1]).
 * In an interleaved schedule S = pp·v and virtual stage c·pp + r lives on
 * pipeline rank r (Megatron-LM's assignment).
 *
 * Ownership: a filled partition owns its array; free with
 * sc_partition_free (safe on a zeroed or already-freed partition).
 */
#ifndef SC_PARTITION_H
#define SC_PARTITION_H

#include "model.h"
#include "sc.h"

typedef struct sc_partition {
    int n_stages;
    int *first; /* n_stages + 1 entries; first[n_stages] = number of leaves */
} sc_partition;

/* Equal numbers of layers per stage: a layer is an outermost module of kind
 * "block" (every leaf when the model has none). Leaves before the first
 * layer go with stage 0, leaves after the last with the last stage, leaves
 * between layers with the layer before them. When S does not divide the
 * layer count, the first (count mod S) stages get one layer more.
 * SC_EINVAL when there are fewer layers than stages. O(n). */
sc_status sc_partition_uniform(const sc_model *m, int n_stages, sc_partition *out,
                               sc_error *err);
/* Stages begin at the given leaf positions: starts[] holds the first leaf of
 * stages 1..S-1 (n = S-1 entries, strictly increasing, inside (0, leaves)). */
sc_status sc_partition_explicit(const sc_model *m, int n_stages, const int *starts, int n,
                                sc_partition *out, sc_error *err);
/* "uniform" or "B1,B2,..." (leaf positions as in sc_partition_explicit). */
sc_status sc_partition_parse(const char *spec, const sc_model *m, int n_stages,
                             sc_partition *out, sc_error *err);
/* Layers as sc_partition_uniform counts them (outermost "block" modules, or
 * every leaf when there are none). */
int sc_partition_layers(const sc_model *m);
/* The layer holding leaf: its outermost ancestor of kind "block" (itself
 * when it is one), or NULL when no block holds it. The one definition of a
 * layer that the partitioners, the send bytes (sc_cost_cut_bytes) and the
 * exports use. O(depth). */
const sc_module *sc_partition_layer_of(const sc_module *leaf);
/* Whether full recompute re-runs leaf: it lies in a layer, or its model has
 * none (has_layers: sc_model's); the embedding, final norm, LM head and loss
 * run once, as Megatron-LM's, FSDP's and DeepSpeed's checkpointing wrap the
 * layers. The one rule of the cost model (sc_stage_info recompute_full_s), the
 * memory model, the partitioner and the executor. O(depth). */
int sc_partition_recomputed(int has_layers, const sc_module *leaf);
/* Whether a stage may begin at leaf b (0 < b < leaves) and still cut only
 * between layers: leaves b-1 and b do not lie in the same layer. */
int sc_partition_between_layers(const sc_model *m, int b);
/* Names of the stage's first and last leaves, for printing. */
const char *sc_partition_first_name(const sc_model *m, const sc_partition *p, int s);
const char *sc_partition_last_name(const sc_model *m, const sc_partition *p, int s);
/* Stage of a leaf (binary search, O(log S)). */
int sc_partition_stage_of(const sc_partition *p, int leaf);
void sc_partition_free(sc_partition *p);

#endif
