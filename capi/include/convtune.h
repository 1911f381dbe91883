/*
 * convtune.h: the tuned convolution config for a problem, for compilers not written in Rust.
 *
 * The library (libconvtune_c.so / libconvtune_c.a, built by `cargo build --release -p
 * convtune_c`) is convtune's lookup part only: the tuned database compiled in (system layer),
 * an optional user database on disk over it, the shipped quick list and the cost model's
 * heuristic as fallbacks, with legality re-checked for the problem at hand. It contains no code
 * generator (no LLVM): compile the kernels with `convtune compile --config ... --manifest FILE`
 * or the Python package. For kernels that take TMA tensor maps (ld=tma / ld=ws configs),
 * convtune_manifest_tensor_maps reads the manifest and gives the driver call that encodes each
 * map; with <cuda.h> included first, convtune_encode_tensor_map (inline, below) makes that
 * call. Static linking needs -lpthread -ldl -lm. The manifest's workspace says what the
 * caller clears: where `kept_zero_bytes` is not 0 (split-K configs with red=fixup or
 * red=stream), the buffer's first kept_zero_bytes must be zero when the kernels start and are
 * left zero by them: clear them once when allocating a buffer kept for such plans, one per
 * stream (docs/abi.md, step 5).
 *
 * Every function is safe to call from several threads at once. No function panics across the
 * boundary: an internal error is returned as CONVTUNE_ERR_INTERNAL. Strings passed in are
 * NUL-terminated UTF-8. Written by hand; capi/src/lib.rs mirrors every type here and the C test
 * checks the sizes agree (convtune_abi_sizes, convtune_tensor_map_size). The config struct's
 * tuning fields and their enums are checked against convtune's one field declaration
 * (src/config/fields.rs) by capi/src/tests.rs: a field added there fails that test until it
 * is added here.
 */
#ifndef CONVTUNE_H
#define CONVTUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a type or function below changes incompatibly. */
#define CONVTUNE_ABI_VERSION 3

/* Return codes. On anything but CONVTUNE_OK, convtune_last_error() says what happened. */
typedef enum convtune_status {
    CONVTUNE_OK = 0,
    /* A required pointer argument was NULL. */
    CONVTUNE_ERR_NULL = 1,
    /* A string argument is not valid UTF-8. */
    CONVTUNE_ERR_UTF8 = 2,
    /* The problem does not parse or is not a valid convolution (sizes, layouts, enums). */
    CONVTUNE_ERR_PROBLEM = 3,
    /* The arch name is unknown (known: sm_80, sm_90, gfx908, gfx90a, gfx942). */
    CONVTUNE_ERR_ARCH = 4,
    /* The user database exists but cannot be read or parsed (or the compiled-in one is broken). */
    CONVTUNE_ERR_DATABASE = 5,
    /* Not even the heuristic found a legal config for this problem on this arch. */
    CONVTUNE_ERR_NO_CONFIG = 6,
    /* A bug in convtune (a caught panic); the message says where. */
    CONVTUNE_ERR_INTERNAL = 7,
    /* The config's fields are not a config (a named field out of its enum, a zero size). */
    CONVTUNE_ERR_CONFIG = 8,
    /* The text is not a launch manifest, or it has no such kernel. */
    CONVTUNE_ERR_MANIFEST = 9,
    /* An output buffer is too small; the message (and a count, where there is one) says how
     * much is needed. */
    CONVTUNE_ERR_BUFFER = 10
} convtune_status;

/* Which gradient the convolution computes; the values are MIOpenDriver's -F flag. */
typedef enum convtune_direction {
    CONVTUNE_FWD = 1,
    CONVTUNE_BWD_DATA = 2,
    CONVTUNE_BWD_WEIGHT = 4
} convtune_direction;

/* Element type of all three tensors. */
typedef enum convtune_dtype {
    CONVTUNE_F32 = 0,
    CONVTUNE_F16 = 1,
    CONVTUNE_BF16 = 2
} convtune_dtype;

