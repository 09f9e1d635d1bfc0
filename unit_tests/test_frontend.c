/* The API-neutral front end (source/frontend/): a request's key, and the
 * lookup flow behind a layer's callbacks, driven by a stand-in layer that
 * counts what it is asked to do. */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"
#include "zecache/driver_cache.h"
#include "zecache/frontend.h"
#include "zecache/frontend_process.h"
#include "zecache/frontend_several.h"
#include "zecache/key_request.h"

/* ---- requests ---- */

#define SPIRV_HEADER_SIZE 20

typedef struct test_spirv {
    uint8_t bytes[SPIRV_HEADER_SIZE + 8];
    size_t size;
} test_spirv;

/* Bytes that pass the key's SPIR-V header check (magic, version 1.0,
 * generator 0, bound 1, schema 0) and two words of body: only inputs with
 * spec constants are parsed further. */
static test_spirv spirv_with_body(const char body[8])
{
    static const uint8_t header[SPIRV_HEADER_SIZE] = {0x03, 0x02, 0x23, 0x07, 0, 0, 1, 0, 0, 0,
                                                      0,    0,    1,    0,    0, 0, 0, 0, 0, 0};
    test_spirv spirv = {.size = sizeof spirv.bytes};
    memcpy(spirv.bytes, header, sizeof header);
    memcpy(spirv.bytes + sizeof header, body, 8);
    return spirv;
}

static zc_build_input spirv_input(const test_spirv *spirv, const char *flags)
{
    return (zc_build_input){
        .kind = ZC_INPUT_SPIRV, .bytes = spirv->bytes, .size = spirv->size, .flags = flags};
}

/* A plain Level Zero module (ZE_MODULE_FORMAT_IL_SPIRV is 0). */
static zc_build_request level_zero_request(const zc_build_input *input)
{
    return (zc_build_request){.api = ZC_API_LEVEL_ZERO, .input_count = 1, .inputs = input};
}

static zc_key key_of(zc_key_builder *builder)
{
    zc_key key;
    cr_assert_eq(zc_key_finish(builder, &key), ZC_OK);
    zc_key_builder_destroy(builder);
    return key;
}

static zc_key_builder *new_builder(void)
{
    zc_key_builder *builder = NULL;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    return builder;
}

static void assert_key_hex(const zc_key *key, const char *expected)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    cr_assert_str_eq(hex, expected);
}

/* ---- a request's inputs in the key ---- */

/* The keys Level Zero modules had before requests existed, for fixed
 * inputs: these digests must never change, or every existing cache misses.
 * Each is checked both through the calls the layer made then and through a
 * request. */
#define PLAIN_MODULE_KEY "970ee86ae9bfc8534e4e19acf1626b21473a191bef3db98719cac49f82f42300"
#define PROGRAM_KEY "963ee8bdd0c08294976d710c2f90ab2ac386aa50243c2463708dc1684b2a1678"

Test(key_request, level_zero_module_keys_are_those_of_before)
{
    test_spirv spirv = spirv_with_body("plainmod");
    zc_key_builder *before = new_builder();
    cr_assert_eq(zc_key_add_spirv(before, spirv.bytes, spirv.size, "-ze-opt-level=2", NULL), ZC_OK);
    zc_key expected = key_of(before);

    zc_build_input input = spirv_input(&spirv, "-ze-opt-level=2");
    zc_build_request request = level_zero_request(&input);
    zc_key_builder *builder = new_builder();
    cr_assert_eq(zc_key_add_request(builder, &request, ZC_OPENCL_C_ANY_DRIVER), ZC_OK);
    zc_key key = key_of(builder);
    cr_assert(zc_key_equal(&key, &expected));
    assert_key_hex(&key, PLAIN_MODULE_KEY);
}

Test(key_request, level_zero_program_keys_are_those_of_before)
{
    test_spirv first = spirv_with_body("program1"), second = spirv_with_body("program2");
    const char *flags[2] = {"", NULL};
    uint32_t count = 2;
    zc_key_builder *before = new_builder();
    cr_assert_eq(
        zc_key_add_hardware(before, "module program extension: input count", &count, sizeof count),
        ZC_OK);
    cr_assert_eq(zc_key_add_spirv(before, first.bytes, first.size, flags[0], NULL), ZC_OK);
    cr_assert_eq(zc_key_add_spirv(before, second.bytes, second.size, flags[1], NULL), ZC_OK);
    zc_key expected = key_of(before);

    zc_build_input inputs[2] = {spirv_input(&first, flags[0]), spirv_input(&second, flags[1])};
    zc_build_request request = {
        .api = ZC_API_LEVEL_ZERO, .program = true, .input_count = 2, .inputs = inputs};
    zc_key_builder *builder = new_builder();
    cr_assert_eq(zc_key_add_request(builder, &request, ZC_OPENCL_C_ANY_DRIVER), ZC_OK);
    zc_key key = key_of(builder);
    cr_assert(zc_key_equal(&key, &expected));
    assert_key_hex(&key, PROGRAM_KEY);
}

static zc_status request_key(const zc_build_request *request, zc_key *key)
{
    zc_key_builder *builder = new_builder();
    zc_status status = zc_key_add_request(builder, request, ZC_OPENCL_C_ANY_DRIVER);
    if (status == ZC_OK)
        status = zc_key_finish(builder, key);
    zc_key_builder_destroy(builder);
    return status;
}

/* The same SPIR-V with the same options through OpenCL never shares Level
 * Zero's entry, nor does what OpenCL makes of it (an executable, a compiled
 * object) share one with the other. */
