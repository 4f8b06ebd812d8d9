/* test_exit_map.c - cli_exit_code (cli/util.c) against the table of
 * docs/commands.md "Exit codes", status by status. The test runner links the
 * library, not the command, so the one function is compiled in here. */
#include "check.h"

#include "../cli/util.c"

TEST(exit_map_statuses)
{
    static const struct {
        sc_status st;
        int code;
    } table[] = {
        {SC_OK, 0},        {SC_ENOMEM, 1},   {SC_EINVAL, 2}, {SC_EPARSE, 2},
        {SC_ENOTFOUND, 2}, {SC_ENOTSUP, 2},  {SC_EIO, 3},    {SC_ECUDA, 3},
        {SC_ENCCL, 3},     {SC_EMPI, 3},     {SC_EGATE, 4},  {SC_ENOFIT, 5},
    };
    for (size_t i = 0; i < SC_ARRAY_LEN(table); i++)
        if (cli_exit_code(table[i].st) != table[i].code)
            sc_test_fail(__FILE__, __LINE__, "%s exits %d, the table says %d",
                         sc_status_name(table[i].st), cli_exit_code(table[i].st),
                         table[i].code);
    /* out of memory is internal (1), not a refused calibration (4) */
    CHECK_EQ_INT(cli_exit_code(SC_ENOMEM), CLI_EXIT_INTERNAL);
}
