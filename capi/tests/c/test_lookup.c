/* The C API as a C compiler sees it: compiled with the system cc against include/convtune.h
 * and linked against libconvtune_c (capi/tests/run-c-test.sh builds and runs it in CI). */
#include "convtune.h"

#include <math.h>
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

/* The user database of the environment must not change what this test sees. */
static const char *NO_USER_DB = "/nonexistent/convtune-c-test.toml";

static const char *SEED_003 =
    "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 -l 1 -j 1 -g 1 "
    "-F 2 --layout NHWC";
/* What the shipped database answers for seed 003: the first argument (run-c-test.sh reads it
 * from tuned-db/sm_90.toml, so a re-tune edits no test). */
static const char *SEED_003_CONFIG;

/* The number after `key` (e.g. "bm=") in a config string; 0 when it is absent. */
static unsigned field(const char *config, const char *key) {
    const char *at = strstr(config, key);
    return at ? (unsigned)strtoul(at + strlen(key), NULL, 10) : 0;
}

static convtune_problem seed_003(const char *layout) {
    convtune_problem p;
    memset(&p, 0, sizeof p);
    p.direction = CONVTUNE_BWD_DATA;
    p.dtype = CONVTUNE_BF16;
    p.n = 16; p.c = 2048; p.h = 1; p.w = 512; p.k = 2048; p.y = 1; p.x = 2;
    p.stride_h = 1; p.stride_w = 2; p.dilation_h = 1; p.dilation_w = 1; p.groups = 1;
    p.layout = layout;
    return p;
}

static void abi_matches(void) {
    size_t problem_size = 0, config_size = 0;
    int version = convtune_abi_sizes(&problem_size, &config_size);
    CHECK(version == CONVTUNE_ABI_VERSION, "library ABI %d, header %d", version,
          CONVTUNE_ABI_VERSION);
    CHECK(problem_size == sizeof(convtune_problem), "library %zu, header %zu", problem_size,
          sizeof(convtune_problem));
    CHECK(config_size == sizeof(convtune_config), "library %zu, header %zu", config_size,
          sizeof(convtune_config));
    CHECK(strlen(convtune_version()) > 0, "empty version");
}

