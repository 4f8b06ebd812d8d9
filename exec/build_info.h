/* build_info.h - what this build of the library contains. */
#ifndef SC_BUILD_INFO_H
#define SC_BUILD_INFO_H

#define SC_VERSION "0.1.0"

typedef struct sc_build_info {
    const char *version;
    int has_mpi, has_cuda;
    int cuda_devices; /* 0 without CUDA, without a driver or without a GPU */
} sc_build_info;

sc_build_info sc_build_info_get(void);
/* Implemented in exec/cuda_info.cu when built with CUDA. */
int sc_cuda_device_count(void);

#endif
