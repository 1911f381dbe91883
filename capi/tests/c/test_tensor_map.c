/* Tensor-map kernels from C: the maps of a launch manifest written by `convtune compile
 * --manifest` (argv[1]), encoded with the header's inline convtune_encode_tensor_map. No GPU
 * here: a stand-in for the few <cuda.h> declarations the helper uses (types as cuda.h 12
 * declares them) records the driver calls, and the test checks they carry the manifest's
 * numbers and the live tensor addresses. */
#include <stdint.h>

#define CUDA_VERSION 12080
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
typedef enum CUtensorMapDataType_enum { CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9 } CUtensorMapDataType;
typedef enum CUtensorMapInterleave_enum { CU_TENSOR_MAP_INTERLEAVE_NONE = 0 } CUtensorMapInterleave;
typedef enum CUtensorMapSwizzle_enum { CU_TENSOR_MAP_SWIZZLE_128B = 3 } CUtensorMapSwizzle;
typedef enum CUtensorMapL2promotion_enum {
    CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3
} CUtensorMapL2promotion;
typedef enum CUtensorMapFloatOOBfill_enum {
    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0
} CUtensorMapFloatOOBfill;
typedef struct CUtensorMap_st { unsigned long long opaque[16]; } CUtensorMap;

/* What the last encode call received. */
static struct {
    int im2col;
    int data_type, interleave, swizzle, l2, oob;
    cuuint32_t rank, channels, pixels;
    void *address;
    cuuint64_t dims[5], strides[4];
    cuuint32_t box[5], element_strides[5];
    int lower[3], upper[3];
} call;

static void record(CUtensorMapDataType t, cuuint32_t rank, void *address, const cuuint64_t *dims,
                   const cuuint64_t *strides, const cuuint32_t *element_strides,
                   CUtensorMapInterleave i, CUtensorMapSwizzle s, CUtensorMapL2promotion l2,
                   CUtensorMapFloatOOBfill oob) {
    cuuint32_t d;
    call.data_type = (int)t; call.rank = rank; call.address = address;
    for (d = 0; d < rank; d++) {
        call.dims[d] = dims[d];
        call.element_strides[d] = element_strides[d];
        if (d + 1 < rank) call.strides[d] = strides[d];
    }
    call.interleave = (int)i; call.swizzle = (int)s; call.l2 = (int)l2; call.oob = (int)oob;
}

CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType t, cuuint32_t rank,
                                void *address, const cuuint64_t *dims, const cuuint64_t *strides,
                                const cuuint32_t *box, const cuuint32_t *element_strides,
                                CUtensorMapInterleave i, CUtensorMapSwizzle s,
                                CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
    cuuint32_t d;
    (void)map;
    call.im2col = 0;
    record(t, rank, address, dims, strides, element_strides, i, s, l2, oob);
    for (d = 0; d < rank; d++) call.box[d] = box[d];
    return 0;
}

CUresult cuTensorMapEncodeIm2col(CUtensorMap *map, CUtensorMapDataType t, cuuint32_t rank,
                                 void *address, const cuuint64_t *dims, const cuuint64_t *strides,
                                 const int *lower, const int *upper, cuuint32_t channels,
                                 cuuint32_t pixels, const cuuint32_t *element_strides,
                                 CUtensorMapInterleave i, CUtensorMapSwizzle s,
                                 CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
    cuuint32_t d;
    (void)map;
    call.im2col = 1;
    record(t, rank, address, dims, strides, element_strides, i, s, l2, oob);
    for (d = 0; d + 2 < rank; d++) { call.lower[d] = lower[d]; call.upper[d] = upper[d]; }
    call.channels = channels; call.pixels = pixels;
    return 0;
}

#include "convtune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        if (cond) {                                                      \
            passed++;                                                    \
        } else {                                                         \
            failed++;                                                    \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                \
            fprintf(stderr, "\n");                                       \
        }                                                                \
    } while (0)

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    char *text;
    long n;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = malloc((size_t)n + 1);
    if (text && fread(text, 1, (size_t)n, f) != (size_t)n) { free(text); text = NULL; }
    if (text) text[n] = '\0';
    fclose(f);
    return text;
}

