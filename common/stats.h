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

/* The q-quantile (0 <= q <= 1) of sorted[0..n) (ascending), interpolated
 * linearly between order statistics: position q·(n-1), as numpy.quantile's
 * default and R's type 7. n == 0: NAN. O(1). */
double sc_quantile(const double *sorted, size_t n, double q);

/* The spread of a set of repeated measurements: their relative
 * interquartile range (q3 - q1) / median, by sc_quantile. Robust to one
 * slow outlier, which (max - min) is not. Sorts x IN PLACE. n == 0: NAN;
 * a median of 0: 0. O(n log n). */
double sc_spread(double *x, size_t n);

#endif