Test(key_request, the_api_and_the_format_are_keyed_for_opencl)
{
    test_spirv spirv = spirv_with_body("bothapis");
    zc_build_input input = spirv_input(&spirv, "-cl-fast-relaxed-math");
    zc_build_request request = level_zero_request(&input);
    zc_key level_zero, built, compiled;
    cr_assert_eq(request_key(&request, &level_zero), ZC_OK);
    request.api = ZC_API_OPENCL;
    request.format = ZC_OPENCL_BUILD_IL;
    cr_assert_eq(request_key(&request, &built), ZC_OK);
    request.format = ZC_OPENCL_COMPILE_IL;
    cr_assert_eq(request_key(&request, &compiled), ZC_OK);
    cr_assert(!zc_key_equal(&level_zero, &built));
    cr_assert(!zc_key_equal(&level_zero, &compiled));
    cr_assert(!zc_key_equal(&built, &compiled));
}

/* Level Zero's format value is not keyed (only IL_SPIRV reaches the key, as
 * before), and a plain module is not a program of one input. */
Test(key_request, a_program_of_one_input_is_not_a_plain_module)
{
    test_spirv spirv = spirv_with_body("oneinput");
    zc_build_input input = spirv_input(&spirv, NULL);
    zc_build_request request = level_zero_request(&input);
    zc_key plain, program;
    cr_assert_eq(request_key(&request, &plain), ZC_OK);
    request.program = true;
    cr_assert_eq(request_key(&request, &program), ZC_OK);
    cr_assert(!zc_key_equal(&plain, &program));
}

Test(key_request, requests_without_inputs_are_not_cacheable)
{
    test_spirv spirv = spirv_with_body("notempty");
    zc_build_input input = spirv_input(&spirv, NULL);
    zc_build_request request = level_zero_request(&input);
    zc_key key;
    request.inputs = NULL;
    cr_assert_eq(request_key(&request, &key), ZC_NOT_CACHEABLE);
    request.inputs = &input;
    request.input_count = 0;
    cr_assert_eq(request_key(&request, &key), ZC_NOT_CACHEABLE);
    request.input_count = 1;
    input.size = 0;
    cr_assert_eq(request_key(&request, &key), ZC_NOT_CACHEABLE);
    input.size = spirv.size;
    input.bytes = NULL;
    cr_assert_eq(request_key(&request, &key), ZC_NOT_CACHEABLE);
}

/* clCompileProgram's headers given by name: their names and texts are
 * keyed, in order; one without a text cannot be. */
Test(key_request, headers_given_by_name_are_keyed_by_name_and_text)
{
    static const char source[] = "#include \"given.h\"\nkernel void k(global int *a) { *a = V; }";
    zc_build_input input = {
        .kind = ZC_INPUT_OPENCL_C, .bytes = source, .size = sizeof source - 1, .flags = ""};
    zc_named_header header = {"given.h", "#define V 1\n", 12};
    zc_build_request request = {.api = ZC_API_OPENCL,
                                .format = ZC_OPENCL_COMPILE_SOURCE,
                                .input_count = 1,
                                .inputs = &input,
                                .header_count = 1,
                                .headers = &header};
    zc_key given, other_text, other_name, none;
    cr_assert_eq(request_key(&request, &given), ZC_OK);
    header.text = "#define V 2\n";
    cr_assert_eq(request_key(&request, &other_text), ZC_OK);
    header.name = "other.h";
    cr_assert_eq(request_key(&request, &other_name), ZC_OK);
    request.header_count = 0;
    cr_assert_eq(request_key(&request, &none), ZC_OK);
    cr_assert(!zc_key_equal(&given, &other_text));
    cr_assert(!zc_key_equal(&other_text, &other_name));
    cr_assert(!zc_key_equal(&given, &none));
    request.header_count = 1;
    header.text = NULL;
    cr_assert_eq(request_key(&request, &none), ZC_NOT_CACHEABLE);
}

/* clLinkProgram's inputs: each compiled object byte for byte, with the
 * link's options byte for byte (none given is not ""). */
Test(key_request, objects_are_keyed_by_their_bytes_and_the_link_options)
{
    uint8_t first[] = {1, 2, 3}, second[] = {4, 5};
    zc_build_input inputs[2] = {
        {.kind = ZC_INPUT_OBJECT, .bytes = first, .size = sizeof first, .flags = NULL},
        {.kind = ZC_INPUT_OBJECT, .bytes = second, .size = sizeof second, .flags = NULL}};
    zc_build_request request = {.api = ZC_API_OPENCL,
                                .format = ZC_OPENCL_LINK,
                                .program = true,
                                .input_count = 2,
                                .inputs = inputs};
    zc_key none, empty, option, changed;
    cr_assert_eq(request_key(&request, &none), ZC_OK);
    inputs[0].flags = inputs[1].flags = "";
    cr_assert_eq(request_key(&request, &empty), ZC_OK);
    inputs[0].flags = inputs[1].flags = "-cl-denorms-are-zero";
    cr_assert_eq(request_key(&request, &option), ZC_OK);
    second[1] = 6;
    cr_assert_eq(request_key(&request, &changed), ZC_OK);
    cr_assert(!zc_key_equal(&none, &empty));
    cr_assert(!zc_key_equal(&empty, &option));
    cr_assert(!zc_key_equal(&option, &changed));
}

/* OpenCL C takes no specialization constants: a source input with some is
 * refused before its text is looked at. */
