/* export.h - a plan as the files a training framework needs to run it:
 * Megatron-LM's launch scripts, DeepSpeed's config and pipeline module
 * arguments, a torch.distributed.pipelining program.
 *
 * One target per file (export_megatron.c, export_deepspeed.c,
 * export_torch.c), each filling one sc_export_target, listed in
 * sc_export_targets (export.c). A target reads the plan and its model and
 * either writes its files or refuses: SC_ENOTSUP with one line naming the
 * plan file, the framework and the feature it cannot run ("plan.json:
 * DeepSpeed cannot run this plan: the interleaved schedule (v=2 chunks per
 * rank): its pipeline engine holds one contiguous stage per rank").
 *
 * Every export carries the notes of what the framework will do differently
 * from the plan (the schedule it runs, the tied embedding, the bucket size,
 * ...): they head the main file as comments and are in sc_export_to_json.
 * Each target names the framework version its flags and API were checked
 * against (`checked`).
 *
 * Layers. Stage boundaries are mapped onto the model's layers: a layer is an
 * outermost module of kind "block" (as sc_partition_layers counts them);
 * every leaf outside a block is a unit of its own (embedding, final norm,
 * head). Megatron-LM and DeepSpeed cut only between units: a plan whose
 * stage begins inside a block is refused, naming the stage and the leaf.
 *
 * Ownership: sc_export_make returns an export the caller frees with
 * sc_export_free (NULL ok); it holds copies of everything it needs, so the
 * plan and model may be freed first. sc_export_to_json returns a tree the
 * caller frees with cJSON_Delete.
 */
#ifndef SC_EXPORT_H
#define SC_EXPORT_H

#include <cjson/cJSON.h>
#include "model.h"
#include "plan.h"
#include "sc.h"

#define SC_EXPORT_MAX_FILES 4

typedef struct sc_export_file {
    char *name;   /* plain file name, e.g. "megatron_torchrun.sh" */
    char *text;   /* the whole file */
} sc_export_file;

typedef struct sc_export {
    const char *target;      /* "megatron", "deepspeed", "torch" (static) */
    const char *framework;   /* "Megatron-LM", ... (static) */
    const char *checked;     /* where the flags were checked (static) */
    int n_files;
    sc_export_file files[SC_EXPORT_MAX_FILES]; /* files[0] is the main file */
    int n_notes;
    char **notes;            /* what the framework does differently, one line each */
    cJSON *settings;         /* what the target set, as JSON (flags, ds_config, ...) */
} sc_export;

typedef struct sc_export_ctx sc_export_ctx;   /* export_int.h */

typedef struct sc_export_target {
    const char *name;        /* "megatron" */
    const char *framework;   /* "Megatron-LM" */
    const char *description; /* one line for --help */
    const char *checked;     /* the version (commit or release) and files checked */
    /* Fills e's files, notes and settings, or refuses (SC_ENOTSUP). */
    sc_status (*build)(const sc_export_ctx *x, sc_export *e, sc_error *err);
} sc_export_target;

/* The targets, in a fixed order; *n gets their count. */
const sc_export_target *const *sc_export_targets(int *n);
/* The target of that name, or NULL. */
const sc_export_target *sc_export_find(const char *name);
/* "megatron, deepspeed, torch": for usage messages (static). */
const char *sc_export_target_names(void);

/* The export of plan p (opened: m is its model, from sc_plan_open) for
 * target. plan_file names the plan in messages and in the files. Errors:
 * SC_EINVAL for an unknown target, SC_ENOTSUP when the framework cannot run
 * the plan (one line, see above), SC_ENOMEM. O(modules + stages). */
sc_status sc_export_make(const sc_plan *p, const sc_model *m, const char *plan_file,
                         const char *target, sc_export **out, sc_error *err);

/* Whether m is a decoder-only transformer as Megatron-LM's GPT model builds
 * it (identical blocks of one attention and one MLP, a token embedding with
 * a vocabulary before them, an LM head after): 1, or 0 with why set to one
 * phrase naming what is not ("t5-3b is an encoder-decoder (...)"); -1 when
 * out of memory. The rule framework.h's megatron row applies. O(modules). */
int sc_export_is_gpt(const sc_model *m, char *why, size_t n);

/* {"format": "stagecraft.export/1", "target", "framework", "checked", "plan",
 *  "model", "main", "files": [names], "differences": [notes], "settings"}.
 * NULL on allocation failure. */
cJSON *sc_export_to_json(const sc_export *e, const char *plan_file);

/* Writes every file of e into dir (created when missing) whole or not at
 * all, through sc_outdir: a failure leaves dir's files as they were. Shell
 * scripts get mode 0755. */
sc_status sc_export_write(const sc_export *e, const char *dir, sc_error *err);

void sc_export_free(sc_export *e);

#endif
