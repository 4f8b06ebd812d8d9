/* test_fuzz_corpus.c - replays the fuzz seed corpora (tests/fuzz/corpus/NAME)
 * through the loaders: every file loads or fails with a message that names
 * it; none crashes (the sanitizer build checks the rest). */
#include "check.h"
#include "cluster.h"
#include "model.h"
#include "plan.h"
#include "timeline.h"

#include <dirent.h>

static int replay(const char *dir, int kind)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 6 || strcmp(e->d_name + l - 5, ".json"))
            continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        sc_error err = {0};
        sc_status st;
        if (kind == 0) {
            sc_model *m = NULL;
            st = sc_model_load(path, &m, &err);
            sc_model_free(m);
        } else if (kind == 1) {
            sc_timeline *t = NULL;
            st = sc_timeline_load(path, &t, &err);
            sc_timeline_free(t);
        } else if (kind == 2) {
            sc_cluster c;
            st = sc_cluster_load(path, &c, &err);
        } else {
            sc_plan *p = NULL;
            st = sc_plan_load(path, &p, &err);
            sc_plan_free(p);
        }
        if (st != SC_OK && !strstr(err.msg, path))
            sc_test_fail(__FILE__, __LINE__, "%s: message does not name the file: %s", path,
                         err.msg);
        n++;
    }
    closedir(d);
    return n;
}

TEST(fuzz_corpus_replay)
{
    CHECK(replay("tests/fuzz/corpus/model", 0) > 20);
    CHECK(replay("tests/fuzz/corpus/timeline", 1) > 5);
    CHECK(replay("tests/corpus/cluster/good", 2) > 5);
    CHECK(replay("tests/corpus/cluster", 2) > 10);
    /* plans, hand-tampered ones among them (tests/test_harden_plan.c) */
    CHECK(replay("tests/fuzz/corpus/files", 3) > 20);
    CHECK(replay("tests/corpus/plan", 3) > 15);
}