static void seed_003_is_found_exactly(void) {
    convtune_config from_str, from_struct;
    int rc = convtune_lookup_str(SEED_003, "sm_90", NO_USER_DB, &from_str);
    CHECK(rc == CONVTUNE_OK, "rc %d: %s", rc, convtune_last_error());
    CHECK(from_str.source == CONVTUNE_SOURCE_EXACT, "source %d: %s", from_str.source,
          from_str.reason);
    CHECK(strcmp(from_str.config, SEED_003_CONFIG) == 0, "config %s", from_str.config);
    CHECK(from_str.block_m == field(SEED_003_CONFIG, "bm=") &&
              from_str.block_n == field(SEED_003_CONFIG, "bn=") &&
              from_str.block_k == field(SEED_003_CONFIG, "bk="),
          "block %u %u %u", from_str.block_m, from_str.block_n, from_str.block_k);
    CHECK(from_str.warp_m == field(SEED_003_CONFIG, "wm=") &&
              from_str.warp_n == field(SEED_003_CONFIG, "wn=") &&
              from_str.stages == field(SEED_003_CONFIG, "st="),
          "warp %u %u stages %u", from_str.warp_m, from_str.warp_n, from_str.stages);
    CHECK(from_str.vec_a == field(SEED_003_CONFIG, "va=") &&
              from_str.vec_b == field(SEED_003_CONFIG, "vb=") &&
              from_str.vec_c == field(SEED_003_CONFIG, "vc="),
          "vectors");
    CHECK(from_str.split_k == field(SEED_003_CONFIG, "sk=") &&
              from_str.raster == field(SEED_003_CONFIG, "rs="),
          "sk %u rs %u", from_str.split_k, from_str.raster);
    /* Every field, enums included: the struct formats back to the same string. */
    char text[256];
    CHECK(convtune_config_format(&from_str, text, sizeof text) == CONVTUNE_OK &&
              strcmp(text, SEED_003_CONFIG) == 0,
          "formatted %s", text);
    CHECK(strstr(from_str.problem_key, "-I NHWGC -f GKYXC -O NHWGC") != NULL, "key %s",
          from_str.problem_key);
    CHECK(from_str.nearest_key[0] == '\0', "nearest key %s", from_str.nearest_key);

    /* The struct, in the short spelling and in the canonical one: one entry. */
    const char *spellings[] = {"NHWC", "NHWGC", "nhwgc"};
    for (size_t i = 0; i < sizeof spellings / sizeof *spellings; i++) {
        convtune_problem p = seed_003(spellings[i]);
        rc = convtune_lookup(&p, "sm_90", NO_USER_DB, &from_struct);
        CHECK(rc == CONVTUNE_OK, "%s: rc %d: %s", spellings[i], rc, convtune_last_error());
        CHECK(from_struct.source == CONVTUNE_SOURCE_EXACT, "%s: source %d", spellings[i],
              from_struct.source);
        CHECK(strcmp(from_struct.config, SEED_003_CONFIG) == 0, "%s: config %s", spellings[i],
              from_struct.config);
        CHECK(strcmp(from_struct.problem_key, from_str.problem_key) == 0, "%s: key %s",
              spellings[i], from_struct.problem_key);
    }
    /* Per-tensor overrides: the same problem spelled tensor by tensor (rocMLIR's ngkhw output). */
    convtune_problem p = seed_003(NULL);
    p.in_layout = "nhwgc";
    p.fil_layout = "gkyxc";
    p.out_layout = "nhwgk";
    rc = convtune_lookup(&p, "sm_90", NO_USER_DB, &from_struct);
    CHECK(rc == CONVTUNE_OK && from_struct.source == CONVTUNE_SOURCE_EXACT, "rc %d source %d: %s",
          rc, from_struct.source, convtune_last_error());
}

/* A shipped split-K entry with the in-kernel fix-up, loaded warp-specialised. */
static void new_fields_round_trip(void) {
    convtune_config c;
    char text[CONVTUNE_CONFIG_LEN];
    int rc = convtune_lookup_str(
        "convbfp16 -F 4 -n 32 -c 512 -H 28 -W 28 -k 1024 -y 1 -x 1 -p 0 -q 0 -u 2 -v 2 -l 1 -j 1 "
        "-g 1 -I NHWGC -f GKYXC -O NHWGC", "sm_90", NO_USER_DB, &c);
    CHECK(rc == CONVTUNE_OK && c.source == CONVTUNE_SOURCE_EXACT, "rc %d source %d: %s", rc,
          c.source, convtune_last_error());
    /* Its split-K is whatever the shipped re-tune chose, but more than one slice. */
    CHECK(c.split_k > 1 && c.red == CONVTUNE_RED_FIXUP && c.ld == CONVTUNE_LD_WS,
          "sk %u red %d ld %d (%s)", c.split_k, c.red, c.ld, c.config);
    rc = convtune_config_format(&c, text, sizeof text);
    CHECK(rc == CONVTUNE_OK && strcmp(text, c.config) == 0, "rc %d: %s vs %s", rc, text,
          c.config);
    /* Change fields, print the config. */
    c.red = CONVTUNE_RED_ATOMIC;
    c.ld = CONVTUNE_LD_TMA;
    char sk[24];
    snprintf(sk, sizeof sk, ",sk=%u,", c.split_k);
    rc = convtune_config_format(&c, text, sizeof text);
    CHECK(rc == CONVTUNE_OK && strstr(text, sk) && strstr(text, "red=atomic,ld=tma"),
          "rc %d: %s", rc, text);
    c.ld = 7;
    rc = convtune_config_format(&c, text, sizeof text);
    CHECK(rc == CONVTUNE_ERR_CONFIG && strstr(convtune_last_error(), "ld"), "rc %d: %s", rc,
          convtune_last_error());
    c.ld = CONVTUNE_LD_CP;
    rc = convtune_config_format(&c, text, 8);
    CHECK(rc == CONVTUNE_ERR_BUFFER, "rc %d", rc);
}

