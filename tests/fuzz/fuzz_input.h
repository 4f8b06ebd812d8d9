/* fuzz_input.h - the fuzzers that load from a path write each input there
 * first. */
#ifndef SC_FUZZ_INPUT_H
#define SC_FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>

/* Writes the input's bytes to path; 0 when all were written, -1 otherwise
 * (the caller then skips the input). */
static inline int fuzz_input_to(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = fwrite(data, 1, size, f);
    return fclose(f) == 0 && n == size ? 0 : -1;
}

#endif