Test(key_request, constants_on_a_source_input_are_not_cacheable)
{
    static const char source[] = "kernel void k(global int *a) { a[0] = 1; }";
    zc_build_input input = {.kind = ZC_INPUT_OPENCL_C,
                            .bytes = source,
                            .size = sizeof source - 1,
                            .flags = "",
                            .has_constants = true};
    zc_build_request request = {
        .api = ZC_API_OPENCL, .format = ZC_OPENCL_BUILD_SOURCE, .input_count = 1, .inputs = &input};
    zc_key key;
    cr_assert_eq(request_key(&request, &key), ZC_NOT_CACHEABLE);
}

/* ---- a device's common parts ---- */

static const zc_library_identity driver_library = {
    .name = "libze_intel_gpu.so.1",
    .path = "/usr/lib/x86_64-linux-gnu/libze_intel_gpu.so.1.3.24595",
    .build_id = {0xde, 0xad, 0xbe, 0xef},
    .build_id_size = 4,
    .size = 12345678,
    .mtime_sec = 1700000000,
};

static const zc_compiler_identity compiler = {
    .libraries = {{.name = "libigc.so.1",
                   .path = "/usr/lib/x86_64-linux-gnu/libigc.so.1.0.12504",
                   .build_id = {1, 2, 3},
                   .build_id_size = 3,
                   .size = 87654321,
                   .mtime_sec = 1600000000}},
    .count = 1,
};

static const uint8_t properties[] = {1, 2, 3, 4, 5, 6, 7, 8};
static const uint8_t module_properties[] = {9, 10, 11};
static const uint32_t ip_version = 0x030c0000;

static const zc_device_part hardware[] = {
    {"device properties", properties, sizeof properties},
    {"device module properties", module_properties, sizeof module_properties},
    {"device IP version", &ip_version, sizeof ip_version},
};

static const zc_device_description device = {
    .identity = &device,
    .libraries = &driver_library,
    .library_count = 1,
    .driver_version = 0x01030000 | 24595,
    .driver_uuid = {0},
    .hardware = hardware,
    .hardware_count = 3,
    .meta = {.device_name = "Test GPU", .driver_version = "1.3.24595"},
};

/* The common parts in the order the Level Zero layer keyed them before the
 * front end existed: compiler, each driver library, hardware, environment,
 * then the inputs. */
Test(frontend_key, a_device_is_keyed_as_the_level_zero_layer_keyed_it)
{
    test_spirv spirv = spirv_with_body("commonpt");
    zc_key_builder *before = new_builder();
    cr_assert_eq(zc_key_add_compiler_identity(before, &compiler), ZC_OK);
    cr_assert_eq(
        zc_key_add_driver(before, &driver_library, device.driver_version, device.driver_uuid),
        ZC_OK);
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(
            zc_key_add_hardware(before, hardware[i].name, hardware[i].bytes, hardware[i].size),
            ZC_OK);
    cr_assert_eq(zc_key_add_environment(before), ZC_OK);
    cr_assert_eq(zc_key_add_spirv(before, spirv.bytes, spirv.size, "-g", NULL), ZC_OK);
    zc_key expected = key_of(before);

    zc_build_input input = spirv_input(&spirv, "-g");
    zc_build_request request = level_zero_request(&input);
    char *trace = NULL, reason[128];
    zc_key key, again;
    cr_assert_eq(
        zc_frontend_key(&request, &device, &compiler, false, &key, &trace, reason, sizeof reason),
        ZC_OK);
    cr_assert(zc_key_equal(&key, &expected));
    /* The second key starts from the kept prefix: the same. */
    cr_assert_eq(
        zc_frontend_key(&request, &device, &compiler, false, &again, &trace, reason, sizeof reason),
        ZC_OK);
    cr_assert(zc_key_equal(&again, &expected));
    cr_assert_null(trace);
}

/* A driver with its own compiler (PoCL's) has no IGC identity: its keys
 * are made, and differ from any IGC key of the same device and request. */
Test(frontend_key, a_driver_s_own_compiler_is_keyed_apart_from_igc)
{
    test_spirv spirv = spirv_with_body("owncompl");
    zc_build_input input = spirv_input(&spirv, NULL);
    zc_build_request request = level_zero_request(&input);
    char *trace = NULL, reason[128];
    zc_key with_igc, without;
    cr_assert_eq(zc_frontend_key(&request, &device, &compiler, false, &with_igc, &trace, reason,
                                 sizeof reason),
                 ZC_OK);
    cr_assert_eq(
        zc_frontend_key(&request, &device, NULL, false, &without, &trace, reason, sizeof reason),
        ZC_OK);
    cr_assert(!zc_key_equal(&with_igc, &without));
}

Test(frontend_key, refusals_say_why_and_errors_are_the_cache_s)
{
    test_spirv spirv = spirv_with_body("refusals");
    zc_build_input input = spirv_input(&spirv, NULL);
    zc_build_request request = level_zero_request(&input);
    request.input_count = 0;
    char *trace = NULL, reason[128];
    zc_key key;
    cr_assert_eq(
        zc_frontend_key(&request, &device, &compiler, true, &key, &trace, reason, sizeof reason),
        ZC_NOT_CACHEABLE);
    cr_assert_str_eq(reason, "an input is missing");
    cr_assert_null(trace);
    zc_device_description no_driver = device;
    no_driver.identity = &no_driver;
    no_driver.library_count = 0;
    request.input_count = 1;
    cr_assert_eq(zc_frontend_key(&request, &no_driver, &compiler, false, &key, &trace, reason,
                                 sizeof reason),
                 ZC_ERR_INVALID_ARG);
}