static void deterministic_lookup_passes_over_atomics(void) {
    /* The shipped entry of this grouped bwd-weight problem splits K 16 ways by atomics. */
    const char *line = "convbfp16 -n 32 -c 160 -H 56 -W 56 -k 160 -y 3 -x 3 -p 1 -q 1 -g 5 -F 4 "
                       "--layout NHWC";
    convtune_config plain, det;
    int rc = convtune_lookup_str(line, "sm_90", NO_USER_DB, &plain);
    CHECK(rc == CONVTUNE_OK, "rc %d: %s", rc, convtune_last_error());
    CHECK(plain.source == CONVTUNE_SOURCE_EXACT && plain.split_k > 1 &&
              plain.red == CONVTUNE_RED_ATOMIC,
          "plain: %s", plain.config);
    rc = convtune_lookup_str_deterministic(line, "sm_90", NO_USER_DB, &det);
    CHECK(rc == CONVTUNE_OK, "rc %d: %s", rc, convtune_last_error());
    CHECK(det.source != CONVTUNE_SOURCE_EXACT, "source %d", det.source);
    CHECK(det.split_k == 1 || det.red != CONVTUNE_RED_ATOMIC, "deterministic: %s", det.config);
    CHECK(strstr(det.reason, "atomics") != NULL, "reason: %s", det.reason);
    printf("deterministic: %s\n", det.config);
}

static void untuned_problem_falls_back(void) {
    convtune_config out;
    int rc = convtune_lookup_str("conv -n 3 -c 24 -H 17 -W 9 -k 40 -y 3 -x 3 -p 1 -q 1 -F 1",
                                 "sm_90", NO_USER_DB, &out);
    CHECK(rc == CONVTUNE_OK, "rc %d: %s", rc, convtune_last_error());
    CHECK(out.source == CONVTUNE_SOURCE_NEAREST || out.source == CONVTUNE_SOURCE_QUICK ||
              out.source == CONVTUNE_SOURCE_HEURISTIC,
          "source %d", out.source);
    if (out.source == CONVTUNE_SOURCE_NEAREST) {
        CHECK(out.nearest_distance > 0.0 && out.nearest_key[0] != '\0', "nearest %f %s",
              out.nearest_distance, out.nearest_key);
    }
    CHECK(strncmp(out.config, "v", 1) == 0 && out.block_m > 0 && out.stages > 0, "config %s",
          out.config);
    CHECK(strlen(out.reason) > 0, "no reason");
    printf("untuned problem: %s (source %d)\n  why: %s\n", out.config, out.source, out.reason);
}

/* The candidate lookup: the lookup's answer first, then other configs; a bad capacity is an
 * error. What a C caller that times kernels at first use calls. */
static void candidates_start_with_the_answer(void) {
    const char *line = "conv -n 3 -c 24 -H 17 -W 9 -k 40 -y 3 -x 3 -p 1 -q 1 -F 1";
    convtune_config one, list[4];
    size_t count = 0, i, j;
    int rc = convtune_lookup_str(line, "sm_90", NO_USER_DB, &one);
    CHECK(rc == CONVTUNE_OK, "%s", convtune_last_error());
    rc = convtune_lookup_candidates_str(line, "sm_90", NO_USER_DB, 0, list, 4, &count);
    CHECK(rc == CONVTUNE_OK, "%s", convtune_last_error());
    CHECK(count >= 2 && count <= 4, "%zu candidates", count);
    CHECK(strcmp(list[0].config, one.config) == 0, "%s vs %s", list[0].config, one.config);
    for (i = 0; i < count; i++)
        for (j = i + 1; j < count; j++)
            CHECK(strcmp(list[i].config, list[j].config) != 0, "twice: %s", list[i].config);
    rc = convtune_lookup_candidates_str(line, "sm_90", NO_USER_DB, 0, list,
                                        CONVTUNE_MAX_CANDIDATES + 1, &count);
    CHECK(rc == CONVTUNE_ERR_BUFFER, "rc %d", rc);
}

