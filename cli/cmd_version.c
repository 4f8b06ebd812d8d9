/* cmd_version.c - `stagecraft version`. */
#include "cli.h"
#include "build_info.h"

#include <stdio.h>
#include <string.h>

int cmd_version(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: stagecraft version [--json]\nPrints the version and whether this build "
               "has MPI and CUDA (and how many CUDA devices it sees).\n");
        return 0;
    }
    int json = argc > 1 && !strcmp(argv[1], "--json");
    if (argc > 2 || (argc > 1 && !json))
        return cli_usage("version", "unknown argument '%s'", argv[argc > 2 && json ? 2 : 1]);
    sc_build_info bi = sc_build_info_get();
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "version", bi.version);
        cJSON_AddBoolToObject(j, "mpi", bi.has_mpi);
        cJSON_AddBoolToObject(j, "cuda", bi.has_cuda);
        cJSON_AddNumberToObject(j, "cuda_devices", bi.cuda_devices);
        return cli_print_json(j);
    }
    printf("stagecraft %s\nMPI:  %s\nCUDA: %s", bi.version, bi.has_mpi ? "yes" : "no",
           bi.has_cuda ? "yes" : "no (built without CUDA)");
    if (bi.has_cuda)
        printf(" (%d device%s visible)", bi.cuda_devices, bi.cuda_devices == 1 ? "" : "s");
    printf("\n");
    return 0;
}