Test(frontend_key, a_traced_key_holds_the_api_and_every_part)
{
    test_spirv spirv = spirv_with_body("tracedky");
    zc_build_input input = spirv_input(&spirv, NULL);
    zc_build_request request = level_zero_request(&input);
    request.api = ZC_API_OPENCL;
    request.format = ZC_OPENCL_BUILD_IL;
    char *trace = NULL, reason[128];
    zc_key key;
    cr_assert_eq(
        zc_frontend_key(&request, &device, &compiler, true, &key, &trace, reason, sizeof reason),
        ZC_OK);
    cr_assert_not_null(trace);
    cr_assert_not_null(strstr(trace, "---- hardware: device IP version ----"));
    cr_assert_not_null(strstr(trace, "---- hardware: API ----"));
    cr_assert_not_null(strstr(trace, "---- hardware: API format ----"));
    free(trace);
}

/* ---- the lookup flow ---- */

/* A layer that counts what it is asked to do and does what the test says. */
typedef struct stand_in {
    int compiles, creates, alone;
    zc_status compile_status;
    zc_hit_outcome hit;
    bool alone_succeeds;
    const char *binary; /* what the next compile makes */
    char created[32];   /* the binary of the last hit */
    /* When not NULL, each compile first writes edit_text there, as a build
     * system rewriting a header while the driver compiles. */
    const char *edit_path, *edit_text;
} stand_in;

static zc_status stand_in_compile(void *context, zc_artifact **out)
{
    stand_in *layer = context;
    layer->compiles++;
    if (layer->edit_path != NULL)
        t_write_file(layer->edit_path, layer->edit_text, strlen(layer->edit_text));
    if (layer->compile_status != ZC_OK)
        return layer->compile_status;
    zc_artifact_meta meta = device.meta;
    meta.compile_ns = 1000000;
    *out = zc_artifact_create(layer->binary, strlen(layer->binary), "log", 3, &meta);
    return *out != NULL ? ZC_OK : ZC_ERR_NOMEM;
}

static zc_hit_outcome stand_in_create(void *context, const zc_artifact *artifact, char *detail,
                                      size_t detail_size)
{
    stand_in *layer = context;
    layer->creates++;
    size_t size;
    const uint8_t *binary = zc_artifact_binary(artifact, &size);
    snprintf(layer->created, sizeof layer->created, "%.*s", (int)size, (const char *)binary);
    snprintf(detail, detail_size, "the driver returned 0x78000004");
    return layer->hit;
}

static bool stand_in_alone(void *context)
{
    stand_in *layer = context;
    layer->alone++;
    return layer->alone_succeeds;
}

static const zc_frontend_ops ops = {stand_in_compile, stand_in_create, stand_in_alone};

static char scratch[64], cache_dir[80];
static zc_config config;
static atomic_bool hits_off;
static zc_frontend frontend;
static test_spirv flow_spirv;
static zc_build_input flow_input;
static zc_build_request flow_request;

static void open_cache(void)
{
    cr_assert_eq(zc_cache_open(&config, &frontend.cache), ZC_OK);
    cr_assert_not_null(zc_cache_disk_dir(frontend.cache));
}

static void set_up(void)
{
    t_make_scratch(scratch, sizeof scratch, "/tmp/zc_frontend_XXXXXX", cache_dir, sizeof cache_dir);
    config = (zc_config){.persistent = true,
                         .max_size = ZC_DEFAULT_MAX_SIZE,
                         .memory_size = ZC_DEFAULT_MEMORY_SIZE,
                         .compression_level = ZC_DEFAULT_COMPRESSION_LEVEL};
    snprintf(config.dir, sizeof config.dir, "%s", cache_dir);
    atomic_store(&hits_off, false);
    frontend = (zc_frontend){.config = &config, .hits_off = &hits_off};
    open_cache();
    flow_spirv = spirv_with_body("flowtest");
    flow_input = spirv_input(&flow_spirv, "-O2");
    flow_request = level_zero_request(&flow_input);
}

static void tear_down(void)
{
    zc_cache_close(frontend.cache);
    t_remove_tree(scratch);
}

TestSuite(frontend, .init = set_up, .fini = tear_down, .timeout = 60);

static stand_in new_layer(const char *binary)
{
    return (stand_in){
        .compile_status = ZC_OK, .hit = ZC_HIT_CREATED, .alone_succeeds = true, .binary = binary};
}

static zc_frontend_outcome build(stand_in *layer)
{
    return zc_frontend_build(&frontend, &flow_request, &device, NULL, &ops, layer);
}

static zc_cache_stats stats(void)
{
    zc_cache_stats snapshot;
    zc_cache_get_stats(frontend.cache, &snapshot);
    return snapshot;
}

/* What the layer was asked to do: builds, hits made, calls of the driver
 * alone. */
static void assert_calls(const stand_in *layer, int compiles, int creates, int alone)
{
    cr_assert_eq(layer->compiles, compiles);
    cr_assert_eq(layer->creates, creates);
    cr_assert_eq(layer->alone, alone);
}

/* What the cache counted: hits (memory and disk), misses, failed builds,
 * stores. */
static void assert_counted(uint64_t hits, uint64_t misses, uint64_t failed, uint64_t stores)
{
    zc_cache_stats s = stats();
    cr_assert_eq(s.memory_hits + s.disk_hits, hits);
    cr_assert_eq(s.misses, misses);
    cr_assert_eq(s.failed_builds, failed);
    cr_assert_eq(s.stores, stores);
}

