/* stats.h - small statistics every layer shares, so that a figure such as
 * "the median step" means the same thing in the executor, the microbenchmarks
 * and calibration.
 *
 * Ownership: nothing is allocated; the caller's array is reordered.
 */
#ifndef SC_STATS_H
#define SC_STATS_H

#include <stddef.h>

/* The median of x[0..n). Sorts x IN PLACE, ascending (so afterwards x[0] is
 * the minimum and x[n-1] the maximum; callers that need the original order
 * pass a copy). Odd n: the middle value x[n/2]. Even n: the mean of the two
 * middle values, (x[n/2 - 1] + x[n/2]) / 2 (the usual convention, as in
 * numpy.median and R's median). n == 0: NAN, and x is not touched (may be
 * NULL). x must hold no NaN (their order is undefined). O(n log n) time
 * (qsort), O(1) extra memory. */
double sc_median(double *x, size_t n);

#endif
