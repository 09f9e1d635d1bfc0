/* Configuration: NEO_CACHE_* semantics, defaults, and invalid input. Criterion
 * runs every test in its own process, so setenv does not leak between them. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zecache/config.h"
#include "zecache/log.h"

static const char *const cache_variables[] = {
    "NEO_CACHE_PERSISTENT",
    "NEO_CACHE_DIR",
    "NEO_CACHE_MAX_SIZE",
    "NEO_CACHE_MEMORY_SIZE",
    "NEO_CACHE_COMPRESSION_LEVEL",
    "NEO_CACHE_SHARED",
    "NEO_CACHE_WAIT_TIMEOUT_MS",
    "PrintDebugMessages",
    "NEO_PrintDebugMessages",
    "NEO_L0_PrintDebugMessages",
    "BinaryCacheTrace",
    "NEO_BinaryCacheTrace",
    "NEO_L0_BinaryCacheTrace",
    "XDG_CACHE_HOME",
};

static void clean_environment(void)
{
    for (size_t i = 0; i < sizeof cache_variables / sizeof cache_variables[0]; i++)
        unsetenv(cache_variables[i]);
    setenv("HOME", "/home/tester", 1);
}

TestSuite(config, .init = clean_environment);

Test(config, defaults_follow_the_driver)
{
    zc_config config;
    zc_config_from_env(&config);
    cr_assert(config.persistent);
    cr_assert_eq(config.persistent_source, ZC_SOURCE_DEFAULT);
    cr_assert_eq(config.max_size, UINT64_C(1) << 30);
    cr_assert_eq(config.memory_size, ZC_DEFAULT_MEMORY_SIZE);
    cr_assert_eq(config.compression_level, 3);
    cr_assert_str_eq(config.dir, "/home/tester/.cache/neo_compiler_cache");
    cr_assert_not(config.dir_from_env);
    cr_assert_not(config.print_debug_messages);
    cr_assert_not(config.binary_cache_trace);
    cr_assert_not(config.allow_shared);
}

Test(config, xdg_cache_home_wins_over_home)
{
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    zc_config config;
    zc_config_from_env(&config);
    cr_assert_str_eq(config.dir, "/xdg/neo_compiler_cache");
}

Test(config, empty_xdg_cache_home_falls_back_to_home)
{
    setenv("XDG_CACHE_HOME", "", 1);
    zc_config config;
    zc_config_from_env(&config);
    cr_assert_str_eq(config.dir, "/home/tester/.cache/neo_compiler_cache");
}

Test(config, no_home_and_no_xdg_means_no_directory)
{
    unsetenv("HOME");
    zc_config config;
    zc_config_from_env(&config);
    cr_assert_str_eq(config.dir, "");
}

Test(config, neo_cache_dir_absolute_and_relative)
{
    setenv("NEO_CACHE_DIR", "/tmp/some/cache", 1);
    zc_config config;
    zc_config_from_env(&config);
    cr_assert_str_eq(config.dir, "/tmp/some/cache");
    cr_assert(config.dir_from_env);
    cr_assert_eq(config.dir_source, ZC_SOURCE_ENV);

    cr_assert_eq(chdir("/tmp"), 0);
    setenv("NEO_CACHE_DIR", "rel/dir", 1);
    zc_config_from_env(&config);
    cr_assert_str_eq(config.dir, "/tmp/rel/dir");
}

Test(config, all_values_read)
{
    setenv("NEO_CACHE_PERSISTENT", "0", 1);
    setenv("NEO_CACHE_MAX_SIZE", "0", 1);
    setenv("NEO_CACHE_MEMORY_SIZE", "1048576", 1);
    setenv("NEO_CACHE_COMPRESSION_LEVEL", "19", 1);
    setenv("NEO_CACHE_SHARED", "1", 1);
    setenv("BinaryCacheTrace", "1", 1);
    zc_config config;
    zc_config_from_env(&config);
    cr_assert_not(config.persistent);
    cr_assert_eq(config.persistent_source, ZC_SOURCE_ENV);
    cr_assert_eq(config.max_size, 0);
    cr_assert_eq(config.max_size_source, ZC_SOURCE_ENV);
    cr_assert_eq(config.memory_size, 1048576);
    cr_assert_eq(config.compression_level, 19);
    cr_assert(config.allow_shared);
    cr_assert(config.binary_cache_trace);
}

static void assert_wait_timeout(const char *value, uint64_t expected, zc_config_source source)
{
    setenv("NEO_CACHE_WAIT_TIMEOUT_MS", value, 1);
    zc_config config;
    zc_config_from_env(&config);
    cr_assert_eq(config.wait_timeout_ms, expected, "NEO_CACHE_WAIT_TIMEOUT_MS=%s", value);
    cr_assert_eq(config.wait_timeout_source, source, "NEO_CACHE_WAIT_TIMEOUT_MS=%s", value);
}

Test(config, wait_timeout_default_range_and_invalid)
{
    zc_config config;
    zc_config_from_env(&config);
    cr_assert_eq(config.wait_timeout_ms, 30000);
    cr_assert_eq(config.wait_timeout_source, ZC_SOURCE_DEFAULT);
    assert_wait_timeout("0", 0, ZC_SOURCE_ENV);
    assert_wait_timeout(" 250 ", 250, ZC_SOURCE_ENV);
    assert_wait_timeout("86400000", 86400000, ZC_SOURCE_ENV);
    assert_wait_timeout("86400001", 30000, ZC_SOURCE_INVALID);
    assert_wait_timeout("-1", 30000, ZC_SOURCE_INVALID);
    assert_wait_timeout("5s", 30000, ZC_SOURCE_INVALID);
}

Test(config, debug_keys_accept_driver_prefixes)
{
    setenv("NEO_L0_PrintDebugMessages", "1", 1);
    setenv("NEO_BinaryCacheTrace", "1", 1);
    zc_config config;
    zc_config_from_env(&config);
    cr_assert(config.print_debug_messages);
    cr_assert(config.binary_cache_trace);
    cr_assert(zc_log_enabled());
}

Test(config, parse_u64_edge_cases)
{
    uint64_t value = 7;
    cr_assert(zc_config_parse_u64("0", &value));
    cr_assert_eq(value, 0);
    cr_assert(zc_config_parse_u64(" 42 ", &value));
    cr_assert_eq(value, 42);
    cr_assert(zc_config_parse_u64("18446744073709551615", &value));
    cr_assert_eq(value, UINT64_MAX);
    value = 7;
    cr_assert_not(zc_config_parse_u64("18446744073709551616", &value));
    cr_assert_not(zc_config_parse_u64("99999999999999999999999", &value));
    cr_assert_not(zc_config_parse_u64("", &value));
    cr_assert_not(zc_config_parse_u64("   ", &value));
    cr_assert_not(zc_config_parse_u64("-1", &value));
    cr_assert_not(zc_config_parse_u64("+1", &value));
    cr_assert_not(zc_config_parse_u64("1G", &value));
    cr_assert_not(zc_config_parse_u64("0x10", &value));
    cr_assert_not(zc_config_parse_u64("1 2", &value));
    cr_assert_not(zc_config_parse_u64(NULL, &value));
    cr_assert_eq(value, 7, "a failed parse must not change the value");
}

struct invalid_case {
    const char *name;
    const char *value;
};

static void assert_invalid_falls_back(const char *name, const char *value)
{
    clean_environment();
    setenv(name, value, 1);
    zc_config config;
    zc_config_from_env(&config);
    cr_assert(config.persistent, "%s=%s", name, value);
    cr_assert_eq(config.max_size, ZC_DEFAULT_MAX_SIZE, "%s=%s", name, value);
    cr_assert_eq(config.memory_size, ZC_DEFAULT_MEMORY_SIZE, "%s=%s", name, value);
    cr_assert_eq(config.compression_level, ZC_DEFAULT_COMPRESSION_LEVEL, "%s=%s", name, value);
    cr_assert_not(config.allow_shared, "%s=%s", name, value);
}

Test(config, invalid_values_mean_the_default)
{
    static const char *const names[] = {"NEO_CACHE_PERSISTENT", "NEO_CACHE_MAX_SIZE",
                                        "NEO_CACHE_MEMORY_SIZE", "NEO_CACHE_COMPRESSION_LEVEL",
                                        "NEO_CACHE_SHARED"};
    static const char *const values[] = {"",     "abc", "-1", "1.5", "99999999999999999999999",
                                         "12abc"};
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++)
        for (size_t v = 0; v < sizeof values / sizeof values[0]; v++)
            assert_invalid_falls_back(names[n], values[v]);
    assert_invalid_falls_back("NEO_CACHE_COMPRESSION_LEVEL", "0");
    assert_invalid_falls_back("NEO_CACHE_COMPRESSION_LEVEL", "20");
    assert_invalid_falls_back("NEO_CACHE_PERSISTENT", "2");
}

Test(config, invalid_value_reports_its_source)
{
    setenv("NEO_CACHE_MAX_SIZE", "lots", 1);
    setenv("NEO_CACHE_DIR", "", 1);
    zc_config config;
    zc_config_from_env(&config);
    cr_assert_eq(config.max_size_source, ZC_SOURCE_INVALID);
    cr_assert_eq(config.dir_source, ZC_SOURCE_INVALID);
    cr_assert_str_eq(config.dir, "/home/tester/.cache/neo_compiler_cache");
}

static void redirect_stderr(void)
{
    clean_environment();
    cr_redirect_stderr();
}

Test(config, invalid_value_message_under_print_debug_messages, .init = redirect_stderr)
{
    setenv("PrintDebugMessages", "1", 1);
    setenv("NEO_CACHE_MAX_SIZE", "-5", 1);
    zc_config config;
    zc_config_from_env(&config);
    fflush(stderr);
    char expected[256];
    snprintf(expected, sizeof expected,
             "PID %ld [Cache failure]: invalid NEO_CACHE_MAX_SIZE=\"-5\" (expected an integer "
             "from 0 to 18446744073709551615); using 1073741824 errno: 22\n",
             (long)getpid());
    cr_assert_stderr_eq_str(expected);
}

Test(config, silent_without_print_debug_messages, .init = redirect_stderr)
{
    setenv("NEO_CACHE_MAX_SIZE", "-5", 1);
    zc_config config;
    zc_config_from_env(&config);
    fflush(stderr);
    cr_assert_stderr_eq_str("");
}
