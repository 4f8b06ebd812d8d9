/* stats.c - the median, quantiles and spread, see stats.h. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sc_median(double *x, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(x, n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

double sc_quantile(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return NAN;
    double pos = (q < 0 ? 0 : q > 1 ? 1 : q) * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n)
        return sorted[n - 1];
    return sorted[i] + (pos - (double)i) * (sorted[i + 1] - sorted[i]);
}

double sc_spread(double *x, size_t n)
{
    if (n == 0)
        return NAN;
    double med = sc_median(x, n); /* sorts */
    if (!(med > 0))
        return 0;
    return (sc_quantile(x, n, 0.75) - sc_quantile(x, n, 0.25)) / med;
}
