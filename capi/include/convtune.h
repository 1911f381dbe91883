/*
 * convtune.h: the tuned convolution config for a problem, for compilers not written in Rust.
 *
 * The library (libconvtune_c.so / libconvtune_c.a, built by `cargo build --release -p
 * convtune_c`) is convtune's lookup part only: the tuned database compiled in (system layer),
 * an optional user database on disk over it, the shipped quick list and the cost model's
 * heuristic as fallbacks, with legality re-checked for the problem at hand. It contains no code
 * generator (no LLVM): compile the kernels with `convtune compile --config ...` or the Python
 * package. Static linking needs -lpthread -ldl -lm.
 *
 * Every function is safe to call from several threads at once. No function panics across the
 * boundary: an internal error is returned as CONVTUNE_ERR_INTERNAL. Strings passed in are
 * NUL-terminated UTF-8. Written by hand; capi/src/lib.rs mirrors every type here and the C test
 * checks the sizes agree (convtune_abi_sizes).
 */
#ifndef CONVTUNE_H
#define CONVTUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a type or function below changes incompatibly. */
#define CONVTUNE_ABI_VERSION 1

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
    CONVTUNE_ERR_INTERNAL = 7
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

/* Shared-memory tile layout. */
typedef enum convtune_lds {
    CONVTUNE_LDS_PADDED = 0,
    CONVTUNE_LDS_SWIZZLED = 1
} convtune_lds;

/* Matrix instruction path (NVIDIA). */
typedef enum convtune_mma {
    CONVTUNE_MMA_SYNC = 0,           /* mma.sync (MFMA/FMA on other targets) */
    CONVTUNE_MMA_WGMMA = 1,          /* Hopper wgmma, wait_group 0 */
    CONVTUNE_MMA_WGMMA_IN_FLIGHT = 2 /* Hopper wgmma, one group in flight */
} convtune_mma;

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
     * sk rs mma): block tile, warp tile, pipeline stages, vector widths of A/B/C, LDS layout,
     * split-K factor, block rasterisation group, matrix instruction path. */
    uint32_t block_m, block_n, block_k;
    uint32_t warp_m, warp_n;
    uint32_t stages;
    uint32_t vec_a, vec_b, vec_c;
    int32_t lds; /* convtune_lds */
    uint32_t split_k;
    uint32_t raster;
    int32_t mma; /* convtune_mma */
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
