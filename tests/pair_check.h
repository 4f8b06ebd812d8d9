/* pair_check.h - a model and a cluster opened together for a test (defined
 * in test_planner.c, used by the search and limit tests too). */
#ifndef SC_PAIR_CHECK_H
#define SC_PAIR_CHECK_H

#include "cluster.h"
#include "model.h"

/* Opens model and cluster (names of built-ins or files) and sets the
 * cluster's node count; on any error records a test failure and leaves
 * *m NULL. */
void sc_test_open_pair(const char *model, const char *cluster, int nodes, sc_model **m,
                       sc_cluster *c);

#endif