Test(frontend, a_miss_is_built_and_stored_and_then_hits)
{
    stand_in layer = new_layer("binary-1");
    cr_assert_eq(build(&layer), ZC_FRONTEND_BUILT);
    cr_assert_eq(build(&layer), ZC_FRONTEND_PRESENT);
    assert_calls(&layer, 1, 1, 0);
    cr_assert_str_eq(layer.created, "binary-1");
    /* A new process: from disk. */
    zc_cache_close(frontend.cache);
    open_cache();
    cr_assert_eq(build(&layer), ZC_FRONTEND_PRESENT);
    assert_calls(&layer, 1, 2, 0);
    assert_counted(1, 0, 0, 0);
    cr_assert_eq(stats().disk_hits, 1);
}

Test(frontend, a_failed_build_is_the_driver_s_and_is_not_stored)
{
    stand_in layer = new_layer("never");
    layer.compile_status = ZC_ERR_BUILD;
    cr_assert_eq(build(&layer), ZC_FRONTEND_FAILED);
    cr_assert_eq(build(&layer), ZC_FRONTEND_FAILED);
    assert_calls(&layer, 2, 0, 0);
    assert_counted(0, 2, 2, 0);
}

/* A build that worked but whose artifact the layer could not take: the
 * application's call succeeded, nothing is stored, the next one builds. */
Test(frontend, an_artifact_not_taken_is_not_stored)
{
    stand_in layer = new_layer("untaken");
    layer.compile_status = ZC_ERR_IO;
    cr_assert_eq(build(&layer), ZC_FRONTEND_FAILED);
    layer.compile_status = ZC_OK;
    cr_assert_eq(build(&layer), ZC_FRONTEND_BUILT);
    assert_calls(&layer, 2, 0, 0);
    assert_counted(0, 2, 1, 1);
}

/* A hit the driver refuses is no hit: the compile that replaces it is the
 * lookup's miss, and its result is what later hits are made from. */
Test(frontend, a_refused_hit_is_compiled_as_a_miss_and_replaced)
{
    stand_in layer = new_layer("binary-1");
    cr_assert_eq(build(&layer), ZC_FRONTEND_BUILT);
    layer.hit = ZC_HIT_REFUSED;
    layer.binary = "binary-2";
    cr_assert_eq(build(&layer), ZC_FRONTEND_BUILT);
    assert_calls(&layer, 2, 1, 0);
    cr_assert_str_eq(layer.created, "binary-1");
    assert_counted(0, 2, 0, 2);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_REJECTED_BINARY], 1);
    layer.hit = ZC_HIT_CREATED;
    cr_assert_eq(build(&layer), ZC_FRONTEND_PRESENT);
    cr_assert_str_eq(layer.created, "binary-2");
    assert_calls(&layer, 2, 2, 0);
}

/* A binary the driver rebuilds: the driver alone, and no more hits for this
 * API in this process, not even lookups. */
Test(frontend, a_rebuilt_hit_turns_hits_off)
{
    stand_in layer = new_layer("binary-1");
    cr_assert_eq(build(&layer), ZC_FRONTEND_BUILT);
    layer.hit = ZC_HIT_REBUILT;
    cr_assert_eq(build(&layer), ZC_FRONTEND_UNCACHED);
    cr_assert(atomic_load(&hits_off));
    assert_calls(&layer, 1, 1, 1);
    cr_assert_eq(build(&layer), ZC_FRONTEND_BYPASS);
    assert_calls(&layer, 1, 1, 2);
    assert_counted(0, 1, 0, 1);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_REJECTED_BINARY], 1);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_NOT_CACHEABLE], 1);
    /* The driver alone failing is the application's failure. */
    layer.alone_succeeds = false;
    atomic_store(&hits_off, false);
    cr_assert_eq(build(&layer), ZC_FRONTEND_FAILED);
    cr_assert_eq(layer.alone, 3);
}

Test(frontend, a_request_the_key_refuses_goes_to_the_driver_alone)
{
    stand_in layer = new_layer("binary-1");
    flow_input.bytes = NULL;
    cr_assert_eq(build(&layer), ZC_FRONTEND_BYPASS);
    assert_calls(&layer, 0, 0, 1);
    assert_counted(0, 0, 0, 0);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_NOT_CACHEABLE], 1);
}

/* zecache prewarm reads one line per request from ZECACHE_REPORT_FD. */
Test(frontend, each_request_reports_its_outcome)
{
    char path[128], text[512], expected[512], hex[ZC_KEY_HEX_SIZE];
    snprintf(path, sizeof path, "%s/report", scratch);
    FILE *report = fopen(path, "w+");
    cr_assert_not_null(report);
    char fd[16];
    snprintf(fd, sizeof fd, "%d", fileno(report));
    setenv("ZECACHE_REPORT_FD", fd, 1);
    stand_in layer = new_layer("binary-1");
    cr_assert_eq(build(&layer), ZC_FRONTEND_BUILT);
    cr_assert_eq(build(&layer), ZC_FRONTEND_PRESENT);
    flow_input.size = 0;
    cr_assert_eq(build(&layer), ZC_FRONTEND_BYPASS);
    zc_frontend_bypass(frontend.cache, ZC_BYPASS_NATIVE_INPUT, "native");
    unsetenv("ZECACHE_REPORT_FD");
    fclose(report);

    flow_input.size = flow_spirv.size;
    zc_key key;
    char *trace = NULL, reason[128];
    cr_assert_eq(
        zc_frontend_key(&flow_request, &device, NULL, false, &key, &trace, reason, sizeof reason),
        ZC_OK);
    zc_key_to_hex(&key, hex);
    snprintf(expected, sizeof expected, "built %s\npresent %s\nbypass -\nbypass -\n", hex, hex);
    t_read_text(path, text, sizeof text);
    cr_assert_str_eq(text, expected);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_NATIVE_INPUT], 1);
}

