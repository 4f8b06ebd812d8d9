/* build_info.c - see build_info.h. */
#include "build_info.h"

sc_build_info sc_build_info_get(void)
{
    sc_build_info b = {SC_VERSION, 0, 0, 0};
#ifdef SC_HAVE_MPI
    b.has_mpi = 1;
#endif
#ifdef SC_HAVE_CUDA
    b.has_cuda = 1;
    b.cuda_devices = sc_cuda_device_count();
#endif
    return b;
}