/* A first use's second round: the candidates' times in, new configs out (none of those
 * timed); all failed: nothing to search around. */
static void a_second_round_from_the_times(void) {
    const char *line = "conv -n 3 -c 24 -H 17 -W 9 -k 40 -y 3 -x 3 -p 1 -q 1 -F 1";
    convtune_config list[4], next[CONVTUNE_SECOND_ROUND_CANDIDATES];
    const char *configs[4];
    double times[4];
    size_t count = 0, n = 0, i, j;
    int rc = convtune_lookup_candidates_str(line, "sm_90", NO_USER_DB, 0, list, 4, &count);
    CHECK(rc == CONVTUNE_OK, "%s", convtune_last_error());
    for (i = 0; i < count; i++) {
        configs[i] = list[i].config;
        times[i] = 20.0 - (double)i; /* the last listed measured fastest */
    }
    rc = convtune_second_round_str(line, "sm_90", 0, configs, times, count, next,
                                   CONVTUNE_SECOND_ROUND_CANDIDATES, &n);
    CHECK(rc == CONVTUNE_OK, "%s", convtune_last_error());
    CHECK(n == CONVTUNE_SECOND_ROUND_CANDIDATES, "%zu in the second round", n);
    for (i = 0; i < n; i++)
        for (j = 0; j < count; j++)
            CHECK(strcmp(next[i].config, list[j].config) != 0, "measured again: %s",
                  next[i].config);
    for (i = 0; i < count; i++)
        times[i] = NAN; /* failed */
    rc = convtune_second_round_str(line, "sm_90", 0, configs, times, count, next,
                                   CONVTUNE_SECOND_ROUND_CANDIDATES, &n);
    CHECK(rc == CONVTUNE_OK && n == 0, "rc %d, %zu", rc, n);
}

/* Named GPUs: seed 003 was tuned on the H200 (the home device, what a lookup naming no GPU
 * gets) and on an H100: each gets its own entry, exact. On a GPU nothing was tuned on (an H20)
 * the home device's winner comes first as a distance-0 neighbour naming that GPU, then more
 * candidates. A name without its SM count is an error. */
static void a_named_gpu_gets_its_own_entries(void) {
    const char *line = "convbfp16 -n 16 -c 2048 -H 1 -W 512 -k 2048 -y 1 -x 2 -p 0 -q 0 -u 1 -v 2 "
                       "-l 1 -j 1 -g 1 -F 2 --layout NHWC";
    convtune_config plain, list[4];
    size_t count = 0;
    int rc = convtune_lookup_str(line, "sm_90", NO_USER_DB, &plain);
    CHECK(rc == CONVTUNE_OK && plain.source == 0, "%d %s", rc, convtune_last_error());
    rc = convtune_lookup_candidates_gpu_str(line, "sm_90", NO_USER_DB, 0, "NVIDIA H200", 132,
                                            list, 4, &count);
    CHECK(rc == CONVTUNE_OK && list[0].source == 0, "%d %s", rc, convtune_last_error());
    CHECK(strcmp(list[0].config, plain.config) == 0, "%s vs %s", list[0].config, plain.config);
    rc = convtune_lookup_candidates_gpu_str(line, "sm_90", NO_USER_DB, 0,
                                            "NVIDIA H100 80GB HBM3", 132, list, 4, &count);
    CHECK(rc == CONVTUNE_OK && list[0].source == 0, "%d %s", rc, convtune_last_error());
    CHECK(strcmp(list[0].config, plain.config) != 0, "the H100's own entry: %s", list[0].config);
    CHECK(strstr(list[0].reason, "NVIDIA H100") != NULL, "reason %s", list[0].reason);
    rc = convtune_lookup_candidates_gpu_str(line, "sm_90", NO_USER_DB, 0, "NVIDIA H20", 78, list,
                                            4, &count);
    CHECK(rc == CONVTUNE_OK, "%s", convtune_last_error());
    CHECK(count >= 2, "%zu candidates", count);
    CHECK(list[0].source == 1 && list[0].nearest_distance == 0.0, "source %d at %f",
          list[0].source, list[0].nearest_distance);
    CHECK(strcmp(list[0].config, plain.config) == 0, "%s vs %s", list[0].config, plain.config);
    CHECK(strstr(list[0].reason, "NVIDIA H200") != NULL, "reason %s", list[0].reason);
    rc = convtune_lookup_candidates_gpu_str(line, "sm_90", NO_USER_DB, 0, "NVIDIA H200", 0,
                                            list, 4, &count);
    CHECK(rc == CONVTUNE_ERR_ARCH, "rc %d", rc);
}