static int recipes_found;

static int count_recipe(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    size_t length = strlen(path);
    recipes_found += length > 7 && strcmp(path + length - 7, ".recipe") == 0;
    return 0;
}

static int recipes(void)
{
    recipes_found = 0;
    cr_assert_eq(nftw(cache_dir, count_recipe, 16, FTW_PHYS), 0);
    return recipes_found;
}

/* Prewarm rebuilds Level Zero modules and whole OpenCL builds: an OpenCL
 * compile's inputs (one part of a later link) are not recorded, an OpenCL
 * build's and a Level Zero request's are, once stored. */
Test(frontend, compiles_are_not_recorded_builds_are)
{
    config.record_inputs = true;
    stand_in layer = new_layer("binary-1");
    flow_request.api = ZC_API_OPENCL;
    flow_request.format = ZC_OPENCL_COMPILE_IL;
    cr_assert_eq(build(&layer), ZC_FRONTEND_BUILT);
    cr_assert_eq(recipes(), 0);
    flow_request.format = ZC_OPENCL_BUILD_IL;
    cr_assert_eq(build(&layer), ZC_FRONTEND_BUILT);
    cr_assert_eq(recipes(), 1);
    flow_request.api = ZC_API_LEVEL_ZERO;
    flow_request.format = 0;
    cr_assert_eq(build(&layer), ZC_FRONTEND_BUILT);
    cr_assert_eq(recipes(), 2);
    assert_calls(&layer, 3, 0, 0);
    assert_counted(0, 3, 0, 3);
}

/* ---- files the key read, changed while the driver compiled ---- */

static char header_path[128], include_flags[400];
static zc_build_input source_input;

/* An OpenCL C source including a header found through -I in the scratch
 * directory. */
static void use_source_with_header(const char *header_text)
{
    static const char source[] =
        "#include \"edited.h\"\nkernel void k(global int *a) { a[0] = V; }\n";
    snprintf(header_path, sizeof header_path, "%s/edited.h", scratch);
    snprintf(include_flags, sizeof include_flags, "-I %s", scratch);
    t_write_file(header_path, header_text, strlen(header_text));
    source_input = (zc_build_input){.kind = ZC_INPUT_OPENCL_C,
                                    .bytes = source,
                                    .size = sizeof source - 1,
                                    .flags = include_flags};
    flow_request = (zc_build_request){.api = ZC_API_OPENCL,
                                      .format = ZC_OPENCL_BUILD_SOURCE,
                                      .input_count = 1,
                                      .inputs = &source_input};
}

/* The driver read a header other than the one keyed: what it made is the
 * application's, never stored under the old key (a later process would get
 * code of the new header for the old one). Counted as not cacheable. */
Test(frontend, a_header_changed_during_the_compile_is_not_stored)
{
    use_source_with_header("#define V 1\n");
    stand_in layer = new_layer("binary-of-v2");
    layer.edit_path = header_path;
    layer.edit_text = "#define V 2\n";
    cr_assert_eq(build(&layer), ZC_FRONTEND_FAILED);
    assert_calls(&layer, 1, 0, 0);
    assert_counted(0, 1, 0, 0);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_NOT_CACHEABLE], 1);
    /* Nothing under the old key, none in memory either: the header now holds
     * V 2 for good, so the next compile is stored and then hits. */
    layer.edit_path = NULL;
    cr_assert_eq(build(&layer), ZC_FRONTEND_BUILT);
    cr_assert_eq(build(&layer), ZC_FRONTEND_PRESENT);
    cr_assert_str_eq(layer.created, "binary-of-v2");
    assert_calls(&layer, 2, 1, 0);
    assert_counted(1, 2, 0, 1);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_NOT_CACHEABLE], 1);
}

/* Going back to the first header: its key has no entry, since the compile
 * made while it changed was not stored. */
Test(frontend, the_old_header_s_key_holds_nothing_from_the_new_one)
{
    use_source_with_header("#define V 1\n");
    stand_in layer = new_layer("binary-of-v2");
    layer.edit_path = header_path;
    layer.edit_text = "#define V 2\n";
    cr_assert_eq(build(&layer), ZC_FRONTEND_FAILED);
    layer.edit_text = "#define V 1\n";
    t_write_file(header_path, "#define V 1\n", 12);
    layer.binary = "binary-of-v1";
    cr_assert_eq(build(&layer), ZC_FRONTEND_BUILT);
    cr_assert_eq(build(&layer), ZC_FRONTEND_PRESENT);
    cr_assert_str_eq(layer.created, "binary-of-v1");
    assert_calls(&layer, 2, 1, 0);
}

/* A header the compile leaves as it was: stored as usual. */
Test(frontend, a_source_whose_headers_stay_is_stored)
{
    use_source_with_header("#define V 1\n");
    stand_in layer = new_layer("binary-of-v1");
    cr_assert_eq(build(&layer), ZC_FRONTEND_BUILT);
    cr_assert_eq(build(&layer), ZC_FRONTEND_PRESENT);
    assert_counted(1, 1, 0, 1);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_NOT_CACHEABLE], 0);
}

