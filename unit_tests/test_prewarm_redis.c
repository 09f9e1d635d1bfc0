/* zecache prewarm on a cluster sharing Redis, on Intel's real driver: two
 * nodes that recorded the same modules prewarm at the same time after the
 * compiler upgrade; Redis's cross-node build lock has each module built
 * once in all (the other node takes it from Redis), and a third node with
 * an empty cache then compiles nothing. */
#include "prewarm_test_support.h"
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
    finish_prewarm(&b, &built_b, &present_b);
    cr_assert_eq(built_a + built_b, MODULE_COUNT, "built %d + %d: a module was built twice",
                 built_a, built_b);
    cr_assert_eq(present_a + present_b, MODULE_COUNT);

    char node_c[PATH_MAX + 32], library[PATH_MAX + 64];
    snprintf(node_c, sizeof node_c, "NEO_CACHE_DIR=%s", in_scratch("node_c"));
    snprintf(library, sizeof library, "LD_LIBRARY_PATH=%s:%s", ZC_LAYER_DIR, in_scratch("igc"));
    for (int i = 0; i < MODULE_COUNT; i++) {
        run_module(i, true, ENV(remote_env, node_c, library), NULL);
        cr_assert_eq(count_of(run.err, MISS), 0, "node C compiled module %d:\n%s", i, run.err);
    }
}