/* A 2-D convolution, with MIOpen's meaning of every field (c and k count all groups). */
typedef struct convtune_problem {
    int32_t direction; /* convtune_direction */
    int32_t dtype;     /* convtune_dtype */
    uint32_t n, c, h, w, k, y, x;
    uint32_t pad_h, pad_w;
    uint32_t stride_h, stride_w;
    uint32_t dilation_h, dilation_w;
    uint32_t groups;
    /* Layouts in any spelling the command line takes: "NCHW", "NHWC", "ngchw", "NHWGC";
     * filters also "KCYX", "KYXC", "gkyxc" or MIOpen's "NHWC". `layout` sets all three tensors
     * (NULL: NCHW; the filter gets the matching order: NHWC or NHWGC -> KYXC); a non-NULL
     * in_layout / fil_layout / out_layout overrides it for that one. */
    const char *layout;
    const char *in_layout;
    const char *fil_layout;
    const char *out_layout;
} convtune_problem;

/* The named tuning fields. Each constant's comment starts with the value as the config string
 * writes it (`lds=pad`); capi/src/tests.rs checks them against src/config/fields.rs. */

/* Shared-memory tile layout. */
typedef enum convtune_lds {
    CONVTUNE_LDS_PADDED = 0,  /* lds=pad */
    CONVTUNE_LDS_SWIZZLED = 1 /* lds=swz */
} convtune_lds;

/* Matrix instruction path (NVIDIA). */
typedef enum convtune_mma {
    CONVTUNE_MMA_SYNC = 0,           /* mma=sync: mma.sync (MFMA/FMA on other targets) */
    CONVTUNE_MMA_WGMMA = 1,          /* mma=wg: Hopper wgmma, wait_group 0 */
    CONVTUNE_MMA_WGMMA_IN_FLIGHT = 2, /* mma=wg1: Hopper wgmma, one group in flight */
    CONVTUNE_MMA_DEPTHWISE = 3        /* mma=dw: the direct depthwise kernel (no GEMM) */
} convtune_mma;

/* How split-K slices are added up. */
typedef enum convtune_red {
    CONVTUNE_RED_ATOMIC = 0, /* red=atomic: f32 atomics (and a finishing launch for f16/bf16) */
    CONVTUNE_RED_FIXUP = 1,  /* red=fixup: the last slice of a tile adds the others' partials */
    CONVTUNE_RED_STREAM = 2  /* red=stream: stream-K, a persistent grid splitting K itself */
} convtune_red;

/* How tiles reach shared memory on the wgmma path. */
typedef enum convtune_ld {
    CONVTUNE_LD_CP = 0,  /* ld=cp: cp.async from every thread */
    CONVTUNE_LD_TMA = 1, /* ld=tma: TMA copies from tensor maps (kernel parameters) */
    CONVTUNE_LD_WS = 2,  /* ld=ws: TMA from a producer warpgroup (warp-specialised) */
    CONVTUNE_LD_WSPP = 3 /* ld=wspp: ld=ws with ping-pong consumer warpgroups (pk=1) */
} convtune_ld;

/* The grid of the ld=ws kernels. */
typedef enum convtune_persistent {
    CONVTUNE_PERSISTENT_PER_TILE = 0,  /* pk=0: one block per work unit */
    CONVTUNE_PERSISTENT_PERSISTENT = 1 /* pk=1: at most SMs blocks walking the work units */
} convtune_persistent;

/* A layout transform around the GEMMs (NCHW problems). */
typedef enum convtune_xf {
    CONVTUNE_XF_NONE = 0,    /* xf=none */
    CONVTUNE_XF_NHWC = 1,    /* xf=nhwc: the read tensors copied channels-last first */
    CONVTUNE_XF_NHWC_OUT = 2 /* xf=nhwc_out: the written one too, transposed back at the end */
} convtune_xf;

/* Thread-block clusters (ld=ws, pk=1): compiled into the kernel (.reqnctapercluster), so the
 * launch is unchanged; the manifest's cluster_blocks says how many blocks form one. */