/* Thousands of distinct includes under #if 0, their headers absent: the
 * source is keyed once per request, a miss included (the check after the
 * compile reads the files the key read, it does not key again). */
Test(frontend, a_source_is_keyed_once_per_request)
{
    use_source_with_header("#define V 1\n");
    size_t size = 0;
    char *many = malloc(40 * 2100);
    cr_assert_not_null(many);
    size += (size_t)sprintf(many + size, "#include \"edited.h\"\n#if 0\n");
    for (int i = 0; i < 2046; i++)
        size += (size_t)sprintf(many + size, "#include <zc_absent_%d.h>\n", i);
    size += (size_t)sprintf(many + size, "#endif\nkernel void k(global int *a) { a[0] = V; }\n");
    source_input.bytes = many;
    source_input.size = size;
    stand_in layer = new_layer("binary-of-many");
    uint64_t before = zc_key_opencl_c_count();
    cr_assert_eq(build(&layer), ZC_FRONTEND_BUILT);
    cr_assert_eq(zc_key_opencl_c_count() - before, 1);
    cr_assert_eq(build(&layer), ZC_FRONTEND_PRESENT);
    cr_assert_eq(zc_key_opencl_c_count() - before, 2);
    assert_counted(1, 1, 0, 1);
    free(many);
}

/* A header appearing during the compile where the key found none, earlier
 * in the search than the one keyed: not stored. */
Test(frontend, a_header_made_during_the_compile_is_not_stored)
{
    use_source_with_header("#define V 1\n");
    static char shadow[160];
    snprintf(shadow, sizeof shadow, "%s/inc/edited.h", scratch);
    char dir[160];
    snprintf(dir, sizeof dir, "%s/inc", scratch);
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(include_flags, sizeof include_flags, "-I %s -I %s", dir, scratch);
    stand_in layer = new_layer("binary-of-v2");
    layer.edit_path = shadow;
    layer.edit_text = "#define V 2\n";
    cr_assert_eq(build(&layer), ZC_FRONTEND_FAILED);
    assert_counted(0, 1, 0, 0);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_NOT_CACHEABLE], 1);
}

/* ---- a layer's process ---- */

/* A forked child starts with its cache's counters at zero: the parent's
 * are merged into the stats file once, by the parent. */
Test(frontend, a_forked_child_starts_with_no_counts)
{
    zc_cache *started = zc_frontend_cache_start(&config, "test layer");
    cr_assert_not_null(started);
    zc_cache_count_bypass(started, ZC_BYPASS_NOT_CACHEABLE, NULL);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        zc_cache_stats counted;
        zc_cache_get_stats(started, &counted);
        _exit(counted.bypasses[ZC_BYPASS_NOT_CACHEABLE] == 0 ? 0 : 1);
    }
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child saw the parent's counts");
    zc_cache_stats counted;
    zc_cache_get_stats(started, &counted);
    cr_assert_eq(counted.bypasses[ZC_BYPASS_NOT_CACHEABLE], 1);
    zc_cache_close(started);
}

/* OpenCL's switches: NEO_CACHE_PERSISTENT and cl_cache_dir (default
 * ./cl_cache), hidden and put back as Level Zero's are; Level Zero's
 * directory switch is not OpenCL's business. */
Test(frontend, the_driver_s_opencl_cache_is_hidden_and_comes_back)
{
    char cwd[PATH_MAX];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    cr_assert_eq(chdir(scratch), 0);
    cr_assert_eq(mkdir("cl_cache", 0700), 0);
    unsetenv("cl_cache_dir");
    setenv("NEO_CACHE_PERSISTENT", "1", 1);
    setenv("l0_cache_dir", scratch, 1);
    cr_assert(zc_driver_cache_hide(ZC_API_OPENCL));
    cr_assert_str_eq(getenv("NEO_CACHE_PERSISTENT"), "00");
    cr_assert_str_eq(getenv("cl_cache_dir"), "/dev/null/zecache-keeps-the-driver-cache-off");
    cr_assert_str_eq(getenv("ZECACHE_ORIGINAL_cl_cache_dir"), "");
    cr_assert_str_eq(getenv("l0_cache_dir"), scratch);
    cr_assert(!zc_driver_cache_hide(ZC_API_OPENCL), "hidden already: nothing written");
    zc_driver_cache_restore_user_env(ZC_API_OPENCL);
    cr_assert_str_eq(getenv("NEO_CACHE_PERSISTENT"), "1");
    cr_assert_null(getenv("cl_cache_dir"));
    rmdir("cl_cache");
    cr_assert_eq(chdir(cwd), 0);
    unsetenv("NEO_CACHE_PERSISTENT");
    unsetenv("l0_cache_dir");
    unsetenv("ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT");
    unsetenv("ZECACHE_ORIGINAL_cl_cache_dir");
}

/* ---- a build for several devices ---- */

static const uint32_t second_ip_version = 0x030d0000;

static const zc_device_part second_hardware[] = {
    {"device properties", properties, sizeof properties},
    {"device module properties", module_properties, sizeof module_properties},
    {"device IP version", &second_ip_version, sizeof second_ip_version},
};

static const zc_device_description second_device = {
    .identity = &second_device,
    .libraries = &driver_library,
    .library_count = 1,
    .driver_version = 0x01030000 | 24595,
    .hardware = second_hardware,
    .hardware_count = 3,
    .meta = {.device_name = "Test GPU 2", .driver_version = "1.3.24595"},
};