static void errors_are_codes_and_messages(void) {
    convtune_config out;
    int rc = convtune_lookup_str("conv -n 16 -c 0 -F 1", "sm_90", NULL, &out);
    CHECK(rc == CONVTUNE_ERR_PROBLEM, "rc %d", rc);
    CHECK(strstr(convtune_last_error(), "-c") != NULL, "message %s", convtune_last_error());

    rc = convtune_lookup_str("not a problem", "sm_90", NULL, &out);
    CHECK(rc == CONVTUNE_ERR_PROBLEM, "rc %d", rc);
    CHECK(strstr(convtune_last_error(), "not a problem") != NULL, "message %s",
          convtune_last_error());

    rc = convtune_lookup_str(SEED_003, "sm_42", NULL, &out);
    CHECK(rc == CONVTUNE_ERR_ARCH, "rc %d", rc);
    CHECK(strstr(convtune_last_error(), "sm_42") != NULL, "message %s", convtune_last_error());

    rc = convtune_lookup_str(SEED_003, NULL, NULL, &out);
    CHECK(rc == CONVTUNE_ERR_NULL, "rc %d", rc);
    rc = convtune_lookup_str(SEED_003, "sm_90", NULL, NULL);
    CHECK(rc == CONVTUNE_ERR_NULL, "rc %d", rc);

    convtune_problem p = seed_003("NHWC");
    p.dtype = 9;
    rc = convtune_lookup(&p, "sm_90", NULL, &out);
    CHECK(rc == CONVTUNE_ERR_PROBLEM, "rc %d", rc);
    CHECK(strstr(convtune_last_error(), "dtype 9") != NULL, "message %s", convtune_last_error());

    p = seed_003("NHWX");
    rc = convtune_lookup(&p, "sm_90", NULL, &out);
    CHECK(rc == CONVTUNE_ERR_PROBLEM, "rc %d", rc);
    CHECK(strstr(convtune_last_error(), "NHWX") != NULL, "message %s", convtune_last_error());

    rc = convtune_lookup_str("conv -n 1 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 \xff", "sm_90", NULL, &out);
    CHECK(rc == CONVTUNE_ERR_UTF8, "rc %d: %s", rc, convtune_last_error());
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s SEED_003_SHIPPED_CONFIG\n", argv[0]);
        return 2;
    }
    SEED_003_CONFIG = argv[1];
    abi_matches();
    seed_003_is_found_exactly();
    new_fields_round_trip();
    untuned_problem_falls_back();
    deterministic_lookup_passes_over_atomics();
    candidates_start_with_the_answer();
    a_second_round_from_the_times();
    a_named_gpu_gets_its_own_entries();
    errors_are_codes_and_messages();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