typedef enum convtune_cluster {
    CONVTUNE_CLUSTER_ONE = 0,    /* cl=1: no cluster */
    CONVTUNE_CLUSTER_PAIR_M = 1, /* cl=2m: two blocks on neighbouring M tiles, B multicast */
    CONVTUNE_CLUSTER_PAIR_N = 2  /* cl=2n: two blocks on neighbouring N tiles, A multicast */
} convtune_cluster;

/* How the persistent warp-specialised consumers store C (ld=ws|wspp, pk=1). ep=tma adds one
 * tensor-map parameter per GEMM (C's store map, after the A/B maps; the manifest lists it). */
typedef enum convtune_epilogue {
    CONVTUNE_EPILOGUE_REG = 0, /* ep=reg: stores from registers */
    CONVTUNE_EPILOGUE_TMA = 1  /* ep=tma: a swizzled shared-memory tile stored by TMA */
} convtune_epilogue;

/* How stream-K (red=stream) cuts its region among the blocks. */
typedef enum convtune_cut {
    CONVTUNE_CUT_TILE = 0,   /* cut=tile: tile-major ranges of (tile, K tile) iterations */
    CONVTUNE_CUT_ALIGNED = 1 /* cut=aligned: every tile cut at the same K offsets */
} convtune_cut;

/* Where the config came from. */
typedef enum convtune_source {
    CONVTUNE_SOURCE_EXACT = 0,    /* a database entry tuned for exactly this problem */
    CONVTUNE_SOURCE_NEAREST = 1,  /* the entry of the nearest tuned problem (see nearest_key) */
    CONVTUNE_SOURCE_QUICK = 2,    /* the shipped quick list of generally good configs */
    CONVTUNE_SOURCE_HEURISTIC = 3 /* the cost model's best legal config */
} convtune_source;

#define CONVTUNE_CONFIG_LEN 128
#define CONVTUNE_KEY_LEN 512
#define CONVTUNE_REASON_LEN 2048

/* A lookup's answer. The strings are NUL-terminated; a reason longer than the buffer is cut
 * at a character boundary. */
typedef struct convtune_config {
    /* The tuning parameters, in the order of the config string (bm bn bk wm wn st va vb vc lds
     * sk rs mma red ld pk xf cl ep cut) and named as in search-space files: block tile, warp tile,
     * pipeline stages, vector widths of A/B/C, LDS layout, split-K factor, block rasterisation
     * group, matrix instruction path, split-K reduction, load path, persistent grid, layout
     * transform, thread-block cluster, epilogue store path, stream-K cut. */
    uint32_t block_m, block_n, block_k;
    uint32_t warp_m, warp_n;
    uint32_t stages;
    uint32_t vec_a, vec_b, vec_c;
    int32_t lds; /* convtune_lds */
    uint32_t split_k;
    uint32_t raster;
    int32_t mma; /* convtune_mma */
    int32_t red; /* convtune_red */
    int32_t ld;  /* convtune_ld */
    int32_t persistent; /* convtune_persistent */
    int32_t xf;  /* convtune_xf */
    int32_t cluster; /* convtune_cluster */
    int32_t epilogue; /* convtune_epilogue */
    int32_t cut; /* convtune_cut */
    /* End of the tuning parameters. */
    int32_t source; /* convtune_source */
    /* For CONVTUNE_SOURCE_NEAREST: the distance to the tuned problem; 0 otherwise. */
    double nearest_distance;
    /* The config as `convtune compile --config` takes it ("v1:bm=128,..."). */
    char config[CONVTUNE_CONFIG_LEN];
    /* The problem's canonical key (the database's spelling of it). */
    char problem_key[CONVTUNE_KEY_LEN];
    /* For CONVTUNE_SOURCE_NEAREST: the tuned problem's key; empty otherwise. */
    char nearest_key[CONVTUNE_KEY_LEN];
    /* A sentence on how it was found: which database, what was skipped and why. */
    char reason[CONVTUNE_REASON_LEN];
} convtune_config;