static const zc_device_description *const both_devices[] = {&device, &second_device};
static const zc_compiler_identity *const no_compilers[] = {NULL, NULL};

/* Each compile makes "<binary>-<device index>"; a hit's binaries are kept
 * joined by commas. */
static zc_status several_compile(void *context, zc_artifact **out)
{
    stand_in *layer = context;
    layer->compiles++;
    if (layer->compile_status != ZC_OK)
        return layer->compile_status;
    for (size_t i = 0; i < 2; i++) {
        char binary[32];
        int length = snprintf(binary, sizeof binary, "%s-%zu", layer->binary, i);
        zc_artifact_meta meta = both_devices[i]->meta;
        meta.compile_ns = 1000000;
        out[i] = zc_artifact_create(binary, (size_t)length, "log", 3, &meta);
        cr_assert_not_null(out[i]);
    }
    return ZC_OK;
}

static zc_hit_outcome several_create(void *context, const zc_artifact *const *artifacts,
                                     char *detail, size_t detail_size)
{
    stand_in *layer = context;
    layer->creates++;
    size_t first, second;
    const uint8_t *binary = zc_artifact_binary(artifacts[0], &first);
    const uint8_t *other = zc_artifact_binary(artifacts[1], &second);
    snprintf(layer->created, sizeof layer->created, "%.*s,%.*s", (int)first, (const char *)binary,
             (int)second, (const char *)other);
    snprintf(detail, detail_size, "the driver returned 0x78000004");
    return layer->hit;
}

static const zc_frontend_several_ops several_ops = {several_compile, several_create,
                                                    stand_in_alone};

static zc_frontend_outcome build_both(stand_in *layer)
{
    return zc_frontend_build_several(&frontend, &flow_request, both_devices, no_compilers, 2,
                                     &several_ops, layer);
}

Test(frontend, a_build_for_two_devices_stores_both_and_then_hits_both)
{
    stand_in layer = new_layer("two");
    cr_assert_eq(build_both(&layer), ZC_FRONTEND_BUILT);
    assert_calls(&layer, 1, 0, 0);
    assert_counted(0, 2, 0, 2);
    zc_cache_close(frontend.cache);
    open_cache();
    cr_assert_eq(build_both(&layer), ZC_FRONTEND_PRESENT);
    assert_calls(&layer, 1, 1, 0);
    cr_assert_str_eq(layer.created, "two-0,two-1");
    assert_counted(2, 0, 0, 0);
    cr_assert_eq(stats().disk_hits, 2);
    /* Each entry is the one a build for that device alone finds. */
    stand_in single = new_layer("single");
    cr_assert_eq(zc_frontend_build(&frontend, &flow_request, &second_device, NULL, &ops, &single),
                 ZC_FRONTEND_PRESENT);
    assert_calls(&single, 0, 1, 0);
    cr_assert_str_eq(single.created, "two-1");
}

Test(frontend, a_partial_hit_is_one_driver_build_storing_what_was_missing)
{
    stand_in single = new_layer("single");
    cr_assert_eq(build(&single), ZC_FRONTEND_BUILT);
    stand_in layer = new_layer("two");
    cr_assert_eq(build_both(&layer), ZC_FRONTEND_BUILT);
    assert_calls(&layer, 1, 0, 0);
    /* The single build's miss, then one per device the driver compiled; the
     * first device's entry stays the single build's. */
    assert_counted(0, 3, 0, 2);
    cr_assert_eq(build_both(&layer), ZC_FRONTEND_PRESENT);
    assert_calls(&layer, 1, 1, 0);
    cr_assert_str_eq(layer.created, "single,two-1");
    assert_counted(2, 3, 0, 2);
}

Test(frontend, a_refused_hit_for_two_devices_compiles_and_replaces_both)
{
    stand_in layer = new_layer("old");
    cr_assert_eq(build_both(&layer), ZC_FRONTEND_BUILT);
    layer.hit = ZC_HIT_REFUSED;
    layer.binary = "new";
    cr_assert_eq(build_both(&layer), ZC_FRONTEND_BUILT);
    assert_calls(&layer, 2, 1, 0);
    assert_counted(0, 4, 0, 4);
    layer.hit = ZC_HIT_CREATED;
    cr_assert_eq(build_both(&layer), ZC_FRONTEND_PRESENT);
    cr_assert_str_eq(layer.created, "new-0,new-1");
}

Test(frontend, a_rebuilt_hit_for_two_devices_turns_hits_off)
{
    stand_in layer = new_layer("two");
    cr_assert_eq(build_both(&layer), ZC_FRONTEND_BUILT);
    layer.hit = ZC_HIT_REBUILT;
    cr_assert_eq(build_both(&layer), ZC_FRONTEND_UNCACHED);
    assert_calls(&layer, 1, 1, 1);
    cr_assert(atomic_load(&hits_off));
    assert_counted(0, 2, 0, 2);
    cr_assert_eq(build_both(&layer), ZC_FRONTEND_BYPASS);
    assert_calls(&layer, 1, 1, 2);
}

Test(frontend, a_failed_build_for_two_devices_stores_nothing)
{
    stand_in layer = new_layer("two");
    layer.compile_status = ZC_ERR_BUILD;
    cr_assert_eq(build_both(&layer), ZC_FRONTEND_FAILED);
    assert_counted(0, 2, 2, 0);
    layer.compile_status = ZC_OK;
    cr_assert_eq(build_both(&layer), ZC_FRONTEND_BUILT);
    assert_calls(&layer, 2, 0, 0);
}
