/* lower_check.h - the check that one lowered list drives both replays: a
 * timeline (simulated or measured) holds, on every rank, exactly the
 * lowered list's compute ops in list order and its communication ops as a
 * multiset (defined in test_lower.c, used by test_exec.c too). */
#ifndef SC_LOWER_CHECK_H
#define SC_LOWER_CHECK_H

/* Lowers plan_file's step and compares the timeline in tl_file with it;
 * records a test failure naming `what`, the rank and the first difference.
 * Returns the number of ops compared (0 on failure). */
long sc_check_timeline_vs_lowered(const char *what, const char *plan_file, const char *tl_file);

#endif