/*
 * The config to build `problem`'s kernels with on `arch` ("sm_90", "gfx942", ...).
 * `user_db`: a user database file (or directory holding <arch>.toml); NULL means
 * $CONVTUNE_DB, else $XDG_DATA_HOME/convtune/<arch>.toml, as `convtune lookup` does. A user
 * database that does not exist is skipped; one that exists but is broken is an error.
 * On success fills *out and returns CONVTUNE_OK.
 */
int convtune_lookup(const convtune_problem *problem, const char *arch, const char *user_db,
                    convtune_config *out);

/*
 * convtune_lookup for a problem written as a MIOpenDriver line
 * ("convbfp16 -n 16 -c 2048 ... -F 2 --layout NHWC") or rocMLIR driver flags
 * ("--operation=conv2d_bwd_data -batchsize=32 ...").
 */
int convtune_lookup_str(const char *problem, const char *arch, const char *user_db,
                        convtune_config *out);

/*
 * convtune_lookup_str answering only configs whose results are the same bits on every run: no
 * floating-point atomics (split-K with red=atomic, depthwise backward weight by atomics are
 * passed over, and `reason` says so), as `convtune lookup --deterministic` does.
 */
int convtune_lookup_str_deterministic(const char *problem, const char *arch,
                                      const char *user_db, convtune_config *out);

/* The most configs one convtune_lookup_candidates call answers. */
#define CONVTUNE_MAX_CANDIDATES 64

/* How many candidates a first-use benchmark should time (what convtune.torch times and a
 * tuning measures first): a good `capacity` for convtune_lookup_candidates. */
#define CONVTUNE_FIRST_USE_CANDIDATES 16

/*
 * convtune_lookup's answer, then up to `capacity` - 1 more of the fallback's configs, best
 * first (`convtune lookup --candidates`), written to out[0 .. *count): for a caller that can
 * time kernels at first use and keep the fastest, as convtune.torch does. `deterministic`
 * non-zero answers only configs without floating-point atomics, as
 * convtune_lookup_str_deterministic.
 * `out` points to `capacity` structs, 1 <= capacity <= CONVTUNE_MAX_CANDIDATES (else
 * CONVTUNE_ERR_BUFFER). On the shipped sm_90 database with each entry held out, the first
 * config ran at 0.845 of the tuned winner's speed (geomean, H200), the fastest of the first
 * four at 0.948 and of the first eight at 0.964; of sixteen 0.986 against eight's 0.960 in
 * one H100 run (session 37).
 */
int convtune_lookup_candidates(const convtune_problem *problem, const char *arch,
                               const char *user_db, int deterministic, convtune_config *out,
                               size_t capacity, size_t *count);

/* convtune_lookup_candidates for a problem written as a line, as convtune_lookup_str. */
int convtune_lookup_candidates_str(const char *problem, const char *arch, const char *user_db,
                                   int deterministic, convtune_config *out, size_t capacity,
                                   size_t *count);

/*
 * convtune_lookup_candidates_str for the GPU the kernels will run on: `gpu` as the driver
 * names it (cuDeviceGetName: "NVIDIA H100 80GB HBM3") and its SM count `compute_units`
 * (`convtune lookup --gpu --compute-units`). Exact entries are then that GPU's; a problem tuned
 * only on another GPU of the arch comes first as a neighbour at distance 0 whose reason names
 * that GPU (time it against the others). NULL `gpu` is convtune_lookup_candidates_str (where a
 * problem was tuned on several GPUs, it answers with the entry of the GPU most of the database
 * was tuned on). An empty `gpu` or `compute_units` 0 with a name: CONVTUNE_ERR_ARCH.
 */
int convtune_lookup_candidates_gpu_str(const char *problem, const char *arch,
                                       const char *user_db, int deterministic, const char *gpu,
                                       uint32_t compute_units, convtune_config *out,
                                       size_t capacity, size_t *count);

