/* fuzz_cluster.c - libFuzzer target for the cluster parser: bytes -> JSON ->
 * sc_cluster (full validation); a successful load must also survive
 * to_json -> from_json unchanged. Seed corpus: the presets
 * (`stagecraft cluster show NAME -o tests/fuzz/corpus/cluster/NAME.json`)
 * and tests/corpus/cluster. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *root = NULL;
    sc_error err;
    /* cJSON 1.7.15 reads one byte past a buffer that is not NUL-terminated
     * (found by this target on deep arrays); real loads go through
     * sc_read_file, which NUL-terminates, so do the same here. */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    sc_status st = sc_json_parse("fuzz.json", text, size, &root, &err);
    free(text);
    if (st != SC_OK)
        return 0;
    sc_cluster c;
    if (sc_cluster_from_json(root, "fuzz.json", &c, &err) == SC_OK) {
        cJSON *j = sc_cluster_to_json(&c);
        if (j) {
            char *s = NULL;
            if (sc_json_exact(j) == SC_OK)
                s = cJSON_PrintUnformatted(j);
            cJSON_Delete(j);
            if (s) {
                cJSON *r2 = NULL;
                sc_cluster d;
                if (sc_json_parse("again.json", s, strlen(s), &r2, &err) != SC_OK ||
                    sc_cluster_from_json(r2, "again.json", &d, &err) != SC_OK ||
                    !sc_cluster_equal(&c, &d))
                    abort(); /* a valid cluster must round-trip exactly */
                cJSON_Delete(r2);
                sc_free(s);
            }
        }
    }
    cJSON_Delete(root);
    return 0;
}
