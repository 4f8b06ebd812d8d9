/* test_common.c - the helpers of common/ every layer shares: the median
 * (stats.h). */
#include "check.h"
#include "sc.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

TEST(common_median_odd_even_single_empty)
{
    double odd[] = {5, 1, 4, 2, 3};
    CHECK(sc_median(odd, 5) == 3);
    /* sorted in place, as documented */
    for (int i = 0; i < 5; i++)
        CHECK(odd[i] == i + 1);
    double even[] = {10, 2, 8, 4};
    CHECK(sc_median(even, 4) == 6); /* (4 + 8) / 2 */
    CHECK(even[0] == 2 && even[3] == 10);
    double two[] = {1e-9, 3e-9};
    CHECK(sc_median(two, 2) == (1e-9 + 3e-9) / 2);
    double one[] = {7.25};
    CHECK(sc_median(one, 1) == 7.25);
    double dup[] = {2, 2, 1, 2};
    CHECK(sc_median(dup, 4) == 2);
    double neg[] = {-3, -1, -2};
    CHECK(sc_median(neg, 3) == -2);
    CHECK(isnan(sc_median(NULL, 0)));
    double untouched[] = {3, 1};
    CHECK(isnan(sc_median(untouched, 0)));
    CHECK(untouched[0] == 3 && untouched[1] == 1);
}