int main(int argc, char **argv) {
    convtune_tensor_map maps[4];
    size_t count = 0, i;
    int rc, d, tiled = 0, im2col = 0;
    char *manifest;
    /* Device addresses of x, w, y as a caller would have them. */
    const CUdeviceptr tensors[3] = {0x7f0000000000ull, 0x7f1000000000ull, 0x7f2000000000ull};
    if (argc != 2 || !(manifest = read_file(argv[1]))) {
        fprintf(stderr, "usage: %s MANIFEST.json (from convtune compile --manifest)\n", argv[0]);
        return 2;
    }
    CHECK(convtune_tensor_map_size() == sizeof(convtune_tensor_map), "library %zu, header %zu",
          convtune_tensor_map_size(), sizeof(convtune_tensor_map));
    rc = convtune_manifest_tensor_maps(manifest, 0, maps, 4, &count);
    CHECK(rc == CONVTUNE_OK && count == 2, "rc %d count %zu: %s", rc, count,
          convtune_last_error());
    for (i = 0; i < count && rc == CONVTUNE_OK; i++) {
        const convtune_tensor_map *m = &maps[i];
        CUtensorMap out;
        CHECK(m->param_index == 4 + i && m->param_offset == 64 + 128 * i, "map %zu: index %u "
              "offset %u", i, m->param_index, m->param_offset);
        CHECK(m->tensor <= 2, "map %zu: tensor %u", i, m->tensor);
        CHECK(convtune_encode_tensor_map(m, tensors[m->tensor], &out) == 0, "encode %zu", i);
        CHECK(call.im2col == (m->function == CONVTUNE_ENCODE_IM2COL), "map %zu: function", i);
        CHECK(call.address == (void *)(uintptr_t)(tensors[m->tensor] + m->address_offset),
              "map %zu: address %p", i, call.address);
        CHECK(call.data_type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 && call.rank == m->rank &&
                  call.swizzle == CU_TENSOR_MAP_SWIZZLE_128B &&
                  call.l2 == CU_TENSOR_MAP_L2_PROMOTION_L2_256B &&
                  call.interleave == CU_TENSOR_MAP_INTERLEAVE_NONE &&
                  call.oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
              "map %zu: enums %d %d %d %d %d", i, call.data_type, call.interleave, call.swizzle,
              call.l2, call.oob);
        for (d = 0; d < (int)m->rank; d++) {
            CHECK(call.dims[d] == m->global_dim[d] &&
                      call.element_strides[d] == m->element_strides[d],
                  "map %zu dim %d", i, d);
            if (d + 1 < (int)m->rank)
                CHECK(call.strides[d] == m->global_strides[d], "map %zu stride %d", i, d);
            if (!call.im2col) CHECK(call.box[d] == m->box_dim[d], "map %zu box %d", i, d);
        }
        if (call.im2col) {
            im2col++;
            CHECK(call.channels == m->channels_per_pixel && call.pixels == m->pixels_per_column,
                  "map %zu: %u channels of %u pixels", i, call.channels, call.pixels);
            for (d = 0; d + 2 < (int)m->rank; d++)
                CHECK(call.lower[d] == m->pixel_box_lower_corner[d] &&
                          call.upper[d] == m->pixel_box_upper_corner[d],
                      "map %zu corner %d", i, d);
        } else {
            tiled++;
        }
    }
    /* Seed 003's shape on an odd width (ld=tma): its filter through a tiled map of 2048 rows of
     * x*c = 4096 elements, dy (K contiguous) through an im2col map of 64 channels by 128
     * pixels. */
    CHECK(tiled == 1 && im2col == 1, "%d tiled, %d im2col", tiled, im2col);
    CHECK(maps[0].tensor == 1 && maps[0].global_dim[0] == 4096 && maps[0].global_dim[1] == 2048 &&
              maps[0].global_strides[0] == 8192 && maps[0].box_dim[0] == 64,
          "filter map");
    CHECK(maps[1].tensor == 2 && maps[1].global_dim[0] == 2048 &&
              maps[1].channels_per_pixel == 64 && maps[1].pixels_per_column == 128,
          "dy map");
    rc = convtune_manifest_tensor_maps(manifest, 0, maps, 1, &count);
    CHECK(rc == CONVTUNE_ERR_BUFFER && count == 2, "rc %d count %zu", rc, count);
    rc = convtune_manifest_tensor_maps("{\"manifest_version\": 1}", 0, maps, 4, &count);
    CHECK(rc == CONVTUNE_ERR_MANIFEST, "rc %d", rc);
    free(manifest);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