/* How many configs a first use times in its second round (convtune_second_round_str): a good
 * `capacity` for it. */
#define CONVTUNE_SECOND_ROUND_CANDIDATES 8

/*
 * A first use's second round: after timing convtune_lookup_candidates' configs, up to
 * `capacity` more to time, written to out[0 .. *count), best guess first: what a tuning's
 * guided search measures next from those times (its local search around the fastest, with the
 * cost model corrected by them; the last, the model's best of a kernel family nothing measured
 * belongs to; `convtune lookup --measured`). `configs[i]` (a config string,
 * e.g. a convtune_config's `config`) ran `times_us[i]` microseconds; NaN, infinity or a time
 * not above 0 marks one that failed. None of the measured configs comes back; *count is 0 when
 * none succeeded. `deterministic` non-zero: only configs without floating-point atomics.
 * 1 <= capacity <= CONVTUNE_MAX_CANDIDATES (else CONVTUNE_ERR_BUFFER); a config that does not
 * parse: CONVTUNE_ERR_CONFIG. With each shipped entry held out, the config kept after eight
 * more ran at 0.998 of tuned speed against 0.974 after the first sixteen (session 39, H100;
 * below 0.8: 5 of 182 -> 0).
 */
int convtune_second_round_str(const char *problem, const char *arch, int deterministic,
                              const char *const *configs, const double *times_us,
                              size_t measured, convtune_config *out, size_t capacity,
                              size_t *count);

/*
 * The config string of `config`'s tuning fields (block_m .. ld; the other members are not
 * read), as `convtune compile --config` takes it: what convtune_lookup wrote in `config` for an
 * unchanged struct, so a caller can change fields and print the result. Writes at most `len`
 * bytes, NUL included; CONVTUNE_ERR_BUFFER when that is too short, CONVTUNE_ERR_CONFIG for
 * fields that are no config (legality is not checked: that needs the problem).
 */
int convtune_config_format(const convtune_config *config, char *out, size_t len);

/* Which driver function encodes a tensor map. */
typedef enum convtune_encode_function {
    CONVTUNE_ENCODE_TILED = 0, /* cuTensorMapEncodeTiled */
    CONVTUNE_ENCODE_IM2COL = 1 /* cuTensorMapEncodeIm2col */
} convtune_encode_function;

#define CONVTUNE_TENSOR_MAP_RANK 5
/* Bytes of a CUtensorMap kernel parameter (passed by value, 64-byte aligned). */
#define CONVTUNE_TENSOR_MAP_BYTES 128

/*
 * One TMA tensor map a kernel takes, and the driver call that encodes it, with the argument
 * names of cuda.h (the rules are convtune's: src/abi/encode.rs). globalAddress is the device
 * pointer of argument `tensor` plus address_offset. Arrays are full length; the driver reads
 * `rank` entries (rank - 1 of global_strides, rank - 2 of the corners). Tiled maps use box_dim;
 * im2col maps the corners, channels_per_pixel and pixels_per_column (the others are 0).
 * data_type, interleave, swizzle, l2_promotion and oob_fill hold the values of cuda.h's
 * CUtensorMapDataType, CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion and
 * CUtensorMapFloatOOBfill.
 */
typedef struct convtune_tensor_map {
    uint32_t param_index;  /* the kernel parameter it is passed as (after the 4 pointers) */
    uint32_t param_offset; /* its offset in the kernel's parameter buffer (a multiple of 64) */
    uint32_t tensor;       /* the pointer argument whose memory it describes: 0 x, 1 w, 2 y */
    int32_t function;      /* convtune_encode_function */
    uint32_t data_type;
    uint32_t rank;
    uint64_t address_offset;
    uint64_t global_dim[CONVTUNE_TENSOR_MAP_RANK];
    uint64_t global_strides[CONVTUNE_TENSOR_MAP_RANK - 1];
    uint32_t box_dim[CONVTUNE_TENSOR_MAP_RANK];
    int32_t pixel_box_lower_corner[CONVTUNE_TENSOR_MAP_RANK - 2];
    int32_t pixel_box_upper_corner[CONVTUNE_TENSOR_MAP_RANK - 2];
    uint32_t channels_per_pixel;
    uint32_t pixels_per_column;
    uint32_t element_strides[CONVTUNE_TENSOR_MAP_RANK];
    uint32_t interleave;
    uint32_t swizzle;
    uint32_t l2_promotion;
    uint32_t oob_fill;
} convtune_tensor_map;

