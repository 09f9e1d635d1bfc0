/* zecache prewarm on a cluster sharing Redis, on Intel's real driver: two
 * nodes that recorded the same modules prewarm at the same time after the
 * compiler upgrade; Redis's cross-node build lock has each module built
 * once in all (the other node takes it from Redis), and a third node with
 * an empty cache then compiles nothing. The same with an HTTP storage
 * (nginx, suite prewarm_http), whose recipes prewarm lists with PROPFIND. */
#include "prewarm_test_support.h"
#include "nginx_test_support.h"
#include "redis_test_support.h"

static t_redis server;
static char remote[512];

static void setup(void)
{
    scratch_create();
    t_redis_start(&server, NULL);
    snprintf(remote, sizeof remote, "NEO_CACHE_REMOTE=redis+unix://%s", server.socket);
}

static void teardown(void)
{
    t_redis_stop(&server);
    scratch_remove();
}

TestSuite(prewarm_redis, .init = setup, .fini = teardown, .timeout = 600);

typedef struct node_run {
    pid_t pid;
    char out[PATH_MAX];
} node_run;

/* Starts `zecache prewarm` for the node whose cache is dir. */
static void start_prewarm(node_run *node, const char *dir, const char *name)
{
    char dir_setting[PATH_MAX + 32], library[PATH_MAX + 32];
    snprintf(dir_setting, sizeof dir_setting, "NEO_CACHE_DIR=%s", dir);
    snprintf(library, sizeof library, "LD_LIBRARY_PATH=%s", in_scratch("igc"));
    environment env;
    env_build(&env, false, ENV(remote, dir_setting, library));
    env_apply(&env, "NEO_CACHE_PERSISTENT");
    snprintf(node->out, sizeof node->out, "%s/%s.out", sc.root, name);
    node->pid = fork();
    cr_assert_geq(node->pid, 0);
    if (node->pid == 0) {
        int fd = open(node->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        execve(ZC_TOOL_PATH, (char *const[]){(char *)ZC_TOOL_PATH, "prewarm", NULL}, env.entries);
        _exit(127);
    }
    env_free(&env);
}

/* The node's "N built, M already present" from its summary. */
static void finish_prewarm(const node_run *node, int *built, int *present)
{
    int status;
    cr_assert_eq(waitpid(node->pid, &status, 0), node->pid);
    t_read_text(node->out, run.out, sizeof run.out);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", run.out);
    const char *summary = strstr(run.out, "recorded modules: ");
    cr_assert_not_null(summary, "%s", run.out);
    cr_assert_eq(sscanf(summary, "recorded modules: %d built, %d already present", built, present),
                 2, "%s", run.out);
}

Test(prewarm_redis, two_nodes_prewarming_at_once_build_each_module_once)
{
    char remote_env[600];
    snprintf(remote_env, sizeof remote_env, "%s", remote);
    for (int i = 0; i < MODULE_COUNT; i++)
        run_module(i, true, ENV(remote_env), NULL);
    char command[3 * PATH_MAX];
    snprintf(command, sizeof command, "cp -a '%s' '%s'", sc.cache, in_scratch("node_b"));
    cr_assert_eq(system(command), 0);
    upgrade_compiler(in_scratch("igc"));

    node_run a, b;
    start_prewarm(&a, sc.cache, "node_a");
    start_prewarm(&b, in_scratch("node_b"), "node_b");
    int built_a, present_a, built_b, present_b;
    finish_prewarm(&a, &built_a, &present_a);
    static char out_a[sizeof run.out];
    memcpy(out_a, run.out, sizeof out_a);
    finish_prewarm(&b, &built_b, &present_b);
    cr_assert_eq(built_a + built_b, MODULE_COUNT,
                 "built %d + %d: a module was built twice or not at all\nnode A:\n%s\nnode B:\n%s",
                 built_a, built_b, out_a, run.out);
    cr_assert_eq(present_a + present_b, MODULE_COUNT);

    char node_c[PATH_MAX + 32], library[PATH_MAX + 64];
    snprintf(node_c, sizeof node_c, "NEO_CACHE_DIR=%s", in_scratch("node_c"));
    snprintf(library, sizeof library, "LD_LIBRARY_PATH=%s:%s", ZC_LAYER_DIR, in_scratch("igc"));
    for (int i = 0; i < MODULE_COUNT; i++) {
        run_module(i, true, ENV(remote_env, node_c, library), NULL);
        cr_assert_eq(count_of(run.err, MISS), 0, "node C compiled module %d:\n%s", i, run.err);
    }
}

/* ---- recorded inputs kept in Redis ---- */

/* The key names README documents. */
#define RECIPES "zecache:v1:recipe:*"
#define SPIRV "zecache:v1:spirv:*"
#define SIGNED_RECIPES "zecache:v1:s*:recipe:*"

/* How many keys of Redis match pattern. */
static size_t keys_matching(const char *pattern)
{
    redisReply *reply = t_redis_command(&server, 2, (const char *[]){"KEYS", pattern}, NULL);
    cr_assert_eq(reply->type, REDIS_REPLY_ARRAY);
    size_t count = reply->elements;
    freeReplyObject(reply);
    return count;
}

/* Node A's cold run of every module, storing into Redis (env adds to it). */
static void record_on_node_a(const char *const *env)
{
    for (int i = 0; i < MODULE_COUNT; i++) {
        run_module(i, true, env, NULL);
        cr_assert_eq(count_of(run.err, MISS), 1, "module %d: %s", i, run.err);
    }
}

/* Node B: an empty cache of its own, the upgraded compiler, the same Redis. */
static const char *node_b_dir(void)
{
    static char setting[PATH_MAX + 32];
    snprintf(setting, sizeof setting, "NEO_CACHE_DIR=%s", in_scratch("node_b"));
    return setting;
}

static const char *upgraded_library(bool with_layer)
{
    static char setting[2][2 * PATH_MAX + 32];
    snprintf(setting[with_layer], sizeof setting[with_layer], "LD_LIBRARY_PATH=%s%s%s",
             with_layer ? ZC_LAYER_DIR : "", with_layer ? ":" : "", in_scratch("igc"));
    return setting[with_layer];
}

/* After the compiler upgrade, node B (an empty directory of its own)
 * prewarms from the remote storage alone: every module built, then warm
 * and the driver's own binaries. */
static void prewarm_node_b_after_the_upgrade(void)
{
    upgrade_compiler(in_scratch("igc"));
    tool_run(ENV(remote, node_b_dir(), upgraded_library(false)), ARGS("prewarm", "-j", "2"));
    cr_assert_eq(run.exit_status, 0, "%s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "4 recorded modules: 4 built, 0 already present, 0 failed") != NULL,
              "%s", run.out);
    assert_every_module_warm_and_the_drivers(ENV(remote, node_b_dir(), upgraded_library(true)));
}

/* Node A records into Redis while it compiles (each SPIR-V once: modules 0
 * and 3 share theirs); after the upgrade node B, whose own directory is
 * empty, prewarms from the recipes it finds in Redis alone, and then
 * compiles nothing and gets the driver's own binaries. */
Test(prewarm_redis, a_fresh_node_prewarms_the_recipes_another_recorded_in_redis)
{
    record_on_node_a(ENV(remote));
    cr_assert_eq(keys_matching(RECIPES), MODULE_COUNT);
    cr_assert_eq(keys_matching(SPIRV), MODULE_COUNT - 1);
    prewarm_node_b_after_the_upgrade();
}

static void flip_last_byte_in_redis(const char *name)
{
    redisReply *value = t_redis_command(&server, 2, (const char *[]){"GET", name}, NULL);
    cr_assert(value->type == REDIS_REPLY_STRING && value->len > 0);
    value->str[value->len - 1] ^= 0x5a;
    const char *argv[] = {"SET", name, value->str};
    size_t lengths[] = {3, strlen(name), value->len};
    freeReplyObject(t_redis_command(&server, 3, argv, lengths));
    freeReplyObject(value);
}

/* With a secret: inputs are signed and kept in the secret's namespace; one
 * recipe altered in Redis is reported with the reason and not built, the
 * other modules are. */
Test(prewarm_redis, a_damaged_recipe_in_redis_is_reported_and_the_rest_built)
{
    const char *secret = in_scratch("secret");
    t_write_secret(secret, "a secret of sixteen bytes or more");
    char with_secret[PATH_MAX + 64];
    snprintf(with_secret, sizeof with_secret, "NEO_CACHE_REMOTE_SECRET_FILE=%s", secret);
    record_on_node_a(ENV(remote, with_secret));
    cr_assert_eq(keys_matching(RECIPES), 0, "outside the secret's namespace");
    redisReply *names = t_redis_command(&server, 2, (const char *[]){"KEYS", SIGNED_RECIPES}, NULL);
    cr_assert(names->type == REDIS_REPLY_ARRAY && names->elements == MODULE_COUNT);
    flip_last_byte_in_redis(names->element[0]->str);
    freeReplyObject(names);
    upgrade_compiler(in_scratch("igc"));
    tool_run(ENV(remote, with_secret, node_b_dir(), upgraded_library(false)), ARGS("prewarm"));
    cr_assert_eq(run.exit_status, 1, "%s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "3 recorded modules: 3 built, 0 already present, 1 failed") != NULL,
              "%s", run.out);
    cr_assert(strstr(run.out, "signed with another secret, or altered (damaged recorded inputs: "
                              "not built)") != NULL,
              "%s", run.out);
}

/* The values of Redis's keys matching pattern, and how many. */
static size_t values_matching(const char *pattern, char ***names, redisReply ***values)
{
    redisReply *keys = t_redis_command(&server, 2, (const char *[]){"KEYS", pattern}, NULL);
    cr_assert_eq(keys->type, REDIS_REPLY_ARRAY);
    size_t count = keys->elements;
    *names = calloc(count + 1, sizeof **names);
    *values = calloc(count + 1, sizeof **values);
    for (size_t i = 0; i < count; i++) {
        (*names)[i] = strdup(keys->element[i]->str);
        (*values)[i] = t_redis_command(&server, 2, (const char *[]){"GET", (*names)[i]}, NULL);
        cr_assert_eq((*values)[i]->type, REDIS_REPLY_STRING);
    }
    freeReplyObject(keys);
    return count;
}

static void delete_matching(const char *pattern)
{
    char **names;
    redisReply **values;
    size_t count = values_matching(pattern, &names, &values);
    for (size_t i = 0; i < count; i++) {
        freeReplyObject(t_redis_command(&server, 2, (const char *[]){"DEL", names[i]}, NULL));
        freeReplyObject(values[i]);
        free(names[i]);
    }
    free(names);
    free(values);
}

/* Entries: zecache:v1:<64 hex>, nothing after. */
#define ENTRIES "zecache:v1:????????????????????????????????????????????????????????????????"

/* Garbage planted under every recorded SPIR-V's name: a node that compiles
 * the modules again (their entries gone from Redis and its own cache empty)
 * records them again, which puts the right bytes back, and a fresh node's
 * prewarm then builds every module. */
Test(prewarm_redis, a_planted_spirv_value_is_replaced_when_recorded_again)
{
    record_on_node_a(ENV(remote));
    char **names;
    redisReply **good;
    size_t count = values_matching(SPIRV, &names, &good);
    cr_assert_eq(count, MODULE_COUNT - 1);
    for (size_t i = 0; i < count; i++)
        freeReplyObject(
            t_redis_command(&server, 3, (const char *[]){"SET", names[i], "planted"}, NULL));
    delete_matching(ENTRIES);
    char node_c[PATH_MAX + 32];
    snprintf(node_c, sizeof node_c, "NEO_CACHE_DIR=%s", in_scratch("node_c"));
    for (int i = 0; i < MODULE_COUNT; i++) {
        run_module(i, true, ENV(remote, node_c), NULL);
        cr_assert_eq(count_of(run.err, MISS), 1, "module %d: %s", i, run.err);
    }
    for (size_t i = 0; i < count; i++) {
        redisReply *now = t_redis_command(&server, 2, (const char *[]){"GET", names[i]}, NULL);
        cr_assert_eq(now->type, REDIS_REPLY_STRING);
        cr_assert_eq(now->len, good[i]->len, "%s not replaced", names[i]);
        cr_assert_arr_eq(now->str, good[i]->str, now->len);
        freeReplyObject(now);
        freeReplyObject(good[i]);
        free(names[i]);
    }
    free(names);
    free(good);
    upgrade_compiler(in_scratch("igc"));
    tool_run(ENV(remote, node_b_dir(), upgraded_library(false)), ARGS("prewarm", "-j", "2"));
    cr_assert_eq(run.exit_status, 0, "%s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "4 recorded modules: 4 built, 0 already present, 0 failed") != NULL,
              "%s", run.out);
}

/* zecache prewarm against resp_server in mode: it says it could not list
 * the recorded inputs and exits with failure. */
static void prewarm_against_hostile(const char *mode)
{
    char socket_path[PATH_MAX];
    snprintf(socket_path, sizeof socket_path, "%s/hostile.sock", sc.root);
    int out[2];
    cr_assert_eq(pipe(out), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(out[1], 1);
        close(out[0]);
        execl(ZC_RESP_SERVER_PATH, "resp_server", mode, "unix", socket_path, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    char ready[32] = "";
    cr_assert_gt(read(out[0], ready, sizeof ready - 1), 0);
    close(out[0]);
    char hostile[PATH_MAX + 64];
    snprintf(hostile, sizeof hostile, "NEO_CACHE_REMOTE=redis+unix://%s", socket_path);
    tool_run(ENV(hostile, node_b_dir()), ARGS("prewarm"));
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    cr_assert_eq(run.exit_status, 1, "%s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "remote: cannot list the recorded inputs in Redis") != NULL, "%s",
              run.out);
    cr_assert(strstr(run.out, "0 recorded modules: 0 built, 0 already present, 1 failed") != NULL,
              "%s", run.out);
}

/* A server whose SCAN always answers cursor 1 with 256 new names: prewarm
 * stops listing at the cursor's return, says it could not list, and exits
 * with failure within a bounded time and memory. */
Test(prewarm_redis, a_scan_cursor_that_never_ends_stops_prewarm)
{
    prewarm_against_hostile("scan-cycle");
}

/* A server whose SCAN rises for ever, 256 new names a batch, and answers
 * every GET with nil after 20 ms: the listing stops at the bound on keys
 * (2^20), and none of the keys a runaway listing named is read (2^20 GETs
 * would take six hours). */
Test(prewarm_redis, a_runaway_listing_reads_none_of_its_keys, .timeout = 60)
{
    prewarm_against_hostile("scan-rising-slow-nil");
}

/* ---- the same over HTTP: nginx with WebDAV and PROPFIND ---- */

static t_nginx nginx;

static void setup_http(void)
{
    scratch_create();
    t_nginx_start(&nginx);
    snprintf(remote, sizeof remote, "NEO_CACHE_REMOTE=http://127.0.0.1:%u/zc" T_NGINX_TIMEOUTS,
             nginx.port);
}

static void teardown_http(void)
{
    t_nginx_stop(&nginx);
    scratch_remove();
}

TestSuite(prewarm_http, .init = setup_http, .fini = teardown_http, .timeout = 600);

/* How many files the server holds in its directory below the storage. */
static int server_files_in(const char *below)
{
    char line[PATH_MAX], count[32];
    snprintf(line, sizeof line, "find %s/zc/%s -type f | wc -l", nginx.data, below);
    cr_assert_eq(t_run_capturing(line, count, sizeof count), 0);
    return atoi(count);
}

/* Node A records on the HTTP storage while it compiles (no cross-node lock
 * there: prewarm's single flight is per node); after the upgrade node B,
 * whose own directory is empty, lists the recipes with PROPFIND, builds
 * every module, then compiles nothing and gets the driver's binaries. */
Test(prewarm_http, a_fresh_node_prewarms_the_recipes_another_recorded_over_http)
{
    record_on_node_a(ENV(remote));
    cr_assert_eq(server_files_in("inputs/recipe"), MODULE_COUNT);
    cr_assert_eq(server_files_in("inputs/spirv"), MODULE_COUNT - 1);
    prewarm_node_b_after_the_upgrade();
}