/*
 * The tensor maps of kernel `kernel` (its position in `kernels`) of a launch manifest: the
 * JSON text `convtune compile --manifest FILE` wrote. Fills up to `capacity` entries of `out`
 * (NULL when capacity is 0) in parameter order and sets *count to the kernel's number of maps
 * (0 for a kernel without TMA: it takes the four pointers only). CONVTUNE_ERR_BUFFER (with
 * *count set) when capacity is smaller; CONVTUNE_ERR_MANIFEST for text that is not a
 * manifest or has no such kernel.
 *
 * Launching such a kernel: encode each map over its tensor's pointer (convtune_encode_tensor_map
 * or the driver call by hand) into a 64-byte aligned CUtensorMap, and pass cuLaunchKernel one
 * pointer per parameter: the four u64 pointers (x, w, y, workspace), then the maps in order.
 */
int convtune_manifest_tensor_maps(const char *manifest_json, uint32_t kernel,
                                  convtune_tensor_map *out, size_t capacity, size_t *count);

/* sizeof(convtune_tensor_map) as the library sees it. */
size_t convtune_tensor_map_size(void);

#if defined(CUDA_VERSION) && CUDA_VERSION >= 12000
/* With <cuda.h> included before this header: encodes `map` over the tensor at device address
 * `tensor` into *out, by the driver call the map names. Returns the driver's result. */
static inline CUresult convtune_encode_tensor_map(const convtune_tensor_map *map,
                                                  CUdeviceptr tensor, CUtensorMap *out) {
    void *address = (void *)(uintptr_t)(tensor + map->address_offset);
    if (map->function == CONVTUNE_ENCODE_IM2COL) {
        return cuTensorMapEncodeIm2col(
            out, (CUtensorMapDataType)map->data_type, map->rank, address,
            (const cuuint64_t *)map->global_dim, (const cuuint64_t *)map->global_strides,
            (const int *)map->pixel_box_lower_corner, (const int *)map->pixel_box_upper_corner,
            map->channels_per_pixel, map->pixels_per_column,
            (const cuuint32_t *)map->element_strides, (CUtensorMapInterleave)map->interleave,
            (CUtensorMapSwizzle)map->swizzle, (CUtensorMapL2promotion)map->l2_promotion,
            (CUtensorMapFloatOOBfill)map->oob_fill);
    }
    return cuTensorMapEncodeTiled(
        out, (CUtensorMapDataType)map->data_type, map->rank, address,
        (const cuuint64_t *)map->global_dim, (const cuuint64_t *)map->global_strides,
        (const cuuint32_t *)map->box_dim, (const cuuint32_t *)map->element_strides,
        (CUtensorMapInterleave)map->interleave, (CUtensorMapSwizzle)map->swizzle,
        (CUtensorMapL2promotion)map->l2_promotion, (CUtensorMapFloatOOBfill)map->oob_fill);
}
#endif

/* The message of the last failed call on this thread ("" if none). Valid until the next call
 * into this library on the same thread. */
const char *convtune_last_error(void);

/* The library's version ("0.1.0"). */
const char *convtune_version(void);

/* sizeof(convtune_problem) and sizeof(convtune_config) as the library sees them, so a caller
 * can check its header matches the library (the C test does). Returns CONVTUNE_ABI_VERSION. */
int convtune_abi_sizes(size_t *problem_size, size_t *config_size);

#ifdef __cplusplus
}
#endif

#endif /* CONVTUNE_H */
